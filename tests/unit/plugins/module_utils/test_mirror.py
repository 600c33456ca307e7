# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugins/module_utils/mirror.py: images from the site's registry. What the real charts render with these values is
tested in tests/integration/test_charts.py (every string of every object, no public registry left). The host packages
per operating system from what five real test nodes answered (tests/fixtures/apt/mirror-list-host-entries.json)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest

from ansible_collections.baremetal.gpu.plugins.module_utils import mirror


@pytest.mark.parametrize('ref,registry,path', [
    ('nvcr.io/nvidia/k8s-device-plugin:v0.20.0', 'nvcr.io', 'nvidia/k8s-device-plugin:v0.20.0'),
    ('busybox:1.36', 'docker.io', 'library/busybox:1.36'),
    ('grafana/grafana:13.2.0', 'docker.io', 'grafana/grafana:13.2.0'),
    ('registry.site:5000/gpu/x@sha256:ab', 'registry.site:5000', 'gpu/x@sha256:ab'),
    ('localhost/x:1', 'localhost', 'x:1'),
])
def test_split_image(ref, registry, path):
    assert mirror.split_image(ref) == (registry, path)


@pytest.mark.parametrize('ref,registry,moved', [
    ('nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0', 'registry.site:5000/mirror',
     'registry.site:5000/mirror/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0'),
    ('busybox', 'registry.site', 'registry.site/library/busybox'),
    ('quay.io/prometheus/prometheus:v3', 'registry.site', 'registry.site/prometheus/prometheus:v3'),
    # The site's own image and no registry at all: unchanged.
    ('harbor.site/gpu/vectoradd:1', 'registry.site', 'harbor.site/gpu/vectoradd:1'),
    ('nvcr.io/nvidia/x:1', '', 'nvcr.io/nvidia/x:1'),
])
def test_mirror_image(ref, registry, moved):
    assert mirror.mirror_image(ref, registry) == moved


def test_mirror_values_per_chart():
    assert mirror.mirror_values('nvidia-device-plugin', 'registry.site', 'site-pull') == {
        'image': {'repository': 'registry.site/nvidia/k8s-device-plugin'},
        'imagePullSecrets': [{'name': 'site-pull'}],
        'nfd': {'image': {'repository': 'registry.site/nfd/node-feature-discovery'},
                'imagePullSecrets': [{'name': 'site-pull'}]}}
    assert mirror.mirror_values('kube-prometheus-stack', 'registry.site:5000', []) == {
        'global': {'imageRegistry': 'registry.site:5000'}}
    assert mirror.mirror_values('dcgm-exporter', '', None) == {}
    with pytest.raises(ValueError, match='no image table for chart other'):
        mirror.mirror_values('other', 'registry.site')


@pytest.mark.parametrize('registry,secrets,errors', [
    ('', [], []),
    ('registry.site', ['site-pull'], []),
    ('10.0.0.5:5000/mirror/gpu', 'a,b', []),
    ('https://registry.site', [], ['cluster_addons_image_registry must be a registry host']),
    ('registry.site/', [], ['cluster_addons_image_registry must be a registry host']),
    ('registry.site/mirror:v1', [], ['cluster_addons_image_registry must be a registry host']),
    (['registry.site'], [], ['cluster_addons_image_registry must be a registry such as']),
    ('registry.site', ['Site_Pull'], ['cluster_addons_image_pull_secrets must hold Secret names']),
    ('registry.site', {'name': 'x'}, ['cluster_addons_image_pull_secrets must be a list of Secret names']),
])
def test_registry_errors(registry, secrets, errors):
    found = mirror.registry_errors(registry, secrets)
    assert len(found) == len(errors), found
    for message, start in zip(found, errors):
        assert message.startswith(start), message


def test_secret_names_from_e_strings():
    assert mirror.secret_names('a, b,,c') == ['a', 'b', 'c']
    assert mirror.secret_names(['a']) == ['a']


# The operator's Deployment as kube-prometheus-stack 88.5.3 renders it (abridged to the fields read here).
OPERATOR = {'kind': 'Deployment', 'metadata': {'name': 'op'}, 'spec': {'template': {'spec': {'containers': [{
    'name': 'kube-prometheus-stack', 'image': 'quay.io/prometheus-operator/prometheus-operator:v0.93.1',
    'args': ['--kubelet-service=kube-system/kube-prometheus-stack-kubelet', '--localhost=127.0.0.1',
             '--prometheus-config-reloader=quay.io/prometheus-operator/prometheus-config-reloader:v0.93.1',
             '--config-reloader-cpu-request=0',
             '--thanos-default-base-image=quay.io/thanos/thanos:v0.42.4',
             '--web.listen-address=:10250']}]}}}}
