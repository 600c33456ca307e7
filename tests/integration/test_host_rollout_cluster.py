"""Day 1 in batches (playbooks/gpu_nodes.yml): the cluster steps around a node's reboot or RKE2 restart.

No Kubernetes API runs here: no node was really cordoned or drained by these tests. The API double
(k8s_api_double.py) serves the Node recorded from a real RKE2 cluster (tests/fixtures/k8s-nodes: node
"nori", nvidia.com/gpu 1). roles/upgrade's host_rollout_enter and host_rollout_leave run for real
through the upgrade's own enter and leave steps (kubernetes.core), with the day-1 label
baremetal.gpu/host-rollout; host_rollout_plan reads the Node list from the double.
"""
import copy
import json
import re
import subprocess

import yaml

from conftest import ansible_env, real_node

NORI = real_node()
LABEL = 'baremetal.gpu/host-rollout'
UPGRADE_LABEL = 'baremetal.gpu/driver-upgrade'
INITIAL = 'baremetal.gpu/driver-upgrade.initially-unschedulable'

PLAY = """---
- name: Day-1 host rollout, cluster steps
  hosts: gpu-a
  gather_facts: false
  tasks:
%s
"""
STEP = """    - name: Step {step}
      ansible.builtin.include_role:
        name: baremetal.gpu.upgrade
        tasks_from: {step}
"""
DISRUPTIVE = {'in_cluster': True, 'why': 'rke2-agent is enabled', 'role': 'agent', 'unit': 'rke2-agent', 'reboot': [],
              'restart': ['the nvidia runtime is missing from /var/lib/rancher/rke2/agent/etc/containerd/config.toml'],
              'resume': [], 'disruptive': True}


def run(tmp_path, cluster, steps, extra=None, args=()):
    inventory = {'all': {
        'hosts': {'gpu-a': {'ansible_connection': 'local', 'baremetal_gpu_node_name': 'nori'}},
        'children': {'baremetal_gpu_cluster_api': {'hosts': {'localhost': {'ansible_connection': 'local'}}}}}}
    variables = {'upgrade_kubeconfig': cluster.kubeconfig, 'upgrade_state_dir': str(tmp_path / 'state'),
                 'upgrade_capacity_timeout': 5, 'upgrade_node_ready_timeout': 10, 'upgrade_gpu_pod_deletion_timeout': 10,
                 'upgrade_host_rollout_plan': {'nodes': {'gpu-a': DISRUPTIVE}}}
    variables.update(extra or {})
    variables = dict((k, v) for k, v in variables.items() if v is not None)   # None: leave it to the play
    (tmp_path / 'inventory.yml').write_text(yaml.safe_dump(inventory))
    (tmp_path / 'vars.yml').write_text(yaml.safe_dump(variables))
    (tmp_path / 'play.yml').write_text(PLAY % ''.join(STEP.format(step=s) for s in steps))
    cmd = ['ansible-playbook', '-i', str(tmp_path / 'inventory.yml'), str(tmp_path / 'play.yml'),
           '-e', '@' + str(tmp_path / 'vars.yml')] + list(args)
    return subprocess.run(cmd, capture_output=True, text=True, env=ansible_env(), timeout=300, check=False)


def node(cluster):
    return cluster.nodes['nori']


def test_a_disruptive_node_is_cordoned_then_uncordoned_with_the_day1_label(tmp_path, cluster):
    cluster.add_node(NORI)
    res = run(tmp_path, cluster, ['host_rollout_enter'])
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    meta = node(cluster)['metadata']
    assert meta['labels'][LABEL] == 'upgrading'
    assert UPGRADE_LABEL not in meta['labels']          # the driver upgrade's own label is left alone
    assert meta['annotations'][INITIAL] == 'false'
    assert node(cluster)['spec']['unschedulable'] is True
    record = json.loads((tmp_path / 'state' / 'host-rollout.json').read_text())
    assert record['state'] == 'upgrading' and record['cordoned'] is True and record['finished'] == ''
    assert record['restart'] == DISRUPTIVE['restart']

    res = run(tmp_path, cluster, ['host_rollout_enter', 'host_rollout_leave'])
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    meta = node(cluster)['metadata']
    assert meta['labels'][LABEL] == 'done'
    assert INITIAL not in meta['annotations']
    assert node(cluster)['spec'].get('unschedulable') in (None, False)
    record = json.loads((tmp_path / 'state' / 'host-rollout.json').read_text())
    assert record['state'] == 'done' and record['finished'] > record['started']


