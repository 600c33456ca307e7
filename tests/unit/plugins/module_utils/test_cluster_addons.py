# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Decisions of the cluster layer, on the real counters lists and dashboard the roles carry, the RuntimeClass
RKE2 adopts (tests/fixtures/k8s-api) and the CRDs in tests/fixtures/crds; the dcgm-exporter support data."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import hashlib
import json
import os
import re

import pytest
import yaml

from ansible_collections.baremetal.gpu.plugins.module_utils import cluster_addons, mig, support

HERE = os.path.dirname(__file__)
ROOT = os.path.join(HERE, '..', '..', '..', '..')
DCGM_FILES = os.path.join(ROOT, 'roles', 'dcgm_exporter', 'files')
DASHBOARD = os.path.join(ROOT, 'roles', 'kube_prometheus', 'files', support.DCGM_EXPORTER['dashboard']['file'])
RKE2_RC = os.path.join(ROOT, 'tests', 'fixtures', 'k8s-api', 'rke2-runtimeclass-nvidia.json')


def read(path):
    with open(path) as handle:
        return handle.read()


def test_counters_fields_of_the_carried_lists():
    geforce = cluster_addons.counters_fields(read(os.path.join(DCGM_FILES, 'geforce-counters.csv')))
    datacenter = cluster_addons.counters_fields(read(os.path.join(DCGM_FILES, 'dcp-metrics-included.csv')))
    assert 'DCGM_FI_DEV_GPU_TEMP' in geforce and 'DCGM_FI_DEV_GPU_TEMP' in datacenter
    assert not [f for f in geforce if f.startswith('DCGM_FI_PROF_')]
    assert [f for f in datacenter if f.startswith('DCGM_FI_PROF_')]
    # "DCGM_FI_DEV_DEC_UTIL ," (a space before the comma upstream) is read as the field name.
    assert 'DCGM_FI_DEV_DEC_UTIL' in geforce
    assert cluster_addons.counters_fields('# comment\n\n  A, gauge, x\nB,counter,y') == ['A', 'B']


ECC = [{'name': 'DCGM_FI_DEV_ECC_SBE_VOL_TOTAL', 'type': 'counter', 'help': 'single-bit'},
       {'name': 'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL', 'type': 'counter', 'help': 'double-bit'}]
HEALTH = {'geforce': [{'name': 'DCGM_FI_DEV_CLOCK_THROTTLE_REASONS', 'type': 'gauge', 'help': 'reasons'}],
          'datacenter': [{'name': 'DCGM_FI_DEV_CLOCK_THROTTLE_REASONS', 'type': 'gauge', 'help': 'reasons'},
                         {'name': 'DCGM_FI_DEV_ECC_DBE_AGG_TOTAL', 'type': 'counter', 'help': 'aggregate'},
                         {'name': 'DCGM_FI_DEV_XID_ERRORS', 'type': 'gauge', 'help': 'already in the list'}]}


def test_dcgm_counters_of_the_carried_lists():
    text = read(os.path.join(DCGM_FILES, 'dcp-metrics-included.csv'))
    got = cluster_addons.dcgm_counters('datacenter', text, ECC, HEALTH, [{'name': 'DCGM_FI_DEV_FAN_SPEED'}])
    # The active lines as the file has them, trimmed: no comment (the ECC lines are commented out upstream).
    assert got['base_lines'] == [line.strip() for line in text.splitlines()
                                 if line.strip() and not line.strip().startswith('#')]
    assert cluster_addons.counters_fields('\n'.join(got['base_lines'])) == cluster_addons.counters_fields(text)
    # ECC first, then health (the throttle reasons once, the aggregate ECC; the Xid field the list has is left
    # out), then the custom metric.
    assert [m['name'] for m in got['added']] == [
        'DCGM_FI_DEV_ECC_SBE_VOL_TOTAL', 'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL', 'DCGM_FI_DEV_CLOCK_THROTTLE_REASONS',
        'DCGM_FI_DEV_ECC_DBE_AGG_TOTAL', 'DCGM_FI_DEV_FAN_SPEED']


def test_dcgm_counters_switches_and_classes():
    geforce = read(os.path.join(DCGM_FILES, 'geforce-counters.csv'))
    # No ECC counters on GeForce (no ECC there), whatever ecc_enabled says.
    got = cluster_addons.dcgm_counters('geforce', geforce, ECC, HEALTH, None)
    assert [m['name'] for m in got['added']] == ['DCGM_FI_DEV_CLOCK_THROTTLE_REASONS']
    got = cluster_addons.dcgm_counters('datacenter', geforce, ECC, HEALTH, None, ecc_enabled=False,
                                       health_enabled=False)
    assert got['added'] == []
    # A custom metric the list already has, or given twice, is added once at most.
    got = cluster_addons.dcgm_counters('geforce', geforce, None, None,
                                       [{'name': 'DCGM_FI_DEV_GPU_TEMP'}, {'name': 'X'}, {'name': 'X', 'type': 'counter'}])
    assert got['added'] == [{'name': 'X'}]
    # An unknown class (auto found no product): nothing, not a guess.
    assert cluster_addons.dcgm_counters('', geforce, ECC, HEALTH, [{'name': 'X'}]) == {'base_lines': [], 'added': []}


@pytest.mark.parametrize('products,expected', [
    (['NVIDIA GeForce RTX 3090'], 'geforce'),
    (['NVIDIA A100-SXM4-80GB', 'Tesla T4'], 'datacenter'),
    (['NVIDIA RTX A5000'], 'geforce'),
    (['Graphics Device'], 'geforce'),
    (['NVIDIA H100 80GB HBM3', 'NVIDIA GeForce GTX 1070 Ti'], 'geforce'),
    ([], ''),
])
def test_gpu_class(products, expected):
    regex = r'(?i)(geforce|titan|quadro|\brtx\b|gtx|graphics[ -]device)'
    assert cluster_addons.gpu_class(products, regex) == expected


