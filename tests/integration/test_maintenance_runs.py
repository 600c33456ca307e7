"""The maintenance engine across runs and batches, against the API double (k8s_api_double.py).

No Kubernetes API runs here: no node was really cordoned and no Lease was held on a real API server by these tests.
The double answers Leases as the API server does (201 on create, 409 AlreadyExists, 409 Conflict on a stale
resourceVersion) and keeps Node objects recorded from a real RKE2 cluster (tests/fixtures/k8s-nodes, renamed for
each host). roles/upgrade's entry points run for real through baremetal.gpu.maintenance_lock and kubernetes.core:

- lock / unlock: two runs at once; the second waits for the first and then proceeds, or fails naming the holder;
  an expired lock is taken over with a warning; the budget holds across runs (the second run's batch gate counts
  the node the first one left out of service);
- batch / enter / failed / stop: the batched play of playbooks/upgrade_driver.yml with the driver change replaced
  by a stub that fails on one host of a batch of 3: the other two finish and are uncordoned, the failed one stays
  cordoned with its reason, run and time, the later batch is not started, and the lock is released.
"""
import copy
import json
import os
import subprocess
import time

import yaml

from conftest import ROOT, ansible_env, cluster_play, pod, real_node

NORI = real_node()
STATE = 'baremetal.gpu/driver-upgrade'
REASON = 'baremetal.gpu/driver-upgrade.reason'
RUN = 'baremetal.gpu/maintenance.run'
WHEN = 'baremetal.gpu/maintenance.time'
LEASE = ('kube-system', 'baremetal-gpu-maintenance')
HOSTS = ['gpu-a', 'gpu-b', 'gpu-c', 'gpu-d']

LOCK_PLAY = """---
- name: A run that takes the lock, works, and releases it
  hosts: maint
  gather_facts: false
  vars:
    # What the engine's enter step passes to its cordon, uncordon and mark_failed for the rollout kind upgrade.
    __node_maintenance_state_label: baremetal.gpu/driver-upgrade
    __node_maintenance_enter_reason: to driver branch {{ upgrade_driver_branch }}
  tasks:
    - name: Take the lock
      ansible.builtin.include_role:
        name: baremetal.gpu.node_maintenance
        tasks_from: lock
    - name: Work on the first batch (the gate, then the change's first step)
      ansible.builtin.include_role:
        name: baremetal.gpu.node_maintenance
        tasks_from: batch
    - name: Take the node out of service
      ansible.builtin.include_role:
        name: baremetal.gpu.node_maintenance
        tasks_from: cordon
    - name: Hold the lock until the test says so (the change)
      ansible.builtin.wait_for:
        path: "{{ release_file }}"
        timeout: 60
      when: release_file is defined
    - name: End here without releasing (a killed run)
      ansible.builtin.meta: end_play
      when: killed | default(false) | bool
    - name: Back in service
      ansible.builtin.include_role:
        name: baremetal.gpu.node_maintenance
        tasks_from: uncordon

# The release is a play of its own, as in the playbooks: a host the gate deferred ended the batched play.
- name: Release the lock
  hosts: maint
  gather_facts: false
  tasks:
    - name: Release the lock
      ansible.builtin.include_role:
        name: baremetal.gpu.node_maintenance
        tasks_from: unlock
      when: not (killed | default(false) | bool)
"""

FILE_PLAY = """---
- name: A run without a cluster API
  hosts: maint
  gather_facts: false
  tasks:
    - name: Take the lock
      ansible.builtin.include_role:
        name: baremetal.gpu.node_maintenance
        tasks_from: lock
    - name: Renew it before the batch
      ansible.builtin.include_role:
        name: baremetal.gpu.node_maintenance
        tasks_from: batch
    - name: Hold the lock until the test says so
      ansible.builtin.wait_for:
        path: "{{ release_file }}"
        timeout: 60
      when: release_file is defined
    - name: Release the lock
      ansible.builtin.include_role:
        name: baremetal.gpu.node_maintenance
        tasks_from: unlock
"""