PROMETHEUS = {'kind': 'Prometheus', 'metadata': {'name': 'p'}, 'spec': {'image': 'quay.io/prometheus/prometheus:v3.14.0'}}


def test_rendered_images_reads_image_fields_and_image_arguments():
    assert mirror.rendered_images([OPERATOR, PROMETHEUS]) == [
        'quay.io/prometheus-operator/prometheus-config-reloader:v0.93.1',
        'quay.io/prometheus-operator/prometheus-operator:v0.93.1',
        'quay.io/prometheus/prometheus:v3.14.0',
        'quay.io/thanos/thanos:v0.42.4']


def test_mirror_list_and_its_text():
    data = mirror.mirror_list(
        [{'chart': 'kube-prometheus-stack', 'version': '88.5.3', 'chart_ref': '/charts/kube-prometheus-stack-88.5.3.tgz',
          'repository': 'https://prometheus-community.github.io/helm-charts', 'objects': [PROMETHEUS]},
         {'chart': 'nvidia-device-plugin', 'version': '0.20.0', 'chart_ref': 'oci://harbor.site/charts/nvidia-device-plugin',
          'repository': 'oci://harbor.site/charts', 'objects': [{'kind': 'Pod', 'spec': {'image': 'quay.io/prometheus/prometheus:v3.14.0'}}]}],
        ['nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0', ''], 'registry.site')
    assert data['charts'] == [
        {'chart': 'kube-prometheus-stack', 'version': '88.5.3', 'from': 'https://prometheus-community.github.io/helm-charts'},
        {'chart': 'nvidia-device-plugin', 'version': '0.20.0', 'from': 'oci://harbor.site/charts/nvidia-device-plugin'}]
    assert data['images'] == [
        {'image': 'nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0', 'source': 'nvcr.io',
         'path': 'nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0',
         'mirror': 'registry.site/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0', 'used_by': ['verify']},
        {'image': 'quay.io/prometheus/prometheus:v3.14.0', 'source': 'quay.io', 'path': 'prometheus/prometheus:v3.14.0',
         'mirror': 'registry.site/prometheus/prometheus:v3.14.0',
         'used_by': ['kube-prometheus-stack', 'nvidia-device-plugin']}]
    assert mirror.mirror_list_text(data).splitlines() == [
        '# images (2)',
        'nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0 registry.site/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0',
        'quay.io/prometheus/prometheus:v3.14.0 registry.site/prometheus/prometheus:v3.14.0',
        '# charts (2)',
        'kube-prometheus-stack 88.5.3 https://prometheus-community.github.io/helm-charts',
        'nvidia-device-plugin 0.20.0 oci://harbor.site/charts/nvidia-device-plugin']


SITE_MAP = {'nvcr.io': 'registry.site/nvcr', 'registry-1.docker.io': 'hub-mirror.site'}


@pytest.mark.parametrize('ref,registry,moved', [
    ('nvcr.io/nvidia/k8s-device-plugin:v0.20.0', '', 'registry.site/nvcr/nvidia/k8s-device-plugin:v0.20.0'),
    ('busybox', '', 'hub-mirror.site/library/busybox'),
    # A public source the mapping does not name: the registry, else where it is.
    ('quay.io/prometheus/prometheus:v3', 'registry.site', 'registry.site/prometheus/prometheus:v3'),
    ('quay.io/prometheus/prometheus:v3', '', 'quay.io/prometheus/prometheus:v3'),
])
def test_mirror_image_per_source(ref, registry, moved):
    assert mirror.mirror_image(ref, registry, SITE_MAP) == moved


def test_mapping_sets_each_kube_prometheus_image_registry_not_the_global_one():
    values = mirror.mirror_values('kube-prometheus-stack', 'registry.site', [], {'quay.io': 'quay-mirror.site'})
    assert 'global' not in values
    assert values['prometheusOperator']['image'] == {'registry': 'quay-mirror.site'}
    assert values['grafana']['image'] == {'registry': 'registry.site'}
    assert values['kube-state-metrics']['image'] == {'registry': 'registry.site'}
    # Without the registry, only the mapped source moves.
    values = mirror.mirror_values('kube-prometheus-stack', '', [], {'quay.io': 'quay-mirror.site'})
    assert 'grafana' not in values or 'image' not in values['grafana']
    assert values['prometheus']['prometheusSpec']['image'] == {'registry': 'quay-mirror.site'}