def test_gpu_node_products_from_registered_results_and_facts():
    hostvars = {
        'a': {'nvidia_smi': {'gpus': [{'name': 'NVIDIA A10G'}]}},
        'b': {'ansible_facts': {'nvidia_smi': {'gpus': [{'name': 'NVIDIA GeForce RTX 3090'}, {'name': 'NVIDIA A10G'}]}}},
        'c': {'nvidia_smi': {'status': 'no_gpu', 'gpus': []}},
    }
    assert cluster_addons.gpu_node_products(hostvars, ['a', 'b', 'c', 'missing']) == ['NVIDIA A10G', 'NVIDIA GeForce RTX 3090']
    assert cluster_addons.gpu_node_products(hostvars, []) == []


def test_device_list_strategy():
    hostvars = {'on': {'container_toolkit_cdi': {'enabled': True}}, 'off': {'container_toolkit_cdi': {'enabled': 'false'}},
                'unknown': {}}
    assert cluster_addons.device_list_strategy('auto', hostvars, ['on', 'unknown'])['strategies'] == ['cdi-cri']
    off = cluster_addons.device_list_strategy(['auto'], hostvars, ['on', 'off'])
    assert off['strategies'] == ['envvar'] and 'off' in off['reason']
    assert cluster_addons.device_list_strategy('envvar,volume-mounts')['strategies'] == ['envvar', 'volume-mounts']
    for bad in ('cdi-cri,cdi-annotations', ['auto', 'envvar'], 'cdi', ''):
        with pytest.raises(ValueError):
            cluster_addons.device_list_strategy(bad)


def test_device_list_strategy_follows_the_runtime_that_runs_the_gpu_pods():
    # rke2_nvidia_runtime_cdi: containerd.reads_cdi of RKE2's own containerd and the config it generated.
    reads = {'reads_cdi': True, 'version': '2.2.2', 'reason': 'containerd 2.2.2 reads CDI specs (on by default)'}
    no = {'reads_cdi': False, 'version': '1.7.27-k3s1',
          'reason': 'containerd 1.7.27-k3s1 reads CDI specs only with enable_cdi = true in its CRI plugin: not set'}
    unknown = {'reads_cdi': None, 'version': '', 'reason': 'unknown'}
    hostvars = {'new': {'rke2_nvidia_runtime_cdi': reads}, 'old': {'rke2_nvidia_runtime_cdi': no},
                'odd': {'rke2_nvidia_runtime_cdi': unknown}}
    assert cluster_addons.device_list_strategy('auto', hostvars, ['new', 'odd'])['strategies'] == ['cdi-cri']
    mixed = cluster_addons.device_list_strategy('auto', hostvars, ['new', 'old'])
    assert mixed['strategies'] == ['envvar']
    assert 'the container runtime reads no CDI specs on old (containerd 1.7.27-k3s1' in mixed['reason'], mixed
    # Asked for by name on such a node: refused, naming the node and why.
    with pytest.raises(ValueError) as info:
        cluster_addons.device_list_strategy('cdi-cri', hostvars, ['new', 'old'])
    assert 'old (containerd 1.7.27-k3s1' in str(info.value) and 'every GPU pod' in str(info.value)
    assert cluster_addons.device_list_strategy('cdi-cri', hostvars, ['new'])['strategies'] == ['cdi-cri']
    assert cluster_addons.device_list_strategy('envvar', hostvars, ['old'])['strategies'] == ['envvar']


def test_dcgm_dashboard_drops_what_cannot_show_data():
    dashboard = json.loads(read(DASHBOARD))
    geforce = cluster_addons.counters_fields(read(os.path.join(DCGM_FILES, 'geforce-counters.csv')))
    kept = cluster_addons.dcgm_dashboard(dashboard, geforce)
    assert [p['title'] for p in dashboard['panels'] if p not in kept['panels']] == ['Tensor Core Utilization']
    assert cluster_addons.dcgm_dashboard(dashboard, None, profiling=False)['panels'] == kept['panels']
    assert cluster_addons.dcgm_dashboard(dashboard)['panels'] == dashboard['panels']
    assert dashboard['panels'] and kept is not dashboard


def test_dashboard_carried_is_the_one_support_names():
    info = support.DCGM_EXPORTER['dashboard']
    assert hashlib.sha256(read(DASHBOARD).encode('utf-8')).hexdigest() == info['sha256']
    dashboard = json.loads(read(DASHBOARD))
    assert dashboard['gnetId'] == info['gnet_id']
    # The host variable and filters use the node label of the pinned exporter.
    label = support.DCGM_EXPORTER['node_label']
    assert [v['name'] for v in dashboard['templating']['list'] if v['type'] == 'query'][0] == label
    exprs = [t['expr'] for p in dashboard['panels'] for t in p.get('targets', [])]
    assert exprs and all('%s=~"$%s"' % (label, label) in e for e in exprs)


def test_alert_metrics_are_known_fields():
    known = set(l.strip() for l in read(os.path.join(DCGM_FILES, 'dcgm-field-names.txt')).splitlines() if l.strip()[:1] != '#')
    assert set(support.DCGM_EXPORTER['alert_metrics'].values()) <= known


# The one alert field in neither a captured /metrics file nor NVIDIA's counters list, and where it comes from.
ALERT_FIELDS_FROM_GO_DCGM = {
    # NVIDIA/go-dcgm pkg/dcgm/const_fields.go @ ec245c09fe3e (the go-dcgm of dcgm-exporter 4.5.3-4.8.2's go.mod):
    # "DCGM_FI_DEV_ROW_REMAP_PENDING": 396 in the name map the exporter looks every CSV name up in.
    'DCGM_FI_DEV_ROW_REMAP_PENDING': 396,
}