BATCH_PLAY = """---
- name: Lock
  hosts: maint
  gather_facts: false
  tasks:
    - name: Take the lock
      ansible.builtin.include_role:
        name: baremetal.gpu.node_maintenance
        tasks_from: lock

- name: The batched play of upgrade_driver.yml, the driver change replaced by a stub
  hosts: maint
  gather_facts: false
  vars:
    # What the engine's enter step passes to its cordon, uncordon and mark_failed for the rollout kind upgrade.
    __node_maintenance_state_label: baremetal.gpu/driver-upgrade
    __node_maintenance_enter_reason: to driver branch {{ upgrade_driver_branch }}
  serial: [3, 1]
  max_fail_percentage: 0
  pre_tasks:
    - name: Renew the lock, count the budget, shrink the batch
      ansible.builtin.include_role:
        name: baremetal.gpu.node_maintenance
        tasks_from: batch
  tasks:
    - name: One node (main.yml's block)
      block:
        - name: Enter
          ansible.builtin.include_role:
            name: baremetal.gpu.node_maintenance
            tasks_from: cordon
        - name: The change (a stub that takes a while on the others and fails on gpu-b at once)
          ansible.builtin.fail:
            msg: apt cannot install nvidia-driver-599
          when: inventory_hostname == 'gpu-b'
        - name: The others go on changing after gpu-b failed
          ansible.builtin.pause:
            seconds: 1
        - name: Leave
          ansible.builtin.include_role:
            name: baremetal.gpu.node_maintenance
            tasks_from: uncordon
      rescue:
        - name: Failed
          ansible.builtin.include_role:
            name: baremetal.gpu.node_maintenance
            tasks_from: mark_failed
  post_tasks:
    - name: Stop
      ansible.builtin.include_role:
        name: baremetal.gpu.node_maintenance
        tasks_from: stop

- name: Release
  hosts: maint
  gather_facts: false
  tasks:
    - name: Release the lock
      ansible.builtin.include_role:
        name: baremetal.gpu.node_maintenance
        tasks_from: unlock
      when: not (killed | default(false) | bool)
"""


def node_named(name, **labels):
    node = copy.deepcopy(NORI)
    node['metadata']['name'] = name
    node['metadata']['labels']['kubernetes.io/hostname'] = name
    node['metadata']['labels'].update(labels)
    return node


def plan(hosts, serial, limit):
    return {'noop': False, 'order': hosts, 'serial': serial, 'limit': limit,
            'nodes': dict((h, {'in_cluster': True, 'role': 'agent', 'disruptive': True}) for h in hosts),
            'node_names': dict((h, 'n-' + h) for h in hosts)}


def start(tmp_path, name, cluster, hosts, play, extra=None, api=True):
    """Start ansible-playbook (one run) in the background; returns the Popen, output in <name>.out."""
    work = tmp_path / name
    work.mkdir()
    inventory = {'all': {
        'hosts': dict((h, {'ansible_connection': 'local', 'ansible_become': False, 'baremetal_gpu_node_name': 'n-' + h})
                      for h in hosts),
        'children': {'maint': {'hosts': dict((h, {}) for h in hosts)}, 'gpu_nodes': {'hosts': dict((h, {}) for h in hosts)}}}}
    if api:
        inventory['all']['children']['baremetal_gpu_cluster_api'] = {
            'hosts': {'localhost': {'ansible_connection': 'local', 'ansible_become': False}}}
    variables = {'upgrade_driver_branch': '595', 'cluster_kubeconfig': cluster.kubeconfig,
                 'node_maintenance_capacity_timeout': 5, 'node_maintenance_node_ready_timeout': 10, 'node_maintenance_gpu_pod_deletion_timeout': 10,
                 'node_maintenance_state_dir': str(work / 'state'), 'node_maintenance_lock_timeout': 30, 'node_maintenance_lock_lease_duration': 600,
                 'node_maintenance_upgrade_plan': plan(hosts, [len(hosts)], len(hosts))}
    if not api:
        del variables['cluster_kubeconfig']     # no cluster: as an inventory without one
    variables.update(extra or {})
    (work / 'inventory.yml').write_text(yaml.safe_dump(inventory))
    (work / 'vars.yml').write_text(yaml.safe_dump(variables))
    (work / 'play.yml').write_text(cluster_play(play))
    out = open(str(work / 'out.txt'), 'w')
    proc = subprocess.Popen(['ansible-playbook', '-i', str(work / 'inventory.yml'), str(work / 'play.yml'),
                             '-e', '@' + str(work / 'vars.yml')], stdout=out, stderr=subprocess.STDOUT, text=True,
                            env=ansible_env())
    proc.out_path = str(work / 'out.txt')
    return proc


