"""The cluster steps of the driver upgrade (roles/upgrade: enter, leave, failed) against an API double.

No Kubernetes API runs here: no node was really cordoned or drained by these tests. The double
(k8s_api_double.py) serves the Node recorded from a real RKE2 cluster (tests/fixtures/k8s-nodes:
node "nori", nvidia.com/gpu 1) and pods written here (each validated against the Kubernetes Pod
schema), keeps the changes the requests make, and records every request. The role's tasks run for
real through kubernetes.core (k8s_info, k8s, k8s_drain) and baremetal.gpu.gpu_node_capacity; the
tests assert the node's resulting state and the requests, in order.
"""
import copy
import subprocess

import pytest
import yaml

from conftest import ansible_env, cluster_play, pod, real_node

NORI = real_node()
STATE = 'baremetal.gpu/driver-upgrade'
INITIAL = 'baremetal.gpu/driver-upgrade.initially-unschedulable'
CAPACITY = 'baremetal.gpu/driver-upgrade.capacity-before'
REASON = 'baremetal.gpu/driver-upgrade.reason'

PLAY = """---
- name: Upgrade role, cluster steps
  hosts: gpu-a
  gather_facts: false
  vars:
    # What the engine's enter step passes to its cordon, uncordon and mark_failed for the rollout kind upgrade.
    __node_maintenance_state_label: baremetal.gpu/driver-upgrade
    __node_maintenance_enter_reason: to driver branch {{ upgrade_driver_branch }}
  tasks:
%s
"""
STEP = """    - name: Step {step}
      ansible.builtin.include_role:
        name: baremetal.gpu.node_maintenance
        tasks_from: {step}
"""
RESCUE = """    - name: A failing upgrade, rescued as main.yml does
      block:
        - name: Fail like a change that went wrong
          ansible.builtin.fail:
            msg: apt cannot install nvidia-driver-599
      rescue:
        - name: Step failed
          ansible.builtin.include_role:
            name: baremetal.gpu.node_maintenance
            tasks_from: mark_failed
"""


TRAIN = pod('train-0', 'ml', {'nvidia.com/gpu': '1'}, owner=('StatefulSet', 'train'))
SCRATCH = pod('scratch-job', 'ml', {'nvidia.com/gpu': '1'}, owner=('Job', 'scratch'), empty_dir=True)
DCGM = pod('dcgm-exporter-x', 'nvidia-dcgm', None, owner=('DaemonSet', 'dcgm-exporter'))
WEB = pod('web-0', 'default', {'cpu': '1'}, owner=('ReplicaSet', 'web'))


def test_pods_are_valid_kubernetes_objects():
    kubernetes_validate = pytest.importorskip('kubernetes_validate')
    for item in (TRAIN, SCRATCH, DCGM, WEB):
        kubernetes_validate.validate(item, '1.31.0', strict=True)


def run(tmp_path, cluster, steps, extra=None):
    inventory = {'all': {
        'hosts': {'gpu-a': {'ansible_connection': 'local', 'baremetal_gpu_node_name': 'nori'}},
        'children': {'baremetal_gpu_cluster_api': {'hosts': {'localhost': {'ansible_connection': 'local'}}}}}}
    variables = {'upgrade_driver_branch': '595', 'cluster_kubeconfig': cluster.kubeconfig,
                 'node_maintenance_capacity_timeout': 5, 'node_maintenance_node_ready_timeout': 10, 'node_maintenance_gpu_pod_deletion_timeout': 10,
                 'node_maintenance_drain_timeout': 10,
                 # The failure step writes the node record: into the test's directory, never the machine's /var/lib.
                 'node_maintenance_state_dir': str(tmp_path / 'state')}
    variables.update(extra or {})
    (tmp_path / 'inventory.yml').write_text(yaml.safe_dump(inventory))
    (tmp_path / 'vars.yml').write_text(yaml.safe_dump(variables))
    # The upgrade's steps are the engine's cordon and uncordon (roles/upgrade/tasks/main.yml).
    body = ''.join(RESCUE if s == 'failed' else STEP.format(step={'enter': 'cordon', 'leave': 'uncordon'}.get(s, s)) for s in steps)
    (tmp_path / 'play.yml').write_text(cluster_play(PLAY % body))
    cmd = ['ansible-playbook', '-i', str(tmp_path / 'inventory.yml'), str(tmp_path / 'play.yml'),
           '-e', '@' + str(tmp_path / 'vars.yml')]
    return subprocess.run(cmd, capture_output=True, text=True, env=ansible_env(), timeout=300, check=False)


def node(cluster):
    return cluster.nodes['nori']