def captured_series():
    """Metric name -> label names of every DCGM series in the captured dcgm-exporter /metrics files."""
    out = {}
    folder = os.path.join(ROOT, 'tests', 'fixtures', 'dcgm-metrics')
    for name in sorted(os.listdir(folder)):
        if not name.endswith('.txt'):
            continue
        for line in read(os.path.join(folder, name)).splitlines():
            match = re.match(r'^(DCGM_[A-Z0-9_]+)\{([^}]*)\}', line)
            if match:
                out.setdefault(match.group(1), set()).update(re.findall(r'([A-Za-z_][A-Za-z0-9_]*)="', match.group(2)))
    return out


def test_alert_metrics_are_captured_or_in_nvidias_list():
    """Every field an alert reads is a series a real exporter emitted (with the node label and gpu/UUID), or a
    line (active or commented out) of NVIDIA's datacenter list carried verbatim, or named in go-dcgm's map."""
    captured = captured_series()
    upstream = set(re.findall(r'^#?\s*(DCGM_[A-Z0-9_]+)\s*,', read(os.path.join(DCGM_FILES, 'dcp-metrics-included.csv')),
                              re.M))
    node = support.DCGM_EXPORTER['node_label']
    for field in support.DCGM_EXPORTER['alert_metrics'].values():
        if field in captured:
            assert {node, 'gpu', 'UUID', 'modelName'} <= captured[field], field
        else:
            assert field in upstream or field in ALERT_FIELDS_FROM_GO_DCGM, field
    # The clock event reasons: the captured name (the legacy alias of DCGM_FI_DEV_CLOCKS_EVENT_REASONS).
    assert support.DCGM_EXPORTER['alert_metrics']['clock_events'] in captured
    assert 'DCGM_FI_DEV_ROW_REMAP_PENDING' not in upstream and 'DCGM_FI_DEV_ROW_REMAP_PENDING' not in captured


@pytest.mark.parametrize('values, expected', [
    ([79], 'X == 79'),
    ([48, 79, 94, 92, 93, 79], 'X == 48 or X == 79 or X >= 92 <= 94'),
    ([1, 2, 3, 5], 'X >= 1 <= 3 or X == 5'),
])
def test_promql_value_in(values, expected):
    assert cluster_addons.promql_value_in('X', values) == expected


@pytest.mark.parametrize('values', [[], None, ['a']])
def test_promql_value_in_refuses_what_could_never_match(values):
    with pytest.raises(ValueError):
        cluster_addons.promql_value_in('X', values)


def test_runtime_class_decision():
    rke2 = json.loads(read(RKE2_RC))
    assert cluster_addons.runtime_class_decision([], 'nvidia', 'nvidia')['action'] == 'create'
    leave = cluster_addons.runtime_class_decision([rke2], 'nvidia', 'nvidia')
    assert leave['action'] == 'leave' and leave['owner'] == 'Helm release kube-system/rke2-runtimeclasses'
    other = copy.deepcopy(rke2)
    other['handler'] = 'nvidia-experimental'
    refuse = cluster_addons.runtime_class_decision([other], 'nvidia', 'nvidia')
    assert refuse['action'] == 'refuse' and refuse['handler'] == 'nvidia-experimental'
    assert 'rke2-runtimeclasses' in refuse['message'] and 'baremetal_gpu_runtime_class_name' in refuse['message']
    ours = {'metadata': {'name': 'nvidia', 'labels': {'app.kubernetes.io/managed-by': 'baremetal.gpu'}}, 'handler': 'nvidia'}
    assert cluster_addons.runtime_class_decision([ours], 'nvidia', 'nvidia')['action'] == 'apply'
    bare = {'metadata': {'name': 'nvidia'}, 'handler': 'nvidia'}
    assert cluster_addons.runtime_class_decision([bare], 'nvidia', 'nvidia')['action'] == 'apply'
    gpu_operator = {'metadata': {'name': 'nvidia', 'labels': {'app.kubernetes.io/managed-by': 'gpu-operator'}}, 'handler': 'nvidia'}
    assert cluster_addons.runtime_class_decision([gpu_operator], 'nvidia', 'nvidia')['action'] == 'leave'
    bare_other = dict(bare, handler='runc')
    refused = cluster_addons.runtime_class_decision([bare_other], 'nvidia', 'nvidia')
    assert refused['action'] == 'refuse' and 'kubectl delete runtimeclass nvidia' in refused['message']


def test_crds_served_and_api_versions():
    names = ['servicemonitors.monitoring.coreos.com', 'nodefeatures.nfd.k8s-sigs.io']
    assert cluster_addons.crds_served(names, ['monitoring.coreos.com/v1']) == names[:1]
    assert cluster_addons.crds_served(names, ['monitoring.coreos.com/v1', 'nfd.k8s-sigs.io/v1alpha1/NodeFeature']) == names
    assert cluster_addons.crds_served(names, []) == []
    nfd_versions = [{'name': 'v1alpha1', 'served': True}, {'name': 'v1alpha0', 'served': False}]
    crds = [{'spec': {'group': 'monitoring.coreos.com', 'versions': [{'name': 'v1', 'served': True}]}},
            {'spec': {'group': 'nfd.k8s-sigs.io', 'versions': nfd_versions}}]
    assert cluster_addons.crd_api_versions(crds) == ['monitoring.coreos.com/v1', 'nfd.k8s-sigs.io/v1alpha1']


# kubernetes.core.helm_info's status: one entry of `helm list --output=yaml` with the release's user-supplied
# values (`helm get values --output=yaml`) added as "values". The same shape is read from the real helm binary
# against the API stand-in in tests/integration/test_release_ownership.py.
def _status(values):
    return {"name": "kube-prometheus-stack", "namespace": "monitoring", "revision": "3", "status": "deployed",
            "updated": "2026-11-20 10:01:02.123456789 +0000 UTC", "chart": "kube-prometheus-stack-88.5.3",
            "app_version": "v0.86.1", "values": values}