def finish(proc, timeout=240):
    proc.wait(timeout=timeout)
    with open(proc.out_path) as handle:
        return proc.returncode, handle.read()


def wait_for(predicate, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.3)
    return False


def holder(cluster):
    return ((cluster.leases.get(LEASE) or {}).get('spec') or {}).get('holderIdentity')


def test_a_second_run_waits_for_the_first_then_proceeds(tmp_path, cluster):
    cluster.add_node(node_named('n-gpu-a'))
    cluster.add_node(node_named('n-gpu-b'))
    release = tmp_path / 'release-first'
    first = start(tmp_path, 'first', cluster, ['gpu-a'], LOCK_PLAY, {'release_file': str(release)})
    assert wait_for(lambda: holder(cluster) and cluster.nodes['n-gpu-a']['spec'].get('unschedulable')), \
        finish(first, 5)[1][-3000:]
    first_holder = holder(cluster)

    # A second run with a short timeout fails naming the holder, before it touches anything.
    impatient = start(tmp_path, 'impatient', cluster, ['gpu-b'], LOCK_PLAY, {'node_maintenance_lock_timeout': 2})
    rc, out = finish(impatient)
    assert rc != 0
    assert 'the maintenance lock is held by %s until' % first_holder in out, out[-3000:]
    assert 'timeout 2 s' in out
    assert not cluster.nodes['n-gpu-b']['spec'].get('unschedulable')
    assert holder(cluster) == first_holder

    # A patient one waits, and takes the lock once the first run released it.
    second = start(tmp_path, 'second', cluster, ['gpu-b'], LOCK_PLAY, {'node_maintenance_lock_timeout': 90})
    time.sleep(4)
    assert holder(cluster) == first_holder and not cluster.nodes['n-gpu-b']['spec'].get('unschedulable')
    release.write_text('go')
    rc, out = finish(first)
    assert rc == 0, out[-3000:]
    rc, out = finish(second)
    assert rc == 0, out[-4000:]
    assert 'MAINTENANCE LOCK Lease kube-system/baremetal-gpu-maintenance held by' in out
    assert 'after waiting' in out and first_holder in out
    # Both nodes back, the lock released by the second run; every Lease write carried the version read.
    assert not cluster.nodes['n-gpu-a']['spec'].get('unschedulable')
    assert not cluster.nodes['n-gpu-b']['spec'].get('unschedulable')
    assert holder(cluster) is None
    assert cluster.leases[LEASE]['spec']['leaseTransitions'] >= 1
    puts = [b for m, p, b in cluster.requests if m == 'PUT' and 'leases' in p]
    assert puts and all(b['metadata'].get('resourceVersion') for b in puts)


