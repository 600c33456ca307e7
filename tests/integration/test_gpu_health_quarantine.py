"""playbooks/gpu_health.yml with gpu_health_action=quarantine and remediate, against the API double (k8s_api_double.py).

No Kubernetes API and no GPU run here. The GPU nodes are this machine (connection local), each with a stand-in
nvidia-smi (gpu_health_nvidia_smi_path) that prints the real H100 capture of tests/fixtures/nvidia-smi-xml (taken on
a real H100 node), unchanged for a healthy node, or with one value changed for an unhealthy one (remapped_row_pending
Yes: a row remap pending, critical, RESET_GPU). The kernel log is not read (this machine's log is not a GPU node's).
For remediate, the stand-in also answers `nvidia-smi -r -i <index>` (a GPU reset: it
logs the call, and prints the unchanged capture afterwards when the test says the reset helps); a reboot cannot run
here (the nodes are this machine), so the reboot path is tested as held back (gpu_health_remediate_reboot false)
and as refused on the machine running Ansible. The Nodes are the real RKE2 Node of tests/fixtures/k8s-nodes under
each host's name. The double answers as the API
server does: a write carrying a stale resourceVersion gets 409 Conflict, Leases 201/409. What runs for real: the
playbook, the role, baremetal.gpu.gpu_health, the maintenance engine's lock (roles/upgrade, maintenance_lock) and
kubernetes.core's k8s_info and k8s (JSON merge patch).
"""
import json
import os
import re
import subprocess
import time

import yaml

from conftest import (H100, ROOT, T4, ansible_env, device_plugin_pod, exporter_pod, killed_at, modprobe_calls,
                      modprobe_stand_in, pod, real_node, stand_in, support)

TAINT = 'baremetal.gpu/gpu-unhealthy'
LABEL = 'baremetal.gpu/gpu-health'
FINDINGS = 'baremetal.gpu/gpu-health-findings'
LEASE = ('kube-system', 'baremetal-gpu-maintenance')
SOMEONE_ELSES = {'key': 'dedicated', 'value': 'training', 'effect': 'NoSchedule'}


def add_node(cluster, name, taints=None):
    node = real_node()
    node['metadata']['name'] = name
    node['metadata']['labels']['kubernetes.io/hostname'] = name
    if taints:
        node['spec']['taints'] = taints
    cluster.add_node(node)


def run(tmp_path, cluster, health, *args, **kwargs):
    """gpu_health.yml on the hosts of ``health`` ({host: healthy?}), each the Node n-<host>; returns (rc, output).
    ``connection`` lossy_local (connection_plugins/): a host is lost (unreachable) once its stand-in made it so.
    ``journal``: the kernel log is read (this machine's own; else it is not read)."""
    proc = start(tmp_path, cluster, health, *args, **kwargs)
    out, _err = proc.communicate(timeout=300)
    return proc.returncode, out


def start(tmp_path, cluster, health, *args, kubeconfig=None, connection='local', journal=False, **stand_in_args):
    """run(), started in the background: returns the Popen (stdout and stderr together, text)."""
    hosts = {}
    for host, healthy in health.items():
        hosts[host] = {'ansible_connection': connection, 'ansible_become': False, 'baremetal_gpu_node_name': 'n-' + host,
                       'gpu_health_nvidia_smi_path': stand_in(tmp_path, host, healthy, **stand_in_args)}
    inventory = {'all': {
        'vars': {'cluster_kubeconfig': kubeconfig or cluster.kubeconfig, 'gpu_health_kernel_log': bool(journal),
                 'gpu_health_report_dir': str(tmp_path / 'reports'), 'node_maintenance_lock_timeout': 30,
                 'node_maintenance_state_dir': str(tmp_path / 'state'), 'node_maintenance_node_ready_timeout': 10,
                 'node_maintenance_capacity_timeout': 10, 'node_maintenance_gpu_pod_deletion_timeout': 10},
        'children': {'k8s_control': {'hosts': {'localhost': {'ansible_connection': 'local'}}},
                     'gpu_nodes': {'hosts': hosts}}}}
    (tmp_path / 'inventory.yml').write_text(yaml.safe_dump(inventory))
    return subprocess.Popen(['ansible-playbook', '-i', str(tmp_path / 'inventory.yml'),
                             os.path.join(ROOT, 'playbooks', 'gpu_health.yml')] + list(args),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True, env=ansible_env({
                                'ANSIBLE_CONNECTION_PLUGINS': os.path.join(os.path.dirname(__file__), 'connection_plugins'),
                                'BAREMETAL_TEST_LOST_DIR': str(tmp_path)}))


def two_nodes_and_an_exporter(tmp_path, cluster):
    """Nodes n-gpu-a and n-gpu-b, the exporter's and the device plugin's pods on n-gpu-a, and the file that says one
    of them runs there (for the stand-in's held_while). Returns (support.EXPORTER_PAUSE, that file)."""
    add_node(cluster, 'n-gpu-a')
    add_node(cluster, 'n-gpu-b')
    pause = support().EXPORTER_PAUSE
    cluster.add_pod(exporter_pod('n-gpu-a'))
    cluster.add_pod(device_plugin_pod('n-gpu-a'))
    held = str(tmp_path / 'gpu-a.exporter')
    cluster.watch_pods('n-gpu-a', pause['selector'], held)
    cluster.watch_pods('n-gpu-a', support().DEVICE_PLUGIN_PAUSE['selector'], held)
    return pause, held