OURS = cluster_addons.release_marked({"grafana": {"enabled": True}})
THEIRS = {"grafana": {"enabled": True}, "prometheus": {"prometheusSpec": {"retention": "30d"}}}


def test_release_marked_sets_the_marker_over_anything_there():
    assert OURS == {"grafana": {"enabled": True}, "baremetalGpu": {"managedBy": "baremetal.gpu"}}
    assert cluster_addons.release_marked({"baremetalGpu": {"managedBy": "me"}})["baremetalGpu"] == {"managedBy": "baremetal.gpu"}
    assert cluster_addons.release_marked(None) == {"baremetalGpu": {"managedBy": "baremetal.gpu"}}
    with pytest.raises(ValueError):
        cluster_addons.release_marked(["a"])


@pytest.mark.parametrize("status, adopt, action", [
    ({}, False, "install"),
    (_status(OURS), False, "upgrade"),
    (_status(THEIRS), False, "refuse"),
    (_status(THEIRS), True, "adopt"),
    (_status(THEIRS), "true", "adopt"),
    (_status({}), False, "refuse"),          # a release installed with the chart's defaults only: `helm get values` is null
    (_status(None), False, "refuse"),
    (_status({"baremetalGpu": "yes"}), False, "refuse"),
    (_status({"baremetalGpu": {"managedBy": "someone-else"}}), False, "refuse"),
])
def test_release_ownership_install(status, adopt, action):
    out = cluster_addons.release_ownership(status, "kube-prometheus-stack", "monitoring", adopt, "kube_prometheus_adopt_release")
    assert out["action"] == action
    if action == "refuse":
        assert "kube_prometheus_adopt_release: true" in out["message"]
        assert "monitoring/kube-prometheus-stack (kube-prometheus-stack-88.5.3)" in out["message"]


@pytest.mark.parametrize("status, action", [({}, "absent"), (_status(OURS), "remove"), (_status(THEIRS), "leave"),
                                            (_status(None), "leave")])
def test_release_ownership_uninstall_removes_only_ours(status, action):
    # adopt does not matter to an uninstall: only a release that carries the marker is removed.
    for adopt in (False, True):
        out = cluster_addons.release_ownership(status, "kube-prometheus-stack", "monitoring", adopt, "x", "uninstall")
        assert out["action"] == action


def test_release_ownership_refuses_an_unknown_purpose():
    with pytest.raises(ValueError):
        cluster_addons.release_ownership({}, "a", "b", purpose="delete")


DAEMONSETS = os.path.join(ROOT, 'tests', 'fixtures', 'k8s-api', 'nvidia-device-plugin-0.20.0-daemonsets.json')


def test_external_nfd_on_the_real_charts_daemonsets():
    """device_plugin_nfd: auto (was a Jinja loop in roles/device_plugin/tasks/preflight.yml). The DaemonSets the real
    chart renders for two releases (SOURCE.md): our own release's NFD worker is not external; another release's is."""
    daemonsets = json.loads(read(DAEMONSETS))
    ours = [ds for ds in daemonsets if ds['metadata']['namespace'] == 'nvidia-device-plugin']
    assert cluster_addons.external_nfd(ours, 'nvidia-device-plugin', 'nvdp') == []
    assert cluster_addons.external_nfd(daemonsets, 'nvidia-device-plugin', 'nvdp') == [
        'kube-system/nvidia-device-plugin-node-feature-discovery-worker']
    # Our release name in another namespace is someone else's release.
    assert cluster_addons.external_nfd(ours, 'gpu-tools', 'nvdp') == [
        'nvidia-device-plugin/nvdp-node-feature-discovery-worker']
    # NFD deployed on its own, as the public guides show it (DaemonSet nfd-worker in namespace node-feature-discovery,
    # no app.kubernetes.io/name label), is found by its name; the label alone finds a renamed one.
    plain = {'metadata': {'name': 'nfd-worker', 'namespace': 'node-feature-discovery'}}
    renamed = {'metadata': {'name': 'features', 'namespace': 'ops',
                            'labels': {'app.kubernetes.io/name': 'node-feature-discovery'}}}
    assert cluster_addons.external_nfd([plain, renamed, None, {}], 'nvidia-device-plugin', 'nvdp') == [
        'node-feature-discovery/nfd-worker', 'ops/features']
    assert cluster_addons.external_nfd(None, 'nvidia-device-plugin', 'nvdp') == []


def test_paused_affinity_on_the_real_charts_daemonsets():
    """The default affinity of the nvidia-device-plugin chart (three alternative terms), as roles/device_plugin's vars
    carry it (tests/integration/test_charts.py checks that copy against the real charts): the pause expression joins
    each term, so no term admits a paused Node; the rest is kept."""
    pause = support.DEVICE_PLUGIN_PAUSE
    keep_off = {'key': pause['label'], 'operator': 'NotIn', 'values': [pause['value']]}
    with open(os.path.join(ROOT, 'roles', 'device_plugin', 'vars', 'main.yml')) as handle:
        chart = [yaml.safe_load(handle)['__device_plugin_chart_affinity']]
    for affinity in chart:
        before = copy.deepcopy(affinity)
        got = cluster_addons.paused_affinity(affinity, pause)
        assert affinity == before                       # the input is not changed
        terms = got['nodeAffinity']['requiredDuringSchedulingIgnoredDuringExecution']['nodeSelectorTerms']
        old = before['nodeAffinity']['requiredDuringSchedulingIgnoredDuringExecution']['nodeSelectorTerms']
        assert len(terms) == len(old) >= 2
        assert [t['matchExpressions'] for t in terms] == [t['matchExpressions'] + [keep_off] for t in old]
        # Twice is the same as once.
        assert cluster_addons.paused_affinity(got, pause) == got
    # No required node affinity (a podAntiAffinity only): one term of the expression alone; the rest kept.
    anti = {'podAntiAffinity': {'preferredDuringSchedulingIgnoredDuringExecution': []}}
    got = cluster_addons.paused_affinity(anti, pause)
    assert got['podAntiAffinity'] == anti['podAntiAffinity']
    assert got['nodeAffinity']['requiredDuringSchedulingIgnoredDuringExecution'] == {
        'nodeSelectorTerms': [{'matchExpressions': [keep_off]}]}
    assert cluster_addons.paused_affinity({}, pause) == {'nodeAffinity': {
        'requiredDuringSchedulingIgnoredDuringExecution': {'nodeSelectorTerms': [{'matchExpressions': [keep_off]}]}}}
    with pytest.raises(TypeError):
        cluster_addons.paused_affinity('In', pause)