def test_a_killed_runs_lock_is_taken_over_and_its_node_counts_against_the_budget(tmp_path, cluster):
    cluster.add_node(node_named('n-gpu-a'))
    cluster.add_node(node_named('n-gpu-b'))
    # The first run is killed after it cordoned its node: its lock (4 s) and its node stay. (A lease must outlast the
    # waits of one batch, so those are 1 s each here.)
    killed = start(tmp_path, 'killed', cluster, ['gpu-a'], LOCK_PLAY, {
        'killed': True, 'node_maintenance_lock_lease_duration': 4, 'node_maintenance_capacity_timeout': 1,
        'node_maintenance_node_ready_timeout': 1, 'node_maintenance_gpu_pod_deletion_timeout': 1})
    rc, out = finish(killed)
    assert rc == 0, out[-3000:]
    dead = holder(cluster)
    assert dead and cluster.nodes['n-gpu-a']['spec']['unschedulable'] is True
    assert cluster.nodes['n-gpu-a']['metadata']['labels'][STATE] == 'upgrading'
    time.sleep(4.5)
    # The next run (node_maintenance_max_unavailable 1) takes the expired lock over with a warning; its gate counts the node the
    # killed run left out of service, so its own node is deferred, not cordoned.
    second = start(tmp_path, 'second', cluster, ['gpu-b'], LOCK_PLAY, {'node_maintenance_upgrade_plan': plan(['gpu-b'], [1], 1)})
    rc, out = finish(second)
    # A run that deferred a host ends failed, naming it, with its lock released.
    assert rc != 0, out[-4000:]
    assert 'DEFERRED, not changed in this run: gpu-b' in out, out[-4000:]
    assert holder(cluster) is None
    assert '[WARNING]: the maintenance lock held by %s expired' % dead in out.replace('\n', ' '), out[-4000:]
    assert 'DEFERRED (no room in node_maintenance_max_unavailable; the next run takes them): gpu-b' in out
    assert 'n-gpu-a (unschedulable)' in out
    assert not cluster.nodes['n-gpu-b']['spec'].get('unschedulable')
    assert not [p for m, p, b in cluster.requests if m == 'PATCH' and p.endswith('/n-gpu-b')]


def test_a_failed_node_stops_the_rollout_after_its_batch_finished(tmp_path, cluster):
    for host in HOSTS:
        cluster.add_node(node_named('n-' + host))
    run = start(tmp_path, 'batches', cluster, HOSTS, BATCH_PLAY, {'node_maintenance_upgrade_plan': plan(HOSTS, [3, 1], 4)})
    rc, out = finish(run)
    assert rc != 0, out[-4000:]
    nodes = cluster.nodes
    # The other two of the batch finished their change and are back in service.
    for name in ('n-gpu-a', 'n-gpu-c'):
        assert nodes[name]['metadata']['labels'][STATE] == 'done', out[-4000:]
        assert not nodes[name]['spec'].get('unschedulable')
    # The failed one stays cordoned, with its reason, the run and the time.
    failed = nodes['n-gpu-b']
    assert failed['spec']['unschedulable'] is True
    assert failed['metadata']['labels'][STATE] == 'failed'
    annotations = failed['metadata']['annotations']
    assert 'apt cannot install nvidia-driver-599' in annotations[REASON]
    assert annotations[RUN] and annotations[RUN].count('@') >= 2
    assert annotations[WHEN].endswith('Z')
    # The later batch was not started, and the lock was released by the stop step.
    assert STATE not in nodes['n-gpu-d']['metadata']['labels']
    assert not [p for m, p, b in cluster.requests if m == 'PATCH' and p.endswith('/n-gpu-d')]
    assert holder(cluster) is None
    assert 'gpu-b failed (The change (a stub' in out and 'the rollout stops after this batch' in out