def nvidia_drm_loaded(tmp_path):
    """nvidia_drm loaded on the nodes (the stand-in modprobe's directory; the stand-in nvidia-smi refuses a reset while
    it exists): returns the arguments of a run (the seams, and the role's marker under ``tmp_path``) and the
    stand-in's keyword argument."""
    seams = dict(modprobe_stand_in(tmp_path, True), __gpu_health_drm_marker=str(tmp_path / 'record' / 'nvidia_drm-unloaded'))
    (tmp_path / 'drm.yml').write_text(yaml.safe_dump(seams))
    return ['-e', '@' + str(tmp_path / 'drm.yml')], {'drm_dir': str(tmp_path / 'sys-module' / 'nvidia_drm')}


def node_writes(cluster):
    """The Node writes that change the Node (a server-side dry run, ?dryRun=All, stores nothing)."""
    return [(m, p, b) for m, p, b in cluster.requests
            if m in ('PATCH', 'PUT') and p.startswith('/api/v1/nodes/') and 'dryRun=All' not in p]


def lease_holder(cluster):
    return ((cluster.leases.get(LEASE) or {}).get('spec') or {}).get('holderIdentity')


def test_quarantine_taints_the_unhealthy_node_keeps_other_taints_and_releases_it_when_healthy(tmp_path, cluster):
    add_node(cluster, 'n-gpu-a', [SOMEONE_ELSES])
    add_node(cluster, 'n-gpu-b')
    rc, out = run(tmp_path, cluster, {'gpu-a': False, 'gpu-b': True}, '-e', 'gpu_health_action=quarantine')
    assert rc == 0, out[-4000:]
    assert 'GPU HEALTH QUARANTINE: quarantined n-gpu-a; released none' in out, out[-3000:]
    sick = cluster.nodes['n-gpu-a']
    assert sick['spec']['taints'] == [SOMEONE_ELSES, {'key': TAINT, 'value': 'row_remap_pending', 'effect': 'NoSchedule'}]
    assert sick['metadata']['labels'][LABEL] == 'quarantined'
    findings = json.loads(sick['metadata']['annotations'][FINDINGS])
    assert [(f['gpu'], f['check'], f['action']) for f in findings] == [(0, 'row_remap_pending', 'RESET_GPU')]
    # The run that did it is the lock's holder, written beside the time.
    run_id = sick['metadata']['annotations']['baremetal.gpu/maintenance.run']
    assert re.match(r'^\S+@\S+@\d{4}-\d\d-\d\dT', run_id), run_id
    assert 'MAINTENANCE LOCK Lease kube-system/baremetal-gpu-maintenance held by %s' % run_id in out
    # Only the sick Node was written, once, with the resourceVersion it had when read under the lock; the healthy one
    # was left alone; the lock was released.
    writes = node_writes(cluster)
    assert [(m, p) for m, p, _b in writes] == [('PATCH', '/api/v1/nodes/n-gpu-a')], writes
    assert writes[0][2]['metadata']['resourceVersion'] and writes[0][2]['spec']['taints'][0] == SOMEONE_ELSES
    assert not cluster.nodes['n-gpu-b']['spec'].get('taints')
    assert lease_holder(cluster) in (None, '')

    # A rerun with the node still unhealthy changes nothing and takes no lock.
    before = len(cluster.requests)
    rc, out = run(tmp_path, cluster, {'gpu-a': False, 'gpu-b': True}, '-e', 'gpu_health_action=quarantine')
    assert rc == 0, out[-4000:]
    assert 'kept quarantined n-gpu-a' in out
    later = cluster.requests[before:]
    assert not [r for r in later if r[0] in ('PATCH', 'PUT', 'POST', 'DELETE')], later

    # Healthy again: our taint, label and annotation go; the other taint stays.
    rc, out = run(tmp_path, cluster, {'gpu-a': True, 'gpu-b': True}, '-e', 'gpu_health_action=quarantine')
    assert rc == 0, out[-4000:]
    assert 'released n-gpu-a' in out
    well = cluster.nodes['n-gpu-a']
    assert well['spec']['taints'] == [SOMEONE_ELSES]
    assert LABEL not in well['metadata']['labels'] and FINDINGS not in well['metadata'].get('annotations', {})


def test_quarantine_stops_above_max_quarantined_and_check_mode_writes_nothing(tmp_path, cluster):
    add_node(cluster, 'n-gpu-a')
    add_node(cluster, 'n-gpu-b')
    # Check mode: the plan is made and said, the patch goes only as a server-side dry run, no lock is taken.
    rc, out = run(tmp_path, cluster, {'gpu-a': False, 'gpu-b': True}, '--check', '-e', 'gpu_health_action=quarantine')
    assert rc == 0, out[-4000:]
    assert 'quarantined n-gpu-a' in out
    assert not node_writes(cluster) and not cluster.leases, cluster.requests
    assert [p for m, p, _b in cluster.requests if m == 'PATCH'] == ['/api/v1/nodes/n-gpu-a?dryRun=All']
    assert not cluster.nodes['n-gpu-a']['spec'].get('taints')
    # Two unhealthy nodes, at most one: nothing is quarantined, and the run fails saying why.
    rc, out = run(tmp_path, cluster, {'gpu-a': False, 'gpu-b': False}, '-e', 'gpu_health_action=quarantine')
    assert rc != 0
    assert '2 node(s) unhealthy now (n-gpu-a, n-gpu-b) and 0 already quarantined' in out, out[-3000:]
    assert 'above gpu_health_max_quarantined=1' in out
    assert not node_writes(cluster)
    # Raised to 2, both are quarantined.
    rc, out = run(tmp_path, cluster, {'gpu-a': False, 'gpu-b': False}, '-e', 'gpu_health_action=quarantine',
                  '-e', 'gpu_health_max_quarantined=2')
    assert rc == 0, out[-4000:]
    assert all(n['spec']['taints'][-1]['key'] == TAINT for n in cluster.nodes.values())


