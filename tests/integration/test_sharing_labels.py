"""device_plugin's labels step against the API double (k8s_api_double.py): each GPU host's Node gets its sharing
profile as nvidia.com/device-plugin.config, the label the chart's config-manager reads to pick the named config.

No Kubernetes API runs here; the double answers as the API server does for Nodes (GET, JSON merge patch with null
deleting a key, ?dryRun=All in check mode storing nothing) and keeps every request. The Nodes are the real RKE2 Node
of tests/fixtures/k8s-nodes under each host's name. What runs for real: the role's entry point, the filters
(plugins/module_utils/cluster_addons.py sharing_plan, sharing_label_changes) and kubernetes.core's k8s_info and k8s.
"""
import copy

import yaml

from conftest import ansible_env, cluster_play, real_node

import subprocess

LABEL = 'nvidia.com/device-plugin.config'
MARK = 'baremetal.gpu/device-plugin-config'
POOLS = {'whole': {'sharing': 'none'}, 'ts4': {'sharing': 'time-slicing', 'replicas': 4},
         'mps2': {'sharing': 'mps', 'replicas': 2}}
PLAY = cluster_play("""---
- name: The device plugin's sharing labels on the Nodes
  hosts: localhost
  gather_facts: false
  tasks:
    - name: The device plugin's %s step
      ansible.builtin.include_role:
        name: baremetal.gpu.device_plugin
        tasks_from: %s
""")


def add_node(cluster, name, labels=None, annotations=None):
    node = copy.deepcopy(real_node())
    node['metadata']['name'] = name
    node['metadata']['labels']['kubernetes.io/hostname'] = name
    node['metadata']['labels'].update(labels or {})
    node['metadata'].setdefault('annotations', {}).update(annotations or {})
    cluster.add_node(node)


def run(tmp_path, cluster, profiles, *args, entry='labels'):
    """The labels step (or ``entry``) with the GPU hosts of ``profiles`` ({host: profile or None}); (rc, output)."""
    inventory = {'all': {
        'vars': {'cluster_kubeconfig': cluster.kubeconfig, 'device_plugin_sharing_profiles': POOLS},
        'hosts': {'localhost': {'ansible_connection': 'local'}},
        'children': {'gpu_nodes': {'hosts': dict(
            (host, {'baremetal_gpu_sharing_profile': profile} if profile else {}) for host, profile in profiles.items())}}}}
    (tmp_path / 'inventory.yml').write_text(yaml.safe_dump(inventory))
    (tmp_path / 'play.yml').write_text(PLAY % (entry, entry))
    res = subprocess.run(['ansible-playbook', '-i', str(tmp_path / 'inventory.yml'), str(tmp_path / 'play.yml')]
                         + list(args), capture_output=True, text=True, env=ansible_env(), timeout=300, check=False)
    return res.returncode, res.stdout + res.stderr


def writes(cluster):
    return [(m, p) for m, p, _b in cluster.requests if m in ('PATCH', 'PUT') and 'dryRun=All' not in p]