def _observed(capture, node):
    """verify_observed as roles/verify/tasks/nvidia_smi.yml records it, from a real nvidia-smi capture."""
    from ansible_collections.baremetal.gpu.plugins.module_utils import nvidia_smi
    with open(os.path.join(ROOT, 'tests', 'fixtures', 'nvidia-smi-xml', capture), 'rb') as handle:
        facts = nvidia_smi.parse_nvidia_smi_xml(handle.read())
    return {'node_name': node, 'status': 'ok', 'gpu_count': facts['gpu_count'], 'summary': 'summary of ' + node,
            'device_plugin_gpus': nvidia_smi.device_plugin_gpus(facts['gpus']),
            'gpu_device_ids': [g['pci_device_id'] for g in facts['gpus']],
            'mig_devices_per_gpu': [g['mig_devices'] for g in facts['gpus']]}


def test_verify_expected_capacity_from_real_captures():
    """verify's expected capacity (was a 30-line Jinja program in roles/verify/tasks/expected.yml)."""
    hostvars = {'a100': {'verify_observed': _observed('telegraf__a100-sxm4-v12.xml', 'node-a100')},
                'h100': {'verify_observed': _observed('device__h100-80gb-hbm3__580.159.04.xml', 'node-h100')},
                'quiet': {'verify_observed': dict(_observed('telegraf__tesla-t4.xml', 'node-t4'), status='no_devices')},
                'unread': {'baremetal_gpu_node_name': 'node-x'}}
    hosts = ['a100', 'h100', 'quiet', 'unread', 'not-in-hostvars']
    single = cluster_addons.expected_capacity(hostvars, hosts, 'single', '2')
    assert [(r['node'], r['check'], r['refused'], r['expected'], r['gfd_count']) for r in single] == [
        ('node-a100', True, False, 8, 4),   # the A100 capture: MIG on, four MIG devices, x 2 replicas
        ('node-h100', True, False, 2, 1),
        ('node-t4', False, False, None, None),
        ('node-x', False, False, None, None),
        ('not-in-hostvars', False, False, None, None)]
    assert single[2]['reason'] == ('it shows no GPU through nvidia-smi (summary of node-t4), so no nvidia.com/gpu '
                                   'is expected of it')
    assert single[3]['reason'] == 'nvidia-smi was not read there (the node checks did not run on it)'
    mixed = cluster_addons.expected_capacity(hostvars, ['a100', 'h100'], 'mixed', 1)
    assert mixed[0]['check'] is False and mixed[0]['reason'].startswith('every GPU has MIG on;')
    assert (mixed[1]['expected'], mixed[1]['gfd_count']) == (1, None)
    none = cluster_addons.expected_capacity(hostvars, ['a100'], 'none', 1)
    assert (none[0]['units'], none[0]['expected']) == (1, 1)
    # A node the device plugin refuses (MIG on without MIG devices: units None for single).
    odd = {'n': {'verify_observed': {'node_name': 'n', 'status': 'ok', 'gpu_count': 2, 'summary': 's',
                                     'device_plugin_gpus': {'none': 2, 'single': None, 'mixed': 1}}}}
    refused = cluster_addons.expected_capacity(odd, ['n'], 'single', 1)[0]
    assert refused['refused'] and 'verify_mig_strategy=single (s)' in refused['reason']


# ---- sharing per node pool -------------------------------------------------------------------------------------

POOLS = {'whole': {'sharing': 'none'}, 'ts4': {'sharing': 'time-slicing', 'replicas': 4},
         'mps2': {'sharing': 'mps', 'replicas': '2'}}


def test_sharing_plan_of_three_pools():
    hostvars = {'train-1': {}, 'infer-1': {'baremetal_gpu_sharing_profile': 'mps2'},
                'dev-1': {'baremetal_gpu_sharing_profile': 'ts4'}}
    plan = cluster_addons.sharing_plan(POOLS, '', 'none', True, hostvars, ['train-1', 'infer-1', 'dev-1'])
    assert plan['errors'] == [] and plan['default'] == 'whole' and plan['mps'] is True
    assert plan['labels'] == {'infer-1': 'mps2', 'dev-1': 'ts4'}
    assert plan['configs']['whole'] == {'version': 'v1', 'flags': {'migStrategy': 'none'}}
    assert plan['configs']['ts4']['sharing'] == {'timeSlicing': {
        'renameByDefault': False, 'failRequestsGreaterThanOne': False,
        'resources': [{'name': 'nvidia.com/gpu', 'replicas': 4}]}}
    assert plan['configs']['mps2']['sharing'] == {'mps': {
        'renameByDefault': False, 'resources': [{'name': 'nvidia.com/gpu', 'replicas': 2}]}}
    # No pool uses MPS: the MPS pieces stay off.
    assert cluster_addons.sharing_plan(POOLS, 'ts4', 'none', True, {'a': {}}, ['a'])['mps'] is False