def test_gpu_health_drain_deletes_the_gpu_pods_of_quarantined_nodes_only_and_converges_on_a_rerun(tmp_path, cluster):
    add_node(cluster, 'n-gpu-a')
    add_node(cluster, 'n-gpu-b')
    train = pod('train-0', 'ml', {'nvidia.com/gpu': '1'}, owner=('StatefulSet', 'train'), node='n-gpu-a')
    web = pod('web-0', 'default', {'cpu': '1'}, owner=('ReplicaSet', 'web'), node='n-gpu-a')
    infer = pod('infer-0', 'ml', {'nvidia.com/gpu': '1'}, owner=('StatefulSet', 'infer'), node='n-gpu-b')
    for item in (train, web, infer):
        cluster.add_pod(item)
    health = {'gpu-a': False, 'gpu-b': True}
    # Without gpu_health_drain (the default) the taint only keeps new pods off: every pod keeps running.
    rc, out = run(tmp_path, cluster, health, '-e', 'gpu_health_action=quarantine')
    assert rc == 0, out[-4000:]
    assert 'GPU pods left running (gpu_health_drain false)' in out.replace('\n', ' '), out[-3000:]
    assert len(cluster.pods) == 3 and not cluster.calls('DELETE')
    # The same as a run killed after its taint and before its drain: the Node is ours already, its GPU pod still
    # runs. The rerun with gpu_health_drain (as in the inventory) finds nothing to taint, but a GPU pod to delete:
    # it takes the lock and deletes that pod only; the CPU pod and the healthy Node's GPU pod stay.
    writes = len(node_writes(cluster))
    rc, out = run(tmp_path, cluster, health, '-e', 'gpu_health_action=quarantine', '-e', 'gpu_health_drain=true')
    assert rc == 0, out[-4000:]
    assert 'GPU pods deleted on n-gpu-a' in out.replace('\n', ' '), out[-3000:]
    assert cluster.calls('DELETE') == ['DELETE /api/v1/namespaces/ml/pods/train-0']
    assert sorted(cluster.pods) == [('default', 'web-0'), ('ml', 'infer-0')]
    assert 'MAINTENANCE LOCK Lease kube-system/baremetal-gpu-maintenance held by' in out
    assert lease_holder(cluster) in (None, '')
    assert len(node_writes(cluster)) == writes       # the taint was there already: no Node written again
    # Nothing left to do: no write, no lock.
    before = len(cluster.requests)
    rc, out = run(tmp_path, cluster, health, '-e', 'gpu_health_action=quarantine', '-e', 'gpu_health_drain=true')
    assert rc == 0, out[-4000:]
    assert not [r for r in cluster.requests[before:] if r[0] in ('PATCH', 'PUT', 'POST', 'DELETE')]
    # A GPU pod whose emptyDir data would be lost is refused by the engine's rule, the lock released; check mode
    # deletes nothing either.
    cluster.add_pod(pod('scratch-job', 'ml', {'nvidia.com/gpu': '1'}, owner=('Job', 'scratch'), empty_dir=True,
                        node='n-gpu-a'))
    before = len(cluster.requests)
    rc, out = run(tmp_path, cluster, health, '--check', '-e', 'gpu_health_action=quarantine', '-e',
                  'gpu_health_drain=true', '-e', 'node_maintenance_gpu_pod_deletion_delete_emptydir=true')
    assert rc == 0, out[-4000:]
    assert ('ml', 'scratch-job') in cluster.pods
    # Only the server-side dry run of the deletion; no lock taken.
    assert [(m, p) for m, p, _b in cluster.requests[before:] if m in ('PATCH', 'PUT', 'POST', 'DELETE')] == [
        ('DELETE', '/api/v1/namespaces/ml/pods/scratch-job?dryRun=All')]
    rc, out = run(tmp_path, cluster, health, '-e', 'gpu_health_action=quarantine', '-e', 'gpu_health_drain=true')
    assert rc != 0
    assert 'node_maintenance_gpu_pod_deletion_delete_emptydir' in out and 'ml/scratch-job' in out, out[-3000:]
    assert ('ml', 'scratch-job') in cluster.pods
    assert lease_holder(cluster) in (None, '')


def test_quarantine_without_a_kubeconfig_is_refused_before_any_change(tmp_path, cluster):
    add_node(cluster, 'n-gpu-a')
    rc, out = run(tmp_path, cluster, {'gpu-a': False}, '-e', 'gpu_health_action=quarantine',
                  kubeconfig=str(tmp_path / 'no-such-kubeconfig'))
    assert rc != 0
    assert 'gpu_health_action=quarantine needs the Kubernetes API' in out, out[-3000:]
    assert 'no-such-kubeconfig' in out
    assert not cluster.requests


