"""playbooks/upgrade_driver.yml through the one rollout (playbooks/rollout.yml, kind upgrade), against the API double.

No Kubernetes API and no driver change run here. The GPU nodes are this machine (connection local), the Nodes the
real RKE2 Node of tests/fixtures/k8s-nodes under each host's name; the double answers as the API server does
(409 on a stale resourceVersion, Leases 201/409). What runs for real: the playbook, the engine's plan (with
roles/upgrade's status), lock, batch, enter, failed and stop steps, and roles/upgrade's change up to nvidia_driver,
which refuses a bad input (nvidia_driver_module_build) at its argument check, before anything on the host changes:
the failure path of a branch change, from the cordon to the released lock. The success path (a real branch change) is
molecule/upgrade_driver's, on podman nodes without a cluster API.
"""
import json
import os
import subprocess

import yaml

from conftest import ROOT, ansible_env, real_node

LABEL = 'baremetal.gpu/driver-upgrade'
REASON = 'baremetal.gpu/driver-upgrade.reason'
LEASE = ('kube-system', 'baremetal-gpu-maintenance')


def add_node(cluster, name):
    node = real_node()
    node['metadata']['name'] = name
    node['metadata']['labels']['kubernetes.io/hostname'] = name
    cluster.add_node(node)


def run(tmp_path, cluster, hosts, *args):
    """upgrade_driver.yml on ``hosts`` (this machine), each the Node n-<host>; returns (rc, output)."""
    inventory = {'all': {
        'vars': {'cluster_kubeconfig': cluster.kubeconfig, 'node_maintenance_lock_timeout': 30,
                 'node_maintenance_state_dir': str(tmp_path / 'state'), 'node_maintenance_node_ready_timeout': 10,
                 'node_maintenance_capacity_timeout': 10, 'node_maintenance_gpu_pod_deletion_timeout': 10,
                 'node_maintenance_batch_size': 1, 'upgrade_driver_branch': '595'},
        'children': {'k8s_control': {'hosts': {'localhost': {'ansible_connection': 'local'}}},
                     'gpu_nodes': {'hosts': dict((h, {'ansible_connection': 'local', 'ansible_become': False,
                                                      'baremetal_gpu_node_name': 'n-' + h}) for h in hosts)}}}}
    (tmp_path / 'inventory.yml').write_text(yaml.safe_dump(inventory))
    res = subprocess.run(['ansible-playbook', '-i', str(tmp_path / 'inventory.yml'),
                          os.path.join(ROOT, 'playbooks', 'upgrade_driver.yml')] + list(args),
                         capture_output=True, text=True, env=ansible_env(), timeout=300, check=False)
    return res.returncode, res.stdout + res.stderr


def test_a_failed_branch_change_keeps_its_node_cordoned_labelled_failed_and_stops_the_rollout(tmp_path, cluster):
    """The engine's enter, failed and stop steps around roles/upgrade (which has none of its own): the first node of
    the plan is cordoned with the change as its reason, its change fails, the role closes its own record with the
    failure, the engine labels the Node failed and keeps it cordoned, the second node is untouched, the lock is
    released and the run fails."""
    add_node(cluster, 'n-gpu-a')
    add_node(cluster, 'n-gpu-b')
    rc, out = run(tmp_path, cluster, ['gpu-a', 'gpu-b'], '-e', 'nvidia_driver_module_build=bogus')
    assert rc != 0, out[-4000:]
    flat = out.replace('\n', ' ')
    assert 'so the rollout stops after this batch' in flat, out[-4000:]
    first, second = cluster.nodes['n-gpu-a'], cluster.nodes['n-gpu-b']
    assert first['metadata']['labels'][LABEL] == 'failed', first['metadata']['labels']
    assert first['spec'].get('unschedulable') is True
    reason = first['metadata']['annotations'][REASON]
    assert 'nvidia_driver_module_build' in reason, reason
    # The second batch never started.
    assert LABEL not in second['metadata']['labels'] and not second['spec'].get('unschedulable')
    assert ((cluster.leases.get(LEASE) or {}).get('spec') or {}).get('holderIdentity') in (None, ''), cluster.leases
    # The role's own record of the branch change, and the engine's record of the node's time out of service.
    record = json.loads((tmp_path / 'state' / 'driver-upgrade.json').read_text())
    assert record['state'] == 'failed' and record['to'] == '595', record
    assert 'nvidia_driver_module_build' in record['reason'], record
    rollout = json.loads((tmp_path / 'state' / 'upgrade-rollout.json').read_text())
    assert rollout['state'] == 'failed' and rollout['cordoned'] is True, rollout
    # Entered with the change as its first reason (the engine's enter step, from the plan's reasons).
    enter = [b for m, p, b in cluster.requests if m == 'PATCH' and p.startswith('/api/v1/nodes/n-gpu-a')
             and LABEL in json.dumps(b) and 'upgrading' in json.dumps(b)]
    assert enter and 'to driver branch 595' in json.dumps(enter[0]), cluster.requests