def test_sharing_plan_refusals_name_the_variable():
    def errors(profiles, default='', mig='none', gfd=True, hostvars=None, ts=False):
        return cluster_addons.sharing_plan(profiles, default, mig, gfd, hostvars or {}, list(hostvars or {}),
                                           time_slicing_enabled=ts)['errors']
    assert 'device_plugin_sharing_profiles.m.replicas must be a number, 2 or more, for mps, got 1' in errors(
        {'m': {'sharing': 'mps', 'replicas': 1}})
    assert 'MPS does not work on MIG devices' in errors({'m': {'sharing': 'mps', 'replicas': 2}}, mig='single')[0]
    assert 'MPS needs GPU Feature Discovery' in errors({'m': {'sharing': 'mps', 'replicas': 2}}, gfd=False)[0]
    assert 'with device_plugin_mig_strategy=mixed' in errors({'t': {'sharing': 'time-slicing', 'replicas': 2}},
                                                             mig='mixed')[0]
    assert errors({'x': {'sharing': 'shared'}})[0].startswith('device_plugin_sharing_profiles.x.sharing must be one of')
    assert 'unknown setting replica' in errors({'t': {'sharing': 'time-slicing', 'replica': 2, 'replicas': 2}})[0]
    assert 'label value' in errors({'Bad Name': {'sharing': 'none'}})[0]
    assert errors(POOLS, default='gold')[0].startswith('device_plugin_sharing_default_profile is gold')
    unknown = errors(POOLS, hostvars={'n1': {'baremetal_gpu_sharing_profile': 'ts8'}})
    assert unknown == ['baremetal_gpu_sharing_profile of n1 is ts8, which device_plugin_sharing_profiles does not '
                       'define (defined: mps2, ts4, whole)']
    assert 'cannot be combined' in errors(POOLS, ts=True)[0]
    assert 'defines none' in cluster_addons.sharing_plan({}, '', 'none', True, {'n1': {
        'baremetal_gpu_sharing_profile': 'ts4'}}, ['n1'])['errors'][0]
    assert 'is not whole GPUs' in errors({'whole': {'sharing': 'time-slicing', 'replicas': 2}})[0]
    # No profiles and nothing named: nothing to do (the cluster-wide time-slicing still applies).
    assert cluster_addons.sharing_plan({}, '', 'none', True, {}, []) == {
        'configs': {}, 'default': '', 'labels': {}, 'mps': False, 'errors': []}


def _node(name, labels=None, annotations=None, hostname=None):
    labels = dict(labels or {})
    labels['kubernetes.io/hostname'] = hostname or name
    return {'metadata': {'name': name, 'labels': labels, 'annotations': dict(annotations or {})}}


def test_sharing_label_changes_touch_only_our_hosts_and_our_labels():
    mark = {cluster_addons.SHARING_MARK: 'true'}
    label = cluster_addons.SHARING_LABEL
    nodes = [_node('gpu-a'), _node('k8s-b', hostname='gpu-b'), _node('gpu-c', {label: 'ts4'}, mark),
             _node('gpu-d', {label: 'mps2'}), _node('gpu-e', {label: 'ts4'}), _node('cpu-1', {label: 'ts4'}, mark)]
    hostvars = {'gpu-a': {}, 'gpu-b': {}, 'gpu-c': {}, 'gpu-d': {}, 'gpu-e': {}, 'gpu-x': {}}
    labels = {'gpu-a': 'ts4', 'gpu-b': 'mps2', 'gpu-d': 'mps2', 'gpu-e': 'ts4', 'gpu-x': 'ts4'}
    out = cluster_addons.sharing_label_changes(nodes, labels, hostvars, sorted(hostvars))
    assert out['patches'] == [
        {'node': 'gpu-a', 'host': 'gpu-a', 'labels': {label: 'ts4'}, 'annotations': mark},
        # mapped through its kubernetes.io/hostname label
        {'node': 'k8s-b', 'host': 'gpu-b', 'labels': {label: 'mps2'}, 'annotations': mark},
        # ours, no longer in the inventory: removed with our mark
        {'node': 'gpu-c', 'host': 'gpu-c', 'labels': {label: None}, 'annotations': {cluster_addons.SHARING_MARK: None}}]
    # gpu-d and gpu-e already carry what the inventory asks, set by someone else: left alone, not adopted; cpu-1 is no
    # GPU host of ours; gpu-x has no Node.
    assert out['errors'] == [] and out['unmapped'] == ['gpu-x']
    # Someone else's label with another value: refused, naming the Node and what to do.
    refused = cluster_addons.sharing_label_changes([_node('gpu-d', {label: 'mps2'})], {'gpu-d': 'ts4'}, {}, ['gpu-d'])
    assert refused['patches'] == [] and refused['errors'][0].startswith(
        'Node gpu-d (host gpu-d) has nvidia.com/device-plugin.config=mps2, set by someone else')


def test_sharing_label_removals_take_off_only_what_carries_our_mark():
    mark = {cluster_addons.SHARING_MARK: 'true'}
    label = cluster_addons.SHARING_LABEL
    nodes = [_node('gpu-c', {label: 'ts4'}, mark), _node('gpu-d', {label: 'mps2'}), _node('cpu-1', {label: 'ts4'}, mark),
             _node('gpu-a')]
    assert cluster_addons.sharing_label_removals(nodes) == [
        {'node': 'gpu-c', 'host': None, 'labels': {label: None}, 'annotations': {cluster_addons.SHARING_MARK: None}},
        {'node': 'cpu-1', 'host': None, 'labels': {label: None}, 'annotations': {cluster_addons.SHARING_MARK: None}}]
    assert cluster_addons.sharing_label_removals([]) == [] and cluster_addons.sharing_label_removals(None) == []