REMEDIATION = 'baremetal.gpu/gpu-remediation'


def test_remediate_resets_the_gpu_out_of_service_and_puts_the_node_back(tmp_path, cluster):
    # The node's dcgm-exporter pod holds its GPU (the stand-in refuses a reset while it runs there), and the drain
    # leaves a DaemonSet's pod: the reset must take it off first. So does nvidia_drm, which must be unloaded.
    pause, held = two_nodes_and_an_exporter(tmp_path, cluster)
    # nvidia_drm is loaded there and holds the GPU too (the stand-in refuses a reset while it is).
    drm_args, drm = nvidia_drm_loaded(tmp_path)
    # Check mode: says what it would do; no reset, no Node stored, no lock.
    rc, out = run(tmp_path, cluster, {'gpu-a': False, 'gpu-b': True}, '--check', '-e', 'gpu_health_action=remediate',
                  *drm_args, reset_helps=True, held_while=held, **drm)
    assert rc == 0, out[-5000:]
    assert 'CHECK MODE: gpu-a would get a reset gpu' in out.replace('\n', ' '), out[-3000:]
    assert not (tmp_path / 'gpu-a.resets').exists() and not node_writes(cluster) and not cluster.leases
    assert sorted(p['metadata']['name'] for p in cluster.pods.values()) == [
        'nvidia-dcgm-exporter-7x2kq', 'nvidia-device-plugin-x7k2p']
    assert modprobe_calls(tmp_path) == []
    rc, out = run(tmp_path, cluster, {'gpu-a': False, 'gpu-b': True}, '-e', 'gpu_health_action=remediate',
                  *drm_args, reset_helps=True, held_while=held, **drm)
    assert rc == 0, out[-5000:]
    # nvidia_drm unloaded for the reset (on gpu-a only: both hosts are this machine, one module) and loaded again.
    assert modprobe_calls(tmp_path) == ['-r nvidia_drm', 'nvidia_drm']
    assert (tmp_path / 'sys-module' / 'nvidia_drm').is_dir() and not (tmp_path / 'record' / 'nvidia_drm-unloaded').exists()
    # The GPU no process holds was reset, once, on the unhealthy node only (the exporter's and the device plugin's
    # pods were off then: the stand-in refuses a reset while either runs).
    assert (tmp_path / 'gpu-a.resets').read_text().split() == ['-r', '-i', '0']
    # Both are back on the node (new pods of their DaemonSets) and the Node's labels gone.
    labels = cluster.nodes['n-gpu-a']['metadata']['labels']
    assert pause['label'] not in labels and support().DEVICE_PLUGIN_PAUSE['label'] not in labels, labels
    back = sorted(p['metadata']['name'] for p in cluster.pods.values() if p['spec']['nodeName'] == 'n-gpu-a')
    assert len(back) == 2 and not set(back) & {'nvidia-dcgm-exporter-7x2kq', 'nvidia-device-plugin-x7k2p'}, back
    assert not (tmp_path / 'gpu-b.resets').exists()
    # Out of service for the reset (cordoned first), back in service after it, labelled done; the lock released.
    assert [v for _i, v in cluster.cordon_writes('n-gpu-a')][:1] == [True], cluster.requests
    node = cluster.nodes['n-gpu-a']
    assert not node['spec'].get('unschedulable'), node['spec']
    assert node['metadata']['labels'][REMEDIATION] == 'done'
    assert not [p for m, p, _b in node_writes(cluster) if p.split('?')[0] == '/api/v1/nodes/n-gpu-b']
    assert lease_holder(cluster) in (None, '')
    assert 'remediated' in out


def test_remediate_releases_our_quarantine_of_a_node_healthy_after_its_reset(tmp_path, cluster):
    add_node(cluster, 'n-gpu-a', [SOMEONE_ELSES])
    add_node(cluster, 'n-gpu-b')
    health = {'gpu-a': False, 'gpu-b': False}
    rc, out = run(tmp_path, cluster, health, '-e', 'gpu_health_action=quarantine', '-e', 'gpu_health_max_quarantined=2',
                  reset_helps=True)
    assert rc == 0, out[-4000:]
    assert all(n['spec']['taints'][-1]['key'] == TAINT for n in cluster.nodes.values())
    # Remediate gpu-a only (gpu-b is not in this run's inventory); its reset helps.
    rc, out = run(tmp_path, cluster, {'gpu-a': False}, '-e', 'gpu_health_action=remediate', reset_helps=True)
    assert rc == 0, out[-5000:]
    assert (tmp_path / 'gpu-a.resets').read_text().split() == ['-r', '-i', '0']
    node = cluster.nodes['n-gpu-a']
    # Healthy after its reset: our taint, label and findings are gone; the other taint stays; back in service.
    assert node['spec']['taints'] == [SOMEONE_ELSES], node['spec']
    assert LABEL not in node['metadata']['labels'] and FINDINGS not in node['metadata'].get('annotations', {})
    assert not node['spec'].get('unschedulable')
    assert 'GPU HEALTH QUARANTINE: quarantined none; released n-gpu-a' in out.replace('\n', ' '), out[-3000:]
    # n-gpu-b was not in this run: its quarantine stays.
    assert cluster.nodes['n-gpu-b']['spec']['taints'][-1]['key'] == TAINT
    assert lease_holder(cluster) in (None, '')