def test_without_a_cluster_api_a_lock_file_on_the_node(tmp_path, cluster):
    state = tmp_path / 'node-state'
    lock_file = state / 'maintenance-lock.json'
    release = tmp_path / 'release-first'
    common = {'node_maintenance_state_dir': str(state)}
    first = start(tmp_path, 'first', cluster, ['gpu-a'], FILE_PLAY, dict(common, release_file=str(release)), api=False)
    assert wait_for(lambda: lock_file.exists() and 'holderIdentity' in lock_file.read_text()), finish(first, 5)[1][-3000:]
    first_holder = json.loads(lock_file.read_text())['spec']['holderIdentity']
    second = start(tmp_path, 'second', cluster, ['gpu-a'], FILE_PLAY, dict(common, node_maintenance_lock_timeout=2), api=False)
    rc, out = finish(second)
    assert rc != 0
    assert 'the maintenance lock is held by %s until' % first_holder in out, out[-3000:]
    release.write_text('go')
    rc, out = finish(first)
    assert rc == 0, out[-3000:]
    assert 'MAINTENANCE LOCK files %s/maintenance-lock.json held by %s' % (state, first_holder) in out
    # Released: the holder is gone, the file stays (0644, no secret in it).
    record = json.loads(lock_file.read_text())
    assert 'holderIdentity' not in record['spec'] and oct(lock_file.stat().st_mode & 0o777) == '0o644'
    # No API was asked anything.
    assert cluster.calls() == []


UNINSTALL_PLAY = """---
- name: The uninstall's host part, cluster steps (playbooks/uninstall.yml's batched play without the roles)
  hosts: maint
  gather_facts: false
  vars:
    node_maintenance_rollout_kind: uninstall
  tasks:
    - name: Step {{ item }}
      ansible.builtin.include_role:
        name: baremetal.gpu.node_maintenance
        tasks_from: "{{ item }}"
      loop: "{{ steps }}"
"""


# The real rollout (playbooks/rollout.yml) of the uninstall, its change replaced by a stub that takes the containerd
# drop-in off (rollout_changes/uninstall_stub.yml; with release_file, it first waits for the test).
ROLLOUT_PLAY = """---
- name: The uninstall's rollout, the host part replaced by a stub
  ansible.builtin.import_playbook: %s
  vars:
    node_maintenance_rollout_kind: uninstall
    node_maintenance_rollout_change: %s
""" % (os.path.join(ROOT, 'playbooks', 'rollout.yml'),
       os.path.join(os.path.dirname(os.path.abspath(__file__)), 'rollout_changes', 'uninstall_stub.yml'))


def test_two_runs_started_together_the_second_plans_again_and_enters_nothing_the_first_finished(tmp_path, cluster):
    """Two uninstalls of the same node at once: both plan it as disruptive (its containerd drop-in is there); the
    first takes the lock and the node through its batch; the second waits, plans again under the lock, finds
    nothing left to take off, and never takes the node out of service (before the rollout plan, it cordoned the
    node the first had just finished and drained it again)."""
    cluster.add_node(node_named('n-gpu-a'))
    dropin = tmp_path / 'conf.d'
    dropin.mkdir()
    (dropin / '99-nvidia.toml').write_text('# baremetal.gpu container_toolkit\n')
    common = {'container_toolkit_containerd_dropin_dir': str(dropin), 'node_maintenance_lock_timeout': 120}
    release = tmp_path / 'release-first'
    first = start(tmp_path, 'first', cluster, ['gpu-a'], ROLLOUT_PLAY, dict(common, release_file=str(release)))
    assert wait_for(lambda: holder(cluster) and cluster.nodes['n-gpu-a']['spec'].get('unschedulable')), \
        finish(first, 5)[1][-3000:]
    second = start(tmp_path, 'second', cluster, ['gpu-a'], ROLLOUT_PLAY, common)
    # The second run planned the node as disruptive, as the first did, and waits for the lock.
    assert wait_for(lambda: 'the NVIDIA container runtime to remove' in open(second.out_path).read())
    time.sleep(2)
    release.write_text('go')
    rc, out = finish(first)
    assert rc == 0, out[-4000:]
    assert 'PLANNING AGAIN' not in out
    rc, out = finish(second)
    assert rc == 0, out[-4000:]
    assert 'PLANNING AGAIN under the lock: this run waited' in out, out[-4000:]
    assert 'gpu-a: in a cluster (the cluster API lists Node n-gpu-a); nothing to take off' in out, out[-4000:]
    # The second run never entered the node: no record of a rollout of its own, no batch message, and the node is
    # back in service, labelled done by the first run.
    assert not (tmp_path / 'second' / 'state' / 'uninstall.json').exists()
    assert (tmp_path / 'first' / 'state' / 'uninstall.json').exists()
    assert 'is in this batch' not in out
    node = cluster.nodes['n-gpu-a']
    assert not node['spec'].get('unschedulable') and node['metadata']['labels']['baremetal.gpu/uninstall'] == 'done'
    assert holder(cluster) is None