def test_enter_then_leave(tmp_path, cluster):
    cluster.add_node(NORI)
    for item in (TRAIN, SCRATCH, DCGM, WEB):
        cluster.add_pod(item)
    res = run(tmp_path, cluster, ['enter'], {'node_maintenance_gpu_pod_deletion_delete_emptydir': True})
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    meta = node(cluster)['metadata']
    assert meta['labels'][STATE] == 'upgrading'
    assert meta['annotations'][INITIAL] == 'false' and meta['annotations'][CAPACITY] == '1'
    assert node(cluster)['spec']['unschedulable'] is True
    # Only the two GPU pods were deleted; the DaemonSet pod and the CPU pod stay (no drain by default).
    assert sorted(cluster.pods) == [('default', 'web-0'), ('nvidia-dcgm', 'dcgm-exporter-x')]
    deletes = cluster.calls('DELETE')
    assert deletes == ['DELETE /api/v1/namespaces/ml/pods/scratch-job', 'DELETE /api/v1/namespaces/ml/pods/train-0']
    patches = [c for c in cluster.calls() if c.startswith('PATCH')]
    assert patches[0] == 'PATCH /api/v1/nodes/nori'
    # The label, the state before and the cordon went on in one write (a kill cannot leave the node cordoned without
    # what a rerun needs to put it back), before any pod was touched.
    node_patches = [(i, b) for i, (m, p, b) in enumerate(cluster.requests) if m == 'PATCH' and p.split('?')[0] == '/api/v1/nodes/nori']
    cordon_index, enter_patch = node_patches[0]
    assert enter_patch['spec'] == {'unschedulable': True}, enter_patch
    assert enter_patch['metadata']['labels'][STATE] == 'upgrading'
    assert enter_patch['metadata']['annotations'][INITIAL] == 'false' and enter_patch['metadata']['annotations'][CAPACITY] == '1'
    assert len(node_patches) == 1, node_patches
    assert cordon_index < [i for i, (m, p, b) in enumerate(cluster.requests) if m == 'DELETE'][0]

    res = run(tmp_path, cluster, ['enter', 'leave'], {'node_maintenance_gpu_pod_deletion_delete_emptydir': True})
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    meta = node(cluster)['metadata']
    assert meta['labels'][STATE] == 'done'
    assert INITIAL not in meta['annotations'] and CAPACITY not in meta['annotations'] and REASON not in meta['annotations']
    assert node(cluster)['spec'].get('unschedulable') in (None, False)


def test_node_cordoned_before_stays_cordoned(tmp_path, cluster):
    cordoned = copy.deepcopy(NORI)
    cordoned['spec']['unschedulable'] = True
    cluster.add_node(cordoned)
    res = run(tmp_path, cluster, ['enter', 'leave'])
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    assert node(cluster)['metadata']['labels'][STATE] == 'done'
    assert node(cluster)['spec']['unschedulable'] is True
    assert 'stays cordoned: it was unschedulable before this maintenance' in res.stdout
    assert not [b for m, p, b in cluster.requests if m == 'PATCH' and b == {'spec': {'unschedulable': False}}]


def test_resume_after_a_crash_uncordons_a_node_we_cordoned(tmp_path, cluster):
    crashed = copy.deepcopy(NORI)
    crashed['spec']['unschedulable'] = True
    crashed['metadata']['labels'][STATE] = 'upgrading'
    crashed['metadata'].setdefault('annotations', {}).update({INITIAL: 'false', CAPACITY: '1'})
    cluster.add_node(crashed)
    res = run(tmp_path, cluster, ['enter', 'leave'])
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    assert node(cluster)['spec'].get('unschedulable') in (None, False)
    assert node(cluster)['metadata']['labels'][STATE] == 'done'


def test_gpu_pod_with_emptydir_is_refused(tmp_path, cluster):
    cluster.add_node(NORI)
    cluster.add_pod(SCRATCH)
    res = run(tmp_path, cluster, ['enter'])
    assert res.returncode != 0
    assert 'node_maintenance_gpu_pod_deletion_delete_emptydir' in res.stdout and 'ml/scratch-job' in res.stdout
    assert cluster.calls('DELETE') == []
    assert ('ml', 'scratch-job') in cluster.pods


def test_drain_evicts_what_is_left(tmp_path, cluster):
    cluster.add_node(NORI)
    for item in (TRAIN, DCGM, WEB):
        cluster.add_pod(item)
    res = run(tmp_path, cluster, ['enter'], {'node_maintenance_drain_enabled': True})
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    assert 'POST /api/v1/namespaces/default/pods/web-0/eviction' in cluster.calls('POST')
    assert sorted(cluster.pods) == [('nvidia-dcgm', 'dcgm-exporter-x')]   # DaemonSet pods stay


def test_failure_labels_the_node_and_keeps_it_cordoned(tmp_path, cluster):
    cluster.add_node(NORI)
    # The rescue alone does not fail the host (the others of its batch must finish); the stop step does.
    res = run(tmp_path, cluster, ['enter', 'failed'])
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    assert 'the rollout stops (later batches are untouched); the node stays cordoned' in res.stdout
    res = run(tmp_path, cluster, ['enter', 'failed', 'stop'])
    assert res.returncode != 0
    meta = node(cluster)['metadata']
    assert meta['labels'][STATE] == 'failed'
    assert 'nvidia-driver-599' in meta['annotations'][REASON]
    assert meta['annotations']['baremetal.gpu/maintenance.time'].endswith('Z')
    assert node(cluster)['spec']['unschedulable'] is True
    assert 'so the rollout stops after this batch' in res.stdout


def test_host_outside_the_cluster_is_said_so(tmp_path, cluster):
    res = run(tmp_path, cluster, ['enter'])
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    assert 'is no node of the cluster' in res.stdout
    assert cluster.calls('PATCH') == [] and cluster.calls('DELETE') == []