def test_a_node_lost_in_its_remediation_stays_cordoned_failed_and_the_lock_is_released(tmp_path, cluster):
    """A node that no longer answers after its GPU reset (as after a reboot it never came back from): before the
    change blocks carried ignore_unreachable, Ansible dropped it from the play, skipped its rescue and, as it was the
    whole batch, ended the playbook before the lock was released (the next run waited for it)."""
    add_node(cluster, 'n-gpu-a')
    add_node(cluster, 'n-gpu-b')
    rc, out = run(tmp_path, cluster, {'gpu-a': False, 'gpu-b': False}, '-e', 'gpu_health_action=remediate',
                  connection='lossy_local', reset_helps=True, lost_on_reset=True)
    flat = out.replace('\n', ' ')
    assert rc != 0, out[-4000:]
    # The lost host was never dropped from the play as UNREACHABLE (its rescue and the stop step ran for it).
    assert not re.search(r'unreachable=[1-9]', out.rsplit('PLAY RECAP', maxsplit=1)[-1]), out[-2000:]
    lost = [name for name in ('gpu-a', 'gpu-b') if (tmp_path / ('%s.lost' % name)).exists()]
    assert len(lost) == 1, 'exactly one host of the two must have been reset and lost: %s' % lost
    other = 'gpu-b' if lost == ['gpu-a'] else 'gpu-a'
    node = cluster.nodes['n-' + lost[0]]
    # Recorded failed from the API host, and kept cordoned.
    assert node['spec'].get('unschedulable') is True, node['spec']
    assert node['metadata']['labels'][REMEDIATION] == 'failed', node['metadata']['labels']
    reason = node['metadata']['annotations']['baremetal.gpu/driver-upgrade.reason']
    assert 'does not answer' in reason, reason
    # The rollout stopped after that batch: the other node was not touched.
    assert not (tmp_path / ('%s.resets' % other)).exists()
    assert not [p for m, p, _b in node_writes(cluster) if p.split('?')[0] == '/api/v1/nodes/n-' + other]
    # The lock was released, and the run names the lost host.
    assert lease_holder(cluster) in (None, ''), cluster.leases
    assert 'FAILED on %s' % lost[0] in flat and 'so the rollout stops after this batch' in flat, out[-3000:]


def test_a_gpu_reset_that_hangs_is_killed_and_the_node_stays_cordoned_failed(tmp_path, cluster):
    """A reset stuck in the driver (the stand-in never returns) is killed after gpu_health_reset_timeout: the node
    fails its remediation naming the variable, stays cordoned and labelled failed, and the lock is released. Before
    the time limit the run, its batch and the lock waited for the reset for ever."""
    add_node(cluster, 'n-gpu-a')
    rc, out = run(tmp_path, cluster, {'gpu-a': False}, '-e', 'gpu_health_action=remediate', '-e',
                  'gpu_health_reset_timeout=2', hang_on_reset=True)
    flat = out.replace('\n', ' ')
    assert rc != 0, out[-4000:]
    assert (tmp_path / 'gpu-a.resets').exists(), 'the reset was never started'
    assert 'GPU 0: the reset did not finish within gpu_health_reset_timeout (2 s) and was killed' in flat, out[-3000:]
    node = cluster.nodes['n-gpu-a']
    assert node['spec'].get('unschedulable') is True, node['spec']
    assert node['metadata']['labels'][REMEDIATION] == 'failed', node['metadata']['labels']
    assert lease_holder(cluster) in (None, ''), cluster.leases