@pytest.mark.parametrize('value,parsed', [
    ('{"nvcr.io": "registry.site/nvcr"}', {'nvcr.io': 'registry.site/nvcr'}),
    ('nvcr.io=registry.site/nvcr,quay.io=q.site', {'nvcr.io': 'registry.site/nvcr', 'quay.io': 'q.site'}),
    ('', {}),
    ({'index.docker.io': 'hub.site'}, {'docker.io': 'hub.site'}),
])
def test_registry_map_from_e_strings(value, parsed):
    assert mirror.registry_map(value) == parsed


@pytest.mark.parametrize('mapping,start', [
    ({'': 'registry.site/x'}, 'cluster_addons_image_registry_map: each key must be a source registry host'),
    ({'nvcr.io': 'https://registry.site'}, 'cluster_addons_image_registry_map: "nvcr.io" must map to a registry host'),
    ({'nvcr.io': ''}, 'cluster_addons_image_registry_map: "nvcr.io" must map to a registry host'),
    (['nvcr.io'], 'cluster_addons_image_registry_map must map a source registry'),
    ('{"nvcr.io": ', 'cluster_addons_image_registry_map must map a source registry'),
])
def test_registry_map_errors(mapping, start):
    found = mirror.registry_errors('', [], mapping)
    assert len(found) == 1 and found[0].startswith(start), found


HOST_ENTRIES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'apt', 'mirror-list-host-entries.json')


def _host_entries():
    with open(HOST_ENTRIES, encoding='utf-8') as fh:
        return json.load(fh)


def test_host_mirror_list_of_five_real_nodes():
    # What the preflight scenario's five fresh nodes answered (tests/fixtures/apt/SOURCE.md).
    groups = mirror.host_mirror_list(_host_entries())
    assert [g['os'] for g in groups] == ['Debian 12.15 (bookworm) x86_64', 'Debian 13.8 (trixie) x86_64',
                                         'Ubuntu 22.04 (jammy) x86_64', 'Ubuntu 24.04 (noble) x86_64',
                                         'Ubuntu 26.04 (resolute) x86_64']
    noble = groups[3]
    assert noble['hosts'] == ['preflight-ubuntu2404'] and not noble['errors']
    assert noble['archive']['suites'] == ['noble', 'noble-updates', 'noble-security']
    assert noble['archive']['components'] == ['main', 'restricted', 'universe', 'multiverse']
    # Each package with apt's candidate: the prebuilt module of the node's kernel at the kernel's version.
    assert 'linux-modules-nvidia-580-open-6.8.0-149-generic=6.8.0-149.149' in noble['archive']['packages']
    assert 'nvidia-utils-580=580.178.04-0ubuntu0.24.04.1' in noble['archive']['packages']
    assert all('=' in p for p in noble['archive']['packages']), noble['archive']['packages']
    assert noble['toolkit'] == {'repository': 'https://nvidia.github.io/libnvidia-container/stable', 'mirror': '',
                                'packages': ['libnvidia-container-tools=1.18.2-1', 'libnvidia-container1=1.18.2-1',
                                             'nvidia-container-toolkit-base=1.18.2-1', 'nvidia-container-toolkit=1.18.2-1']}
    bookworm = groups[0]
    assert 'nvidia-kernel-dkms=535.261.03-1' in bookworm['archive']['packages']
    # A package apt's probe did not know stays a name (the running kernel's headers come from the node's own suites).
    assert 'linux-headers-6.1.0-50-amd64' in bookworm['archive']['packages']