def test_without_a_cluster_api_the_rollout_plan_reads_an_empty_or_torn_lock_file(tmp_path, cluster):
    """The lock file as the lock module leaves it on a node: empty (opened, never written) or torn by a kill in the
    middle of a write. The rollout plan reads no version from it (as the module reads no lock) and goes on."""
    for name, text in (('empty', ''), ('torn', '{\n  "metadata": {\n    "name": "baremetal-gpu-maint')):
        state = tmp_path / ('state-' + name)
        state.mkdir()
        (state / 'maintenance-lock.json').write_text(text)
        dropin = tmp_path / ('conf.d-' + name)
        dropin.mkdir()
        (dropin / '99-nvidia.toml').write_text('# baremetal.gpu container_toolkit\n')
        rc, out = finish(start(tmp_path, name, cluster, ['gpu-a'], ROLLOUT_PLAY, {
            'container_toolkit_containerd_dropin_dir': str(dropin), 'node_maintenance_state_dir': str(state)}, api=False))
        assert rc == 0, out[-4000:]
        assert 'PLANNING AGAIN' not in out
        assert not (dropin / '99-nvidia.toml').exists()
        # Nobody holds the lock after the run (the plan, outside a cluster, needed none: the file is as it was).
        assert 'holderIdentity' not in (state / 'maintenance-lock.json').read_text()


def test_a_plan_that_fails_under_the_lock_releases_it(tmp_path, cluster):
    """While the run waits for another one's lock, someone cordons another GPU Node: with node_maintenance_max_unavailable
    1 the plan under the lock has no room and fails for every host; the lock is released (it used to stay held
    for its lease, an hour by default, and the next run waited for it) and no node was touched."""
    cluster.add_node(node_named('n-gpu-a'))
    cluster.add_node(node_named('n-gpu-z'))
    dropin = tmp_path / 'conf.d'
    dropin.mkdir()
    (dropin / '99-nvidia.toml').write_text('# baremetal.gpu container_toolkit\n')
    cluster.hold_lease(*LEASE, holder='other-run@ctl-a@2026-11-29T09:00:00.000000Z')   # another run's live lock
    second = start(tmp_path, 'second', cluster, ['gpu-a'], ROLLOUT_PLAY, {
        'container_toolkit_containerd_dropin_dir': str(dropin), 'node_maintenance_lock_timeout': 120,
        'node_maintenance_max_unavailable': 1})
    assert wait_for(lambda: 'the NVIDIA container runtime to remove' in open(second.out_path).read())
    time.sleep(2)
    cluster.nodes['n-gpu-z']['spec']['unschedulable'] = True
    cluster._bump(cluster.nodes['n-gpu-z'])
    cluster.release_lease(*LEASE)
    rc, out = finish(second)
    assert rc != 0, out[-4000:]
    assert 'PLANNING AGAIN under the lock' in out, out[-4000:]
    assert 'no node of the cluster can be taken out' in out and 'n-gpu-z' in out, out[-4000:]
    assert holder(cluster) is None, out[-4000:]
    assert not cluster.nodes['n-gpu-a']['spec'].get('unschedulable')
    assert not (tmp_path / 'second' / 'state' / 'uninstall.json').exists()