def test_a_run_killed_at_the_gpu_reset_is_finished_by_the_next_one(tmp_path, cluster):
    """kill -9 of the remediation when its GPU reset starts: the node is cordoned, its exporter pod off (the Node's
    label), its GPU services stopped, the lock held. The GPU reads healthy afterwards (as when the killed reset went
    through). The next run takes the expired lock over, plans again under it, resumes the node (its Node label says
    upgrading), lets the exporter back although it resets nothing, and puts the node back in service as it was
    before the killed run: nothing left cordoned or labelled, the lock released. nvidia_drm, unloaded for the killed
    reset, is loaded again by that run (the role's marker)."""
    pause, held = two_nodes_and_an_exporter(tmp_path, cluster)
    drm_args, drm = nvidia_drm_loaded(tmp_path)
    # A lease just longer than the waits of one batch (30 s here), so that the next run can take it over.
    proc = start(tmp_path, cluster, {'gpu-a': False, 'gpu-b': True}, '-e', 'gpu_health_action=remediate',
                 '-e', 'node_maintenance_lock_lease_duration=31', *drm_args, reset_helps=True, held_while=held, **drm)
    out = killed_at(proc, 'TASK [baremetal.gpu.gpu_health : Remediate | Reset the GPUs no process holds',
                    'exporter_pause.yml for gpu-a')
    # nvidia_drm was unloaded for the reset, with the role's marker left on the node.
    assert modprobe_calls(tmp_path) == ['-r nvidia_drm'] and (tmp_path / 'record' / 'nvidia_drm-unloaded').exists()
    node = cluster.nodes['n-gpu-a']
    assert node['spec'].get('unschedulable') is True and node['metadata']['labels'][REMEDIATION] == 'upgrading', out[-3000:]
    assert node['metadata']['labels'][pause['label']] == pause['value'] and not os.path.exists(held)
    plugin = support().DEVICE_PLUGIN_PAUSE
    assert node['metadata']['labels'][plugin['label']] == plugin['value']
    assert lease_holder(cluster)
    rc, out = run(tmp_path, cluster, {'gpu-a': True, 'gpu-b': True}, '-e', 'gpu_health_action=remediate',
                  '-e', 'node_maintenance_lock_timeout=90', *drm_args, held_while=held, **drm)
    assert rc == 0, out[-5000:]
    assert 'expired' in out, out[-3000:]
    # The next run loaded it again, although it reset nothing.
    assert modprobe_calls(tmp_path) == ['-r nvidia_drm', 'nvidia_drm']
    assert (tmp_path / 'sys-module' / 'nvidia_drm').is_dir() and not (tmp_path / 'record' / 'nvidia_drm-unloaded').exists()
    node = cluster.nodes['n-gpu-a']
    assert not node['spec'].get('unschedulable'), node['spec']
    assert node['metadata']['labels'][REMEDIATION] == 'done'
    assert pause['label'] not in node['metadata']['labels'] and os.path.exists(held), node['metadata']['labels']
    assert plugin['label'] not in node['metadata']['labels']
    assert not (tmp_path / 'gpu-a.resets').exists(), 'nothing to reset: the GPU reads healthy'
    assert not cluster.nodes['n-gpu-b']['spec'].get('unschedulable')
    assert lease_holder(cluster) in (None, ''), cluster.leases


def test_a_quarantine_killed_in_its_drain_is_finished_by_the_next_run_without_a_second_taint(tmp_path, cluster):
    """kill -9 of the quarantine with gpu_health_drain (its whole process group) as it deletes the GPU pods of the
    Node it just tainted: the taint is on, the GPU pod still runs, the lock is held. The next run takes the expired
    lock over, finds the Node under our taint already (no second taint, the Node not written again), deletes the GPU
    pod only, and releases the lock."""
    add_node(cluster, 'n-gpu-a')
    add_node(cluster, 'n-gpu-b')
    for item in (pod('train-0', 'ml', {'nvidia.com/gpu': '1'}, owner=('StatefulSet', 'train'), node='n-gpu-a'),
                 pod('web-0', 'default', {'cpu': '1'}, owner=('ReplicaSet', 'web'), node='n-gpu-a'),
                 pod('infer-0', 'ml', {'nvidia.com/gpu': '1'}, owner=('StatefulSet', 'infer'), node='n-gpu-b')):
        cluster.add_pod(item)
    health = {'gpu-a': False, 'gpu-b': True}
    # A lease just longer than the waits of one batch (30 s here), so that the next run can take it over.
    proc = start(tmp_path, cluster, health, '-e', 'gpu_health_action=quarantine', '-e', 'gpu_health_drain=true',
                 '-e', 'node_maintenance_lock_lease_duration=31')
    out = killed_at(proc, 'TASK [baremetal.gpu.node_maintenance : GPU pods | Delete the pods that hold GPUs',
                    'Quarantine | Taint or release each Node')
    ours = [t for t in cluster.nodes['n-gpu-a']['spec'].get('taints') or [] if t['key'] == TAINT]
    assert len(ours) == 1 and ('ml', 'train-0') in cluster.pods, out[-3000:]
    assert lease_holder(cluster)
    writes = len(node_writes(cluster))
    rc, out = run(tmp_path, cluster, health, '-e', 'gpu_health_action=quarantine', '-e', 'gpu_health_drain=true',
                  '-e', 'node_maintenance_lock_timeout=90')
    assert rc == 0, out[-5000:]
    assert 'expired' in out, out[-3000:]
    assert sorted(cluster.pods) == [('default', 'web-0'), ('ml', 'infer-0')]
    assert len(node_writes(cluster)) == writes
    assert [t for t in cluster.nodes['n-gpu-a']['spec'].get('taints') or [] if t['key'] == TAINT] == ours
    assert not [t for t in cluster.nodes['n-gpu-b']['spec'].get('taints') or [] if t['key'] == TAINT]
    assert lease_holder(cluster) in (None, ''), cluster.leases


def kernel_log_command(tmp_path, host):
    """The kernel-log command the module ran on ``host`` (the report's commands), or None."""
    report = json.loads((tmp_path / 'reports' / 'gpu_health.json').read_text())
    for argv in report['nodes'][host]['commands']:
        if os.path.basename(argv[0]) in ('journalctl', 'dmesg'):
            return argv
    return None