def test_expected_capacity_per_pool():
    seen = {'status': 'ok', 'gpu_count': 2, 'node_name': None, 'summary': '2 GPUs',
            'device_plugin_gpus': {'none': 2, 'single': 2, 'mixed': 2}}
    hostvars = dict((h, {'verify_observed': dict(seen, node_name=h)}) for h in ('train-1', 'infer-1', 'dev-1'))
    hostvars['dev-1']['baremetal_gpu_sharing_profile'] = 'ts4'
    hostvars['infer-1']['baremetal_gpu_sharing_profile'] = 'mps2'
    pools = dict(POOLS, ts4={'sharing': 'time-slicing', 'replicas': 4, 'rename_by_default': True})
    hosts = ['train-1', 'infer-1', 'dev-1']
    plan = cluster_addons.sharing_plan(pools, '', 'none', True, hostvars, hosts)
    rows = dict((r['host'], r) for r in cluster_addons.expected_capacity(
        hostvars, hosts, 'none', 1, 'nvidia.com/gpu', cluster_addons.sharing_capacity(plan, hosts)))
    assert (rows['train-1']['expected'], rows['train-1']['resource']) == (2, 'nvidia.com/gpu')
    assert (rows['infer-1']['expected'], rows['infer-1']['resource']) == (4, 'nvidia.com/gpu')
    assert (rows['dev-1']['expected'], rows['dev-1']['resource']) == (8, 'nvidia.com/gpu.shared')
    # Without profiles the cluster-wide replicas and resource apply, as before.
    flat = cluster_addons.expected_capacity(hostvars, hosts, 'none', 3, 'nvidia.com/gpu', cluster_addons.sharing_capacity(
        cluster_addons.sharing_plan({}, '', 'none', True, {}, []), hosts))
    assert [r['expected'] for r in flat] == [6, 6, 6]


# The site's layouts as an inventory gives them (mig-parted's mig-configs): one of one profile, one of two.
LAYOUTS = {'all-1g.10gb': [{'devices': 'all', 'mig-enabled': True, 'mig-devices': {'1g.10gb': 7}}],
           'all-balanced': [{'devices': 'all', 'mig-enabled': True,
                             'mig-devices': {'1g.10gb': 2, '2g.20gb': 1, '3g.40gb': 1}}]}


def test_sharing_plan_with_a_mig_pool():
    pools = dict(POOLS, mig7={'sharing': 'mig', 'mig_layout': 'all-1g.10gb'},
                 migmix={'sharing': 'mig', 'mig_layout': 'all-balanced', 'mig_strategy': 'mixed'})
    hostvars = {'train-1': {}, 'infer-1': {'baremetal_gpu_sharing_profile': 'mig7'},
                'infer-2': {'baremetal_gpu_sharing_profile': 'migmix'}}
    plan = cluster_addons.sharing_plan(pools, '', 'none', True, hostvars, sorted(hostvars), mig_layouts=LAYOUTS)
    assert plan['errors'] == []
    # Each MIG pool's config carries its own strategy; the others keep the cluster's.
    assert plan['configs']['mig7'] == {'version': 'v1', 'flags': {'migStrategy': 'single'}}
    assert plan['configs']['migmix'] == {'version': 'v1', 'flags': {'migStrategy': 'mixed'}}
    assert plan['configs']['whole'] == {'version': 'v1', 'flags': {'migStrategy': 'none'}}
    assert plan['mig_layouts'] == {'mig7': 'all-1g.10gb', 'migmix': 'all-balanced'}
    capacity = cluster_addons.sharing_capacity(plan, sorted(hostvars))
    assert dict((k, v) for k, v in capacity['infer-1'].items() if k != 'layouts') == {
        'replicas': 1, 'profile': 'mig7', 'resource': 'nvidia.com/gpu', 'mig_strategy': 'single',
        'mig_layout': 'all-1g.10gb'}
    assert capacity['infer-1']['layouts']['all-1g.10gb'] == LAYOUTS['all-1g.10gb']
    assert 'mig_strategy' not in capacity['train-1']
    # verify, from facts without the GPUs' device IDs (no layout to expand): the single pool's MIG devices as
    # nvidia-smi counts them are its nvidia.com/gpu; the mixed pool's nvidia.com/mig-<profile> are not checked.
    seen = {'status': 'ok', 'gpu_count': 1, 'summary': '1 GPU, MIG on',
            'device_plugin_gpus': {'none': 1, 'single': 7, 'mixed': 0}}
    for host in hostvars:
        hostvars[host]['verify_observed'] = dict(seen, node_name=host)
    rows = cluster_addons.expected_capacity(hostvars, sorted(hostvars), 'none', 1, 'nvidia.com/gpu', capacity)
    rows = dict((r['host'], r) for r in rows)
    assert (rows['infer-1']['expected'], rows['infer-1']['gfd_count']) == (7, 7)
    assert rows['infer-2']['check'] is False and 'verify_mig_strategy=mixed' in rows['infer-2']['reason']
    assert rows['train-1']['expected'] == 1