def test_the_uninstall_takes_a_node_of_a_cluster_out_of_service_and_back(tmp_path, cluster):
    # What maintenance_uninstall_node says of an RKE2 agent with a driver and the runtime to take off.
    disruptive = {'in_cluster': True, 'why': 'rke2-agent is enabled', 'role': 'agent', 'unit': 'rke2-agent', 'reboot': [],
                  'restart': [], 'resume': [], 'disruptive': True,
                  'reasons': ['driver 580.105.08 to purge', 'the NVIDIA container runtime to remove']}
    cluster.add_node(node_named('n-gpu-a'))
    cluster.add_pod(pod('train-0', 'ml', {'nvidia.com/gpu': '1'}, node='n-gpu-a'))
    extra = {'node_maintenance_uninstall_plan': {'nodes': {'gpu-a': disruptive}, 'noop': False, 'order': ['gpu-a']},
             'steps': ['enter']}
    rc, out = finish(start(tmp_path, 'enter', cluster, ['gpu-a'], UNINSTALL_PLAY, extra))
    assert rc == 0, out[-4000:]
    node = cluster.nodes['n-gpu-a']
    assert node['metadata']['labels']['baremetal.gpu/uninstall'] == 'upgrading'
    assert node['spec']['unschedulable'] is True
    assert node['metadata']['annotations'][REASON] == 'driver 580.105.08 to purge; the NVIDIA container runtime to remove'
    assert ('ml', 'train-0') not in cluster.pods                     # the GPU pod is gone before the purge
    record = json.loads((tmp_path / 'enter' / 'state' / 'uninstall.json').read_text())
    assert record['state'] == 'upgrading' and record['reasons'] == disruptive['reasons']
    # The host layer is off: the node advertises no GPU any more. Leave waits for Ready only, then uncordons.
    node['status']['capacity'].pop('nvidia.com/gpu', None)
    node['status']['allocatable'].pop('nvidia.com/gpu', None)
    extra['steps'] = ['enter', 'leave']
    rc, out = finish(start(tmp_path, 'leave', cluster, ['gpu-a'], UNINSTALL_PLAY, extra))
    assert rc == 0, out[-4000:]
    node = cluster.nodes['n-gpu-a']
    assert node['metadata']['labels']['baremetal.gpu/uninstall'] == 'done'
    assert not node['spec'].get('unschedulable')
    assert REASON not in node['metadata'].get('annotations', {})


def test_the_uninstall_plan_reads_the_cluster_and_refuses_bad_knobs(tmp_path, cluster):
    cluster.add_node(node_named('n-gpu-a'))
    extra = {'steps': ['plan_uninstall'], 'node_maintenance_uninstall_plan': None}
    extra = dict((k, v) for k, v in extra.items() if v is not None)
    rc, out = finish(start(tmp_path, 'plan', cluster, ['gpu-a'], UNINSTALL_PLAY, extra))
    assert rc == 0, out[-4000:]
    # This machine has no driver, no runtime and no RKE2: mapped through the API, nothing to take off.
    assert 'gpu-a: in a cluster (the cluster API lists Node n-gpu-a); nothing to take off' in out, out[-3000:]
    assert 'nothing disruptive to do' in out
    assert [m for m, _p, _b in cluster.requests if m != 'GET'] == []
    # container_toolkit's containerd drop-in on the node: taking it off removes the runtime, out of service.
    dropin = tmp_path / 'conf.d'
    dropin.mkdir()
    (dropin / '99-nvidia.toml').write_text('# baremetal.gpu container_toolkit\n')
    rc, out = finish(start(tmp_path, 'dropin', cluster, ['gpu-a'], UNINSTALL_PLAY,
                           dict(extra, container_toolkit_containerd_dropin_dir=str(dropin))))
    assert rc == 0, out[-4000:]
    assert 'gpu-a: in a cluster (the cluster API lists Node n-gpu-a); the NVIDIA container runtime to remove' in out, \
        out[-3000:]
    rc, out = finish(start(tmp_path, 'bad', cluster, ['gpu-a'], UNINSTALL_PLAY, dict(extra, node_maintenance_lock_timeout=-5)))
    assert rc != 0 and 'node_maintenance_lock_timeout must be 0 (do not wait) or more seconds, got "-5"' in out