def test_a_fault_the_remediation_cleared_is_read_from_the_remediation_on(tmp_path, cluster):
    """quarantine -> remediate -> quarantine: after a successful remediation the node keeps its time (the clock read
    before the reset) in a record, and every later check reads the kernel log from then on (journalctl --since)
    instead of since boot, where the Xid the reset cleared would quarantine the node again. This machine's own
    journalctl runs (the module takes it from /usr/bin before PATH) and its log holds no Xid: what is checked is the
    time the module is given; journalctl's --since does the filtering (the module's unit tests cover the parsing)."""
    add_node(cluster, 'n-gpu-a')
    rc, out = run(tmp_path, cluster, {'gpu-a': False}, '-e', 'gpu_health_action=quarantine', journal=True,
                  reset_helps=True)
    assert rc == 0 and 'quarantined n-gpu-a' in out, out[-4000:]
    assert '--since' not in kernel_log_command(tmp_path, 'gpu-a'), 'before any remediation: the whole boot'
    rc, out = run(tmp_path, cluster, {'gpu-a': False}, '-e', 'gpu_health_action=remediate', journal=True,
                  reset_helps=True)
    assert rc == 0, out[-5000:]
    assert not cluster.nodes['n-gpu-a']['spec'].get('taints'), cluster.nodes['n-gpu-a']['spec']
    record = json.loads((tmp_path / 'state' / 'gpu-health-remediated.json').read_text())
    assert record['step'] == 'reset_gpu' and re.match(r'^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$', record['since']), record
    rc, out = run(tmp_path, cluster, {'gpu-a': True}, '-e', 'gpu_health_action=quarantine', journal=True)
    assert rc == 0, out[-4000:]
    assert 'GPU HEALTH QUARANTINE: quarantined none' in out.replace('\n', ' '), out[-3000:]
    argv = kernel_log_command(tmp_path, 'gpu-a')
    assert argv[-2:] == ['--since', record['since']], argv
    # gpu_health_kernel_log_since, when set, still wins.
    rc, out = run(tmp_path, cluster, {'gpu-a': True}, '-e', '{"gpu_health_kernel_log_since": "2000-01-01 00:00:00"}',
                  journal=True)
    assert rc == 0, out[-3000:]
    assert kernel_log_command(tmp_path, 'gpu-a')[-2:] == ['--since', '2000-01-01 00:00:00']


def test_remediate_keeps_a_node_that_is_still_unhealthy_cordoned_and_stops(tmp_path, cluster):
    add_node(cluster, 'n-gpu-a')
    rc, out = run(tmp_path, cluster, {'gpu-a': False}, '-e', 'gpu_health_action=remediate', reset_helps=False)
    assert rc != 0
    assert (tmp_path / 'gpu-a.resets').exists()
    node = cluster.nodes['n-gpu-a']
    assert node['spec'].get('unschedulable') is True
    assert node['metadata']['labels'][REMEDIATION] == 'failed'
    reason = node['metadata']['annotations']['baremetal.gpu/driver-upgrade.reason']
    assert 'still unhealthy after the reset gpu' in reason, reason
    assert 'so the rollout stops after this batch' in out.replace('\n', ' ')
    # The stop names the label this remediation gave the node, not the driver upgrade's.
    assert 'labelled baremetal.gpu/gpu-remediation=failed' in out.replace('\n', ' '), out[-3000:]
    assert lease_holder(cluster) in (None, '')


def test_remediate_reboots_only_when_allowed_and_never_the_machine_running_ansible(tmp_path, cluster):
    add_node(cluster, 'n-gpu-a')
    # The T4 capture lists 15 processes on its GPU: a pending page retirement needs a reboot instead of a reset.
    rc, out = run(tmp_path, cluster, {'gpu-a': False}, '-e', 'gpu_health_action=remediate', capture=T4)
    assert rc == 0, out[-4000:]
    assert 'REBOOT NEEDED, not done (gpu_health_remediate_reboot is false)' in out.replace('\n', ' ')
    assert not node_writes(cluster) and not (tmp_path / 'gpu-a.resets').exists()
    rc, out = run(tmp_path, cluster, {'gpu-a': False}, '-e', 'gpu_health_action=remediate',
                  '-e', 'gpu_health_remediate_reboot=true', capture=T4)
    assert rc != 0
    assert 'is a container or the machine running Ansible: not rebooted' in out.replace('\n', ' '), out[-4000:]
    node = cluster.nodes['n-gpu-a']
    assert node['spec'].get('unschedulable') is True and node['metadata']['labels'][REMEDIATION] == 'failed'


def test_a_reboot_planned_for_a_gpu_a_pod_held_becomes_a_reset_once_the_drain_freed_it(tmp_path, cluster):
    """Reset or reboot is decided again once the node is out of service: the plan read a process on the GPU (a pod's)
    and needed a reboot; after the cordon and the GPU pods' deletion nothing holds it, and the GPU is reset instead
    (this machine, which runs Ansible, would have refused the reboot)."""
    add_node(cluster, 'n-gpu-a')
    rc, out = run(tmp_path, cluster, {'gpu-a': False}, '-e', 'gpu_health_action=remediate',
                  '-e', 'gpu_health_remediate_reboot=true', reset_helps=True, held_first_read=True)
    assert rc == 0, out[-4000:]
    text = out.replace('\n', ' ')
    assert '1 process(es) hold the GPU; a reboot instead' in text, out[-4000:]
    assert 'DECIDED AGAIN after the drain on gpu-a: reset gpu instead of reboot' in text, out[-4000:]
    assert (tmp_path / 'gpu-a.resets').read_text().split() == ['-r', '-i', '0']
    node = cluster.nodes['n-gpu-a']
    assert not node['spec'].get('unschedulable') and node['metadata']['labels'][REMEDIATION] == 'done'