def test_a_quiet_node_is_not_touched_and_its_disruption_is_held_back(tmp_path, cluster):
    cluster.add_node(NORI)
    quiet = dict(DISRUPTIVE, restart=[], disruptive=False)
    res = run(tmp_path, cluster, ['host_rollout_enter', 'host_rollout_leave'],
              {'upgrade_host_rollout_plan': {'nodes': {'gpu-a': quiet}}}, args=['-v'])
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    assert [m for m, _p, _b in cluster.requests if m != 'GET'] == []
    assert not (tmp_path / 'state' / 'host-rollout.json').exists()
    assert re.search(r'__baremetal_gpu_hold_back\W{1,4}true', res.stdout), res.stdout[-3000:]


def test_plan_finds_the_node_through_the_api(tmp_path, cluster):
    # This machine has no RKE2 and no GPU: the API's Node alone makes it a node of the cluster, with nothing to
    # reboot or restart (nvidia_driver's decide step is skipped by tag: it would ask this machine's apt).
    cluster.add_node(NORI)
    res = run(tmp_path, cluster, ['host_rollout_plan'], {'upgrade_host_rollout_plan': None},
              args=['--skip-tags', 'nvidia_driver', '-v'])
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    assert 'gpu-a: in a cluster (the cluster API lists Node nori)' in res.stdout
    assert 'nothing disruptive to do: every GPU node runs at once' in res.stdout


def test_plan_refuses_a_bad_batch_size_before_anything(tmp_path, cluster):
    cluster.add_node(NORI)
    res = run(tmp_path, cluster, ['host_rollout_plan'], {'upgrade_host_rollout_plan': None, 'upgrade_batch_size': '0%'},
              args=['--skip-tags', 'nvidia_driver'])
    assert res.returncode != 0
    assert ('upgrade_batch_size must be a number of nodes (1 or more) or a percentage from 1% to 100% such as "25%", '
            'got "0%"') in res.stdout
    assert [m for m, _p, _b in cluster.requests if m != 'GET'] == []


def test_plan_resumes_a_node_the_last_rollout_left_cordoned(tmp_path, cluster):
    left = copy.deepcopy(NORI)
    left['spec']['unschedulable'] = True
    left['metadata']['labels'][LABEL] = 'upgrading'
    cluster.add_node(left)
    res = run(tmp_path, cluster, ['host_rollout_plan'], {'upgrade_host_rollout_plan': None, 'upgrade_max_unavailable': 1},
              args=['--skip-tags', 'nvidia_driver'])
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    # Not counted as already unavailable (it is ours), and back in a batch of its own.
    assert 'minus 0 already unschedulable' in res.stdout
    assert 'resume: the last rollout left it out of service (label baremetal.gpu/host-rollout=upgrading)' in res.stdout
    assert [m for m, _p, _b in cluster.requests if m != 'GET'] == []


def test_plan_maps_the_node_by_its_hostname_label(tmp_path, cluster):
    # The Node's name differs from every name of the host; its kubernetes.io/hostname label is the host's.
    renamed = copy.deepcopy(NORI)
    renamed['metadata']['name'] = 'nori.k8s.example'
    renamed['metadata']['labels']['kubernetes.io/hostname'] = 'nori'
    cluster.add_node(renamed)
    res = run(tmp_path, cluster, ['host_rollout_plan'], {'upgrade_host_rollout_plan': None},
              args=['--skip-tags', 'nvidia_driver', '-v'])
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    assert 'gpu-a: in a cluster (the cluster API lists Node nori.k8s.example)' in res.stdout