def test_three_pools_label_only_our_nodes_and_converge(tmp_path, cluster):
    for name in ('train-01', 'infer-01', 'dev-01'):
        add_node(cluster, name)
    add_node(cluster, 'cpu-01', {LABEL: 'ts4'})        # not a GPU host of ours: never touched
    hosts = {'train-01': None, 'infer-01': 'mps2', 'dev-01': 'ts4'}
    # Check mode: says what it would do, stores nothing.
    rc, out = run(tmp_path, cluster, hosts, '--check')
    assert rc == 0, out[-4000:]
    assert not writes(cluster) and LABEL not in cluster.nodes['infer-01']['metadata']['labels']
    rc, out = run(tmp_path, cluster, hosts)
    assert rc == 0, out[-4000:]
    meta = dict((name, cluster.nodes[name]['metadata']) for name in cluster.nodes)
    assert meta['infer-01']['labels'][LABEL] == 'mps2' and meta['infer-01']['annotations'][MARK] == 'true'
    assert meta['dev-01']['labels'][LABEL] == 'ts4' and meta['dev-01']['annotations'][MARK] == 'true'
    assert LABEL not in meta['train-01']['labels'] and MARK not in meta['train-01'].get('annotations', {})
    assert meta['cpu-01']['labels'][LABEL] == 'ts4' and MARK not in meta['cpu-01'].get('annotations', {})
    assert sorted(p for _m, p in writes(cluster)) == ['/api/v1/nodes/dev-01', '/api/v1/nodes/infer-01']
    # A second run changes nothing.
    before = len(writes(cluster))
    rc, out = run(tmp_path, cluster, hosts)
    assert rc == 0 and len(writes(cluster)) == before, out[-3000:]
    # The inventory is the desired state: dev-01 names no profile any more, so our label and mark go.
    rc, out = run(tmp_path, cluster, dict(hosts, **{'dev-01': None}))
    assert rc == 0, out[-3000:]
    assert LABEL not in cluster.nodes['dev-01']['metadata']['labels']
    assert MARK not in cluster.nodes['dev-01']['metadata'].get('annotations', {})


def test_someone_elses_label_is_refused_before_any_change(tmp_path, cluster):
    add_node(cluster, 'train-01', {LABEL: 'gold'})
    add_node(cluster, 'dev-01')
    rc, out = run(tmp_path, cluster, {'train-01': 'ts4', 'dev-01': 'ts4'})
    assert rc != 0
    assert 'Node train-01 (host train-01) has nvidia.com/device-plugin.config=gold, set by someone else' in out, out[-3000:]
    assert not writes(cluster)
    # An unknown profile: refused naming the variable (the role's preflight; also as -e, a string).
    rc, out = run(tmp_path, cluster, {'dev-01': 'ts8'})
    assert rc != 0 and 'baremetal_gpu_sharing_profile of dev-01 is ts8' in out, out[-3000:]
    rc, out = run(tmp_path, cluster, {'dev-01': None}, '-e', 'device_plugin_sharing_default_profile=gold')
    assert rc != 0 and 'device_plugin_sharing_default_profile is gold' in out, out[-3000:]
    assert not writes(cluster)


def test_the_uninstall_takes_off_only_the_labels_we_set(tmp_path, cluster):
    """The uninstall's unlabel step: our label and mark come off every Node that carries the mark, a GPU host's or
    not; someone else's label (no mark) stays; check mode and a second run write nothing."""
    for name in ('train-01', 'dev-01'):
        add_node(cluster, name)
    add_node(cluster, 'cpu-01', {LABEL: 'gold'})        # someone else's: no mark
    rc, out = run(tmp_path, cluster, {'train-01': 'ts4', 'dev-01': 'mps2'})
    assert rc == 0 and cluster.nodes['dev-01']['metadata']['labels'][LABEL] == 'mps2', out[-3000:]
    before = len(writes(cluster))
    rc, out = run(tmp_path, cluster, {}, '--check', entry='unlabel')
    assert rc == 0 and len(writes(cluster)) == before, out[-3000:]
    rc, out = run(tmp_path, cluster, {}, entry='unlabel')
    assert rc == 0, out[-3000:]
    assert sorted(p for _m, p in writes(cluster)[before:]) == ['/api/v1/nodes/dev-01', '/api/v1/nodes/train-01']
    for name in ('train-01', 'dev-01'):
        assert LABEL not in cluster.nodes[name]['metadata']['labels']
        assert MARK not in cluster.nodes[name]['metadata'].get('annotations', {})
    assert cluster.nodes['cpu-01']['metadata']['labels'][LABEL] == 'gold'
    after = len(writes(cluster))
    rc, out = run(tmp_path, cluster, {}, entry='unlabel')
    assert rc == 0 and len(writes(cluster)) == after, out[-3000:]