def test_remediate_without_a_cluster_api_resets_nodes_outside_a_cluster(tmp_path, cluster):
    # No kubeconfig anywhere and no RKE2 on the node: no node of a cluster, nothing to cordon; the reset still runs.
    rc, out = run(tmp_path, cluster, {'gpu-a': False}, '-e', 'gpu_health_action=remediate', reset_helps=True,
                  kubeconfig=str(tmp_path / 'no-such-kubeconfig'))
    assert rc == 0, out[-4000:]
    assert (tmp_path / 'gpu-a.resets').read_text().split() == ['-r', '-i', '0']
    assert 'SKIPPED: no kubeconfig' in out.replace('\n', ' ')
    assert not cluster.requests


def test_a_fabric_registration_in_progress_is_waited_for_and_judged_after(tmp_path, cluster):
    # An NVSwitch system right after a boot: nvidia-smi says the NVLink fabric registration is In Progress, then
    # Completed (the real H100 capture with its fabric state and status changed by the test; that card has none).
    add_node(cluster, 'n-gpu-a')
    with open(H100, encoding='utf-8') as handle:
        capture = handle.read()
    fabric = '\t\t\t<state>N/A</state>\n\t\t\t<status>N/A</status>'
    assert capture.count(fabric) == 1
    for name, state, status in (('progress', 'In Progress', 'N/A'), ('done', 'Completed', 'Success')):
        (tmp_path / ('%s.xml' % name)).write_text(capture.replace(
            fabric, '\t\t\t<state>%s</state>\n\t\t\t<status>%s</status>' % (state, status)))
    smi = tmp_path / 'nvidia-smi-fabric'
    smi.write_text('#!/bin/sh\n# TEST ONLY: In Progress at the first reading, Completed after it\n'
                   'echo "$@" >> %(d)s/fabric.calls\n'
                   'if [ "$(wc -l < %(d)s/fabric.calls)" -gt 1 ]; then cat %(d)s/done.xml; else cat %(d)s/progress.xml; fi\n'
                   % {'d': tmp_path})
    smi.chmod(0o755)
    # The default wait (gpu_health_fabric_wait 120): read again 5 s later, Completed, healthy.
    rc, out = run(tmp_path, cluster, {'gpu-a': True}, '-e', 'gpu_health_nvidia_smi_path=%s' % smi)
    assert rc == 0, out[-4000:]
    assert (tmp_path / 'fabric.calls').read_text().splitlines() == ['-q -x', '-q -x']
    assert '"gpu-a: HEALTHY' in out and 'fabric ->' not in out, out[-3000:]
    # No wait: the same first reading is a critical finding (the report says so; gpu_health_fail_on_unhealthy is
    # off by default, so the run itself passes).
    (tmp_path / 'fabric.calls').unlink()
    rc, out = run(tmp_path, cluster, {'gpu-a': True}, '-e', 'gpu_health_nvidia_smi_path=%s' % smi,
                  '-e', 'gpu_health_fabric_wait=0')
    assert rc == 0, out[-4000:]
    assert '"gpu-a: UNHEALTHY' in out
    assert ('critical GPU 0 fabric -> CHECK_FABRIC_MANAGER: NVLink fabric registration state In Progress, status N/A '
            '(expected Completed') in ' '.join(out.split()), out[-3000:]
    assert (tmp_path / 'fabric.calls').read_text().splitlines() == ['-q -x']


def test_a_node_read_while_another_run_changed_it_is_judged_again_under_the_lock(tmp_path, cluster):
    """The GPUs are read while another run (an upgrade) holds the lock and works on the node: its reading is
    unhealthy. That run finishes and releases the lock while the quarantine waits for it; the quarantine, under the
    lock now, reads the GPUs again, finds them healthy, and taints nothing (it used to taint the node for the reading
    taken in the middle of the other run's change)."""
    add_node(cluster, 'n-gpu-a')
    cluster.hold_lease(*LEASE, holder='upgrade-run@ctl-a@2026-11-29T09:00:00.000000Z')
    proc = start(tmp_path, cluster, {'gpu-a': False}, '-e', 'gpu_health_action=quarantine',
                 '-e', 'node_maintenance_lock_timeout=120')
    seen = []

    def waiting():
        seen.append(proc.stdout.readline())
        return 'Lock | Take the Lease' in seen[-1]
    while not waiting():
        assert proc.poll() is None or seen[-1], ''.join(seen)[-3000:]
    time.sleep(3)
    # The other run's change ends: the node is healthy, the lock released.
    (tmp_path / 'gpu-a.xml').write_text((tmp_path / 'gpu-a-well.xml').read_text())
    cluster.release_lease(*LEASE)
    out, _err = proc.communicate(timeout=300)
    out = ''.join(seen) + out
    assert proc.returncode == 0, out[-4000:]
    # (Why: a wait, or, when the release came before the lock's first read, the lock written since the GPUs were read.)
    assert 'READING THE GPUS AGAIN under the lock: ' in out, out[-4000:]
    assert 'GPU HEALTH QUARANTINE: quarantined none; released none' in out, out[-3000:]
    assert node_writes(cluster) == []
    assert not cluster.nodes['n-gpu-a']['spec'].get('taints')
    assert lease_holder(cluster) in (None, '')