def test_host_mirror_list_groups_hosts_of_one_os_and_says_what_differs():
    entries = _host_entries()
    twin = json.loads(json.dumps(entries[3]))
    twin['host'] = 'gpu-02'
    twin['toolkit']['mirror'] = 'https://mirror.site/libnvidia-container/stable'
    twin['driver']['errors'] = ['nvidia_driver_branch 999 is not known']
    groups = mirror.host_mirror_list(entries + [twin])
    noble = [g for g in groups if g['os'].startswith('Ubuntu 24.04')][0]
    assert noble['hosts'] == ['gpu-02', 'preflight-ubuntu2404']
    assert noble['errors'] == ['gpu-02: nvidia_driver_branch 999 is not known',
                               'gpu-02: the toolkit mirror https://mirror.site/libnvidia-container/stable differs '
                               'from (none) of the other hosts of Ubuntu 24.04 (noble) x86_64']
    # Every host with the same mirror: the list names NVIDIA's repository to copy from and the site's mirror.
    for entry in entries:
        entry['toolkit']['mirror'] = 'https://mirror.site/libnvidia-container/stable'
    text = mirror.mirror_list_text({'images': [], 'charts': [], 'host_packages': mirror.host_mirror_list(entries[3:4])})
    assert text.splitlines()[2].endswith('4 from https://nvidia.github.io/libnvidia-container/stable '
                                         '(mirrored at https://mirror.site/libnvidia-container/stable)')
    # A host without the toolkit role's entry lists no toolkit packages; an unknown OS field reads "?".
    bare = mirror.host_mirror_list([{'host': 'h', 'os': {}, 'driver': {'packages': ['nvidia-smi']}, 'toolkit': {}}])
    assert bare == [{'os': '? ? (?) ?', 'hosts': ['h'],
                     'archive': {'suites': [], 'components': [], 'packages': ['nvidia-smi']},
                     'toolkit': {'repository': '', 'mirror': '', 'packages': []},
                     'mig_manager': {'hosts': [], 'unnamed': [], 'files': []}, 'errors': []}]


def test_mirror_list_text_with_host_packages():
    data = {'images': [], 'charts': [], 'host_packages': mirror.host_mirror_list(_host_entries()[3:4])}
    lines = mirror.mirror_list_text(data).splitlines()
    assert lines[2] == ('# host packages of Ubuntu 24.04 (noble) x86_64 (preflight-ubuntu2404): 10 from the OS archive '
                        '(suites noble noble-updates noble-security, components main restricted universe multiverse), '
                        '4 from https://nvidia.github.io/libnvidia-container/stable')
    assert 'nvidia-utils-580=580.178.04-0ubuntu0.24.04.1 archive' in lines
    assert 'nvidia-container-toolkit=1.18.2-1 https://nvidia.github.io/libnvidia-container/stable' in lines
    assert len(lines) == 3 + 10 + 4


def test_host_mirror_list_names_nvidia_mig_manager_for_the_hosts_with_a_mig_layout():
    """mig_manager's entry (its mirror_list fact): the package file of mig_manager_package for a host with a MIG layout,
    once per operating system; a host with a layout and no package is named; a host without a layout adds nothing."""
    entries = _host_entries()[3:4]
    deb = 'https://mirror.site/mig-parted/nvidia-mig-manager_0.15.0-1_amd64.deb'
    checksum = 'sha256:' + '0' * 64
    twins = []
    for name, mig in (('gpu-a', {'layout': 'all-1g.10gb', 'package': deb, 'checksum': checksum}),
                      ('gpu-b', {'layout': 'all-3g.40gb', 'package': deb, 'checksum': checksum}),
                      ('gpu-c', {'layout': 'all-1g.10gb', 'package': '', 'checksum': ''}),
                      ('gpu-d', {'layout': '', 'package': deb, 'checksum': checksum})):
        twin = json.loads(json.dumps(entries[0]))
        twin.update(host=name, mig=mig)
        twins.append(twin)
    noble = mirror.host_mirror_list(entries + twins)[0]
    assert noble['mig_manager'] == {'hosts': ['gpu-a', 'gpu-b', 'gpu-c'], 'unnamed': ['gpu-c'],
                                    'files': [{'file': deb, 'checksum': checksum}]}
    lines = mirror.mirror_list_text({'images': [], 'charts': [], 'host_packages': [noble]}).splitlines()
    at = lines.index('# nvidia-mig-manager for the MIG layouts of gpu-a, gpu-b, gpu-c: 1 file(s) of '
                     "NVIDIA's mig-parted releases (https://github.com/NVIDIA/mig-parted/releases)")
    assert lines[at + 1:at + 3] == [deb + ' ' + checksum, '# gpu-c: no mig_manager_package, nvidia-mig-manager must '
                                    'be installed there already']
    # Without a layout on any host: no line about it.
    plain = {'images': [], 'charts': [], 'host_packages': mirror.host_mirror_list(entries)}
    assert 'mig-manager' not in mirror.mirror_list_text(plain)