def test_mig_pool_refusals_name_the_variable():
    def errors(profile, layouts=None, mig='none'):
        return cluster_addons.sharing_plan({'p': profile}, 'p' if profile.get('sharing') == 'none' else '', mig, True,
                                           {}, [], mig_layouts=LAYOUTS if layouts is None else layouts)['errors']
    assert errors({'sharing': 'mig'}) == [
        'device_plugin_sharing_profiles.p.mig_layout must name a layout of baremetal_gpu_mig_layouts for sharing mig']
    assert errors({'sharing': 'mig', 'mig_layout': 'all-2g'}) == [
        'device_plugin_sharing_profiles.p.mig_layout is all-2g, which baremetal_gpu_mig_layouts does not define '
        '(defined: all-1g.10gb, all-balanced, all-disabled)']
    # One profile per node under single: a layout of three is refused (mixed takes it).
    assert 'layout all-balanced creates several MIG profiles (1g.10gb, 2g.20gb, 3g.40gb), which mig_strategy single' \
        in errors({'sharing': 'mig', 'mig_layout': 'all-balanced'})[0]
    assert errors({'sharing': 'mig', 'mig_layout': 'all-1g.10gb', 'mig_strategy': 'mixed'}) == []
    assert errors({'sharing': 'mig', 'mig_layout': 'all-1g.10gb', 'mig_strategy': 'none'}) == [
        'device_plugin_sharing_profiles.p.mig_strategy must be one of single, mixed, got none']
    assert 'no replicas with sharing mig' in errors({'sharing': 'mig', 'mig_layout': 'all-1g.10gb', 'replicas': 2})[0]
    assert errors({'sharing': 'none', 'mig_layout': 'all-1g.10gb'}) == [
        'device_plugin_sharing_profiles.p: mig_layout are settings of a MIG profile (sharing mig), not of sharing none']
    # The layouts themselves are read as mig-parted reads them, naming the variable.
    bad = {'half': [{'devices': 'all', 'mig-enabled': True}]}
    assert errors({'sharing': 'mig', 'mig_layout': 'half'}, layouts=bad)[0] == (
        'baremetal_gpu_mig_layouts: mig-configs.half[0]: mig-devices is required when mig-enabled is true '
        '({} for none)')
    assert errors({'sharing': 'mig', 'mig_layout': 'x'}, layouts='all-1g.10gb')[0].startswith(
        'baremetal_gpu_mig_layouts must be a dict')


def test_a_mig_pool_is_expected_what_its_layout_makes_on_real_captures():
    """telegraf's A100-SXM4-80GB capture has MIG on with four 1g.20gb instances (14 SMs, 19968 MiB each); the H100
    the device machine showed has MIG off."""
    layouts = {'all-1g.20gb': [{'devices': 'all', 'mig-enabled': True, 'mig-devices': {'1g.20gb': 4}}],
               'all-1g.10gb': [{'devices': 'all', 'mig-enabled': True, 'mig-devices': {'1g.10gb': 7}}],
               'h100-only': [{'devices': 'all', 'device-filter': '0x233010DE', 'mig-enabled': True,
                              'mig-devices': {'1g.10gb': 7}}]}
    pools = {'a100': {'sharing': 'mig', 'mig_layout': 'all-1g.20gb'},
             'a100-mixed': {'sharing': 'mig', 'mig_layout': 'all-1g.20gb', 'mig_strategy': 'mixed'},
             'seven': {'sharing': 'mig', 'mig_layout': 'all-1g.10gb'},
             'h100-only': {'sharing': 'mig', 'mig_layout': 'h100-only'}}
    a100 = _observed('telegraf__a100-sxm4-v12.xml', 'a100')
    h100 = _observed('device__h100-80gb-hbm3__580.159.04.xml', 'h100')
    assert a100['gpu_device_ids'] == ['20B210DE'] and a100['mig_devices_per_gpu'] == [4]

    def rows(profile, seen):
        hostvars = {'n': {'baremetal_gpu_sharing_profile': profile, 'verify_observed': seen}}
        plan = cluster_addons.sharing_plan(pools, '', 'none', True, hostvars, ['n'], mig_layouts=layouts)
        assert plan['errors'] == []
        return cluster_addons.expected_capacity(hostvars, ['n'], 'none', 1, 'nvidia.com/gpu',
                                                cluster_addons.sharing_capacity(plan, ['n']))
    single, = rows('a100', a100)
    assert (single['check'], single['resource'], single['expected'], single['gfd_count']) == (True, 'nvidia.com/gpu', 4, 4)
    assert single['mig_mismatch'] == '' and single['mig_strategy'] == 'single'
    mixed, = rows('a100-mixed', a100)
    assert (mixed['resource'], mixed['expected'], mixed['gfd_count']) == ('nvidia.com/mig-1g.20gb', 4, None)
    # The layout is what is expected, whatever the GPU has: seven instances asked, four there.
    wrong, = rows('seven', a100)
    assert wrong['expected'] == 7 and wrong['mig_mismatch'] == 'GPU 0: 4 instance(s), layout all-1g.10gb has 7'
    off, = rows('seven', h100)
    assert off['mig_mismatch'] == 'GPU 0: 0 instance(s), layout all-1g.10gb has 7'
    # An entry filtered to H100s selects nothing on the A100: mig-parted refuses the node.
    refused, = rows('h100-only', a100)
    assert refused['refused'] and refused['reason'] == (
        'MIG layout h100-only selects no entry for GPU 0 (mig-parted refuses such a node)')


def test_expected_mig_instances_follow_mig_parteds_walk():
    layouts = {'split': [{'devices': 'all', 'mig-enabled': False},
                         {'devices': [1], 'mig-enabled': True, 'mig-devices': {'3g.40gb': 2}},
                         {'devices': [2, 3], 'device-filter': ['0x233010DE'], 'mig-enabled': True,
                          'mig-devices': {'1g.10gb': 7}}]}
    got = mig.expected_instances(layouts, 'split', ['233010DE', '0x233010DE', '10de:2330', '0x2330'])
    # A later entry wins for the GPUs it selects, as in mig-parted.
    assert [(g['index'], g['mig_enabled'], g['devices']) for g in got['gpus']] == [
        (0, False, {}), (1, True, {'3g.40gb': 2}), (2, True, {'1g.10gb': 7}), (3, True, {'1g.10gb': 7})]
    assert (got['profiles'], got['mig_gpus'], got['whole_gpus'], got['instances'], got['unmatched']) == (
        {'3g.40gb': 2, '1g.10gb': 14}, 3, 1, 16, [])
    assert mig.expected_instances(layouts, 'nope', ['233010DE'])['unmatched'] == [0]
