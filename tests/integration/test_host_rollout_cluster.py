"""Day 1 in batches (playbooks/gpu_nodes.yml): the cluster steps around a node's reboot or RKE2 restart.

No Kubernetes API runs here: no node was really cordoned or drained by these tests. The API double
(k8s_api_double.py) serves the Node recorded from a real RKE2 cluster (tests/fixtures/k8s-nodes: node
"nori", nvidia.com/gpu 1). roles/node_maintenance's enter and leave run for real
through the upgrade's own enter and leave steps (kubernetes.core), with the day-1 label
baremetal.gpu/host-rollout; its plan reads the Node list from the double.
"""
import copy
import json
import os
import re
import subprocess
import sys

import yaml

from conftest import (H100, ROOT, ansible_env, cluster_play, device_plugin_pod, exporter_pod, killed_at, modprobe_calls,
                      modprobe_stand_in, pod, real_node, stand_in, support)

NORI = real_node()
LABEL = 'baremetal.gpu/host-rollout'
UPGRADE_LABEL = 'baremetal.gpu/driver-upgrade'
INITIAL = 'baremetal.gpu/driver-upgrade.initially-unschedulable'

PLAY = """---
- name: Day-1 host rollout, cluster steps
  hosts: gpu-a
  gather_facts: false
  vars:
    node_maintenance_rollout_kind: host_rollout
  tasks:
%s
"""
STEP = """    - name: Step {step}
      ansible.builtin.include_role:
        name: baremetal.gpu.node_maintenance
        tasks_from: {step}
"""
DISRUPTIVE = {'in_cluster': True, 'why': 'rke2-agent is enabled', 'role': 'agent', 'unit': 'rke2-agent', 'reboot': [],
              'restart': ['the nvidia runtime is missing from /var/lib/rancher/rke2/agent/etc/containerd/config.toml'],
              'resume': [], 'disruptive': True}


ACCEPT = 'baremetal.gpu/gpu-acceptance'
ACCEPT_REASON = 'a new node: its GPUs are checked before its first uncordon (gpu_health_accept_new_nodes)'
# The rollout's batched block (playbooks/rollout.yml), cut to the engine's enter and leave steps around a change, and
# the rescue; the change's steps and the block's keywords are each play's own.
BATCH_PLAY = """---
- name: {name}
  hosts: gpu-a
  gather_facts: false
  vars:
    node_maintenance_rollout_kind: host_rollout
  tasks:
    - name: Enter, change, leave
{keywords}      block:
        - name: Enter
          ansible.builtin.include_role:
            name: baremetal.gpu.node_maintenance
            tasks_from: enter
{change}        - name: Leave
          ansible.builtin.include_role:
            name: baremetal.gpu.node_maintenance
            tasks_from: leave
      rescue:
        - name: Failed
          ansible.builtin.include_role:
            name: baremetal.gpu.node_maintenance
            tasks_from: failed
"""
# Day 1 with the GPU acceptance of a new node as the change.
ACCEPT_PLAY = BATCH_PLAY.format(name='Day-1 host rollout of a new node, with its GPU acceptance', keywords='', change="""\
        - name: Accept
          ansible.builtin.include_role:
            name: baremetal.gpu.gpu_health
            tasks_from: accept
          when: __node_maintenance_host_rollout['accept'] | default([]) | length > 0
""")
# A change that loses the node (TEST ONLY: the lossy_local connection, tests/integration/connection_plugins, makes
# gpu-a unreachable once <BAREMETAL_TEST_LOST_DIR>/gpu-a.lost exists, as ssh does for a node that never came back from
# its reboot), in a block that keeps a lost node in the play, as the rollout's does.
LOST_PLAY = BATCH_PLAY.format(name='Day-1 host rollout of a node lost in its change',
                              keywords='      ignore_unreachable: true\n', change="""\
        - name: Lose the node (TEST ONLY)
          ansible.builtin.file:
            path: "{{ lookup('ansible.builtin.env', 'BAREMETAL_TEST_LOST_DIR') }}/gpu-a.lost"
            state: touch
            mode: "0644"
          delegate_to: localhost
        - name: A step of the change on the lost node
          ansible.builtin.command: "true"
          changed_when: false
""")


# Day 1 with the node's MIG layout as the change (roles/mig_manager, as playbooks/tasks/host_layer.yml imports it).
MIG_PLAY = BATCH_PLAY.format(name='Day-1 host rollout of a node whose GPUs lack their MIG layout', keywords='', change="""\
        - name: MIG layout
          ansible.builtin.include_role:
            name: baremetal.gpu.mig_manager
""")
# TEST ONLY: the stand-in nvidia-mig-parted of molecule/maintenance_kill (one H100; a MIG mode change refused while the
# file BAREMETAL_TEST_MIG_HELD_FILE exists: here while the exporter's or the device plugin's pod runs on the node, the
# API double's watch_pods).
MIG_STAND_IN = os.path.join(ROOT, 'molecule', 'maintenance_kill', 'files', 'nvidia-mig-parted-stand-in.py')
MIG_LAYOUTS = {'all-1g.10gb': [{'devices': 'all', 'mig-enabled': True, 'mig-devices': {'1g.10gb': 7}}]}
MIG_REASON = 'the GPUs do not have MIG layout all-1g.10gb (nvidia-mig-parted assert)'


def mig_node(tmp_path, cluster, plugin_keeps_off=True, drm_loaded=False):
    """The real Node, advertising what the layout makes once its device plugin restarted (no device plugin runs here:
    the API double does not change a Node's capacity), its exporter's pod and its device plugin's pod, both holding
    the GPU; the stand-in with its GPU's MIG off. ``plugin_keeps_off`` false: a device plugin of the site's (no pause
    affinity), which holds nothing here. ``drm_loaded``: nvidia_drm loaded on the node (it holds the GPU too). Returns
    the variables of the run."""
    mig = copy.deepcopy(NORI)
    for part in ('capacity', 'allocatable'):
        mig['status'][part]['nvidia.com/mig-1g.10gb'] = '7'
    cluster.add_node(mig)
    cluster.add_pod(exporter_pod('nori'))
    cluster.watch_pods('nori', support().EXPORTER_PAUSE['selector'], str(tmp_path / 'mig-held'))
    if plugin_keeps_off:
        cluster.add_pod(device_plugin_pod('nori'))
        cluster.watch_pods('nori', support().DEVICE_PLUGIN_PAUSE['selector'], str(tmp_path / 'mig-held'))
    else:
        plugin = pod('nvidia-device-plugin-x7k2p', 'nvidia-device-plugin', owner=('DaemonSet', 'nvidia-device-plugin'))
        plugin['metadata']['labels'] = {'app.kubernetes.io/name': 'nvidia-device-plugin'}
        cluster.add_pod(plugin)
    parted = tmp_path / 'nvidia-mig-parted'
    with open(MIG_STAND_IN, encoding='utf-8') as handle:
        parted.write_text('#!%s\n%s' % (sys.executable, handle.read()))
    parted.chmod(0o755)
    (tmp_path / 'mig-state.json').write_text(json.dumps(
        {'gpus': [{'device_id': '0x233010DE', 'mig_enabled': False, 'devices': {}}]}))
    variables = modprobe_stand_in(tmp_path, drm_loaded)
    variables.update({'mig_manager_parted': str(parted), 'mig_manager_config_file': str(tmp_path / 'mig' / 'layouts.yaml'),
                      '__mig_manager_dropin': str(tmp_path / 'dropin' / 'zz-baremetal-gpu.conf'), 'mig_manager_stop_services': [],
                      '__mig_manager_drm_marker': str(tmp_path / 'mig-record' / 'nvidia_drm-unloaded'),
                      'device_plugin_sharing_profiles': {'mig7': {'sharing': 'mig', 'mig_layout': 'all-1g.10gb',
                                                                  'mig_strategy': 'mixed'}},
                      'baremetal_gpu_sharing_profile': 'mig7', 'baremetal_gpu_mig_layouts': MIG_LAYOUTS})
    return variables


def unreachable_tasks(out, host):
    """The tasks whose result for ``host`` was UNREACHABLE in a run's output, in order (one connection attempt each)."""
    found, task = [], ''
    for line in out.splitlines():
        if line.startswith('TASK ['):
            task = line[len('TASK ['):line.rindex(']')]
        elif line.startswith('fatal: [%s]: UNREACHABLE!' % host):
            found.append(task)
    return found


def new_node():
    """The real Node before its device plugin ran: no GPU in its capacity (a new node)."""
    fresh = copy.deepcopy(NORI)
    for part in ('capacity', 'allocatable'):
        fresh['status'][part].pop('nvidia.com/gpu')
    return fresh


def run(tmp_path, cluster, steps, extra=None, args=()):
    proc = start(tmp_path, cluster, steps, extra, args)
    out, err = proc.communicate(timeout=300)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def start(tmp_path, cluster, steps, extra=None, args=()):
    """run(), started in its own process group: returns the Popen (text stdout and stderr). ``steps``: the engine's
    steps in order, or 'accept' (ACCEPT_PLAY), or 'lost' (LOST_PLAY, gpu-a on the lossy_local connection)."""
    connection = 'lossy_local' if steps == 'lost' else 'local'
    inventory = {'all': {
        'hosts': {'gpu-a': {'ansible_connection': connection, 'baremetal_gpu_node_name': 'nori'}},
        'children': {'baremetal_gpu_cluster_api': {'hosts': {'localhost': {'ansible_connection': 'local'}}}}}}
    variables = {'cluster_kubeconfig': cluster.kubeconfig, 'node_maintenance_state_dir': str(tmp_path / 'state'),
                 'node_maintenance_capacity_timeout': 5, 'node_maintenance_node_ready_timeout': 10, 'node_maintenance_gpu_pod_deletion_timeout': 10,
                 'node_maintenance_host_rollout_plan': {'nodes': {'gpu-a': DISRUPTIVE}}}
    variables.update(extra or {})
    variables = dict((k, v) for k, v in variables.items() if v is not None)   # None: leave it to the play
    (tmp_path / 'inventory.yml').write_text(yaml.safe_dump(inventory))
    (tmp_path / 'vars.yml').write_text(yaml.safe_dump(variables))
    play = {'accept': ACCEPT_PLAY, 'lost': LOST_PLAY, 'mig': MIG_PLAY}.get(steps) if isinstance(steps, str) else None
    (tmp_path / 'play.yml').write_text(cluster_play(play or PLAY % ''.join(STEP.format(step=s) for s in steps)))
    cmd = ['ansible-playbook', '-i', str(tmp_path / 'inventory.yml'), str(tmp_path / 'play.yml'),
           '-e', '@' + str(tmp_path / 'vars.yml')] + list(args)
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env=ansible_env({'ANSIBLE_CONNECTION_PLUGINS': os.path.join(os.path.dirname(__file__),
                                                                                        'connection_plugins'),
                                             'BAREMETAL_TEST_LOST_DIR': str(tmp_path),
                                             'BAREMETAL_TEST_MIG_STATE': str(tmp_path / 'mig-state.json'),
                                             'BAREMETAL_TEST_MIG_HELD_FILE': str(tmp_path / 'mig-held'),
                                             'BAREMETAL_TEST_MIG_DRM_DIR': str(tmp_path / 'sys-module' / 'nvidia_drm'),
                                             'BAREMETAL_TEST_MIG_NO_RESET': str(tmp_path / 'mig-no-reset'),
                                             'BAREMETAL_TEST_MIG_SMI_XML': H100}))


def node(cluster):
    return cluster.nodes['nori']


def test_a_disruptive_node_is_cordoned_then_uncordoned_with_the_day1_label(tmp_path, cluster):
    cluster.add_node(NORI)
    res = run(tmp_path, cluster, ['enter'])
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    meta = node(cluster)['metadata']
    assert meta['labels'][LABEL] == 'upgrading'
    assert UPGRADE_LABEL not in meta['labels']          # the driver upgrade's own label is left alone
    assert meta['annotations'][INITIAL] == 'false'
    assert node(cluster)['spec']['unschedulable'] is True
    record = json.loads((tmp_path / 'state' / 'host-rollout.json').read_text())
    assert record['state'] == 'upgrading' and record['cordoned'] is True and record['finished'] == ''
    assert record['restart'] == DISRUPTIVE['restart']

    res = run(tmp_path, cluster, ['enter', 'leave'])
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
    res = run(tmp_path, cluster, ['enter', 'leave'],
              {'node_maintenance_host_rollout_plan': {'nodes': {'gpu-a': quiet}}}, args=['-v'])
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    assert [m for m, _p, _b in cluster.requests if m != 'GET'] == []
    assert not (tmp_path / 'state' / 'host-rollout.json').exists()
    assert re.search(r'__baremetal_gpu_hold_back\W{1,4}true', res.stdout), res.stdout[-3000:]


def test_plan_finds_the_node_through_the_api(tmp_path, cluster):
    # This machine has no RKE2 and no GPU: the API's Node alone makes it a node of the cluster, with nothing to
    # reboot or restart (nvidia_driver's decide step is skipped by tag: it would ask this machine's apt).
    cluster.add_node(NORI)
    res = run(tmp_path, cluster, ['plan'], {'node_maintenance_host_rollout_plan': None},
              args=['--skip-tags', 'nvidia_driver', '-v'])
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    assert 'gpu-a: in a cluster (the cluster API lists Node nori)' in res.stdout
    assert 'nothing disruptive to do: every GPU node runs at once' in res.stdout


def test_plan_refuses_a_bad_batch_size_before_anything(tmp_path, cluster):
    cluster.add_node(NORI)
    res = run(tmp_path, cluster, ['plan'], {'node_maintenance_host_rollout_plan': None, 'node_maintenance_batch_size': '0%'},
              args=['--skip-tags', 'nvidia_driver'])
    assert res.returncode != 0
    assert ('node_maintenance_batch_size must be a number of nodes (1 or more) or a percentage from 1% to 100% such as "25%", '
            'got "0%"') in res.stdout
    assert [m for m, _p, _b in cluster.requests if m != 'GET'] == []


def test_plan_resumes_a_node_the_last_rollout_left_cordoned(tmp_path, cluster):
    left = copy.deepcopy(NORI)
    left['spec']['unschedulable'] = True
    left['metadata']['labels'][LABEL] = 'upgrading'
    cluster.add_node(left)
    res = run(tmp_path, cluster, ['plan'], {'node_maintenance_host_rollout_plan': None, 'node_maintenance_max_unavailable': 1},
              args=['--skip-tags', 'nvidia_driver'])
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    # Not counted as already unavailable (it is ours), and back in a batch of its own.
    assert 'minus 0 GPU Node(s) already out of service' in res.stdout
    assert 'resume: the last rollout left it out of service (label baremetal.gpu/host-rollout=upgrading)' in res.stdout
    assert [m for m, _p, _b in cluster.requests if m != 'GET'] == []


def test_plan_maps_the_node_by_its_hostname_label(tmp_path, cluster):
    # The Node's name differs from every name of the host; its kubernetes.io/hostname label is the host's.
    renamed = copy.deepcopy(NORI)
    renamed['metadata']['name'] = 'nori.k8s.example'
    renamed['metadata']['labels']['kubernetes.io/hostname'] = 'nori'
    cluster.add_node(renamed)
    res = run(tmp_path, cluster, ['plan'], {'node_maintenance_host_rollout_plan': None},
              args=['--skip-tags', 'nvidia_driver', '-v'])
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    assert 'gpu-a: in a cluster (the cluster API lists Node nori.k8s.example)' in res.stdout


def test_plan_holds_a_new_node_for_its_gpu_acceptance_only_when_asked(tmp_path, cluster):
    cluster.add_node(new_node())
    args = ['--skip-tags', 'nvidia_driver', '-v']
    res = run(tmp_path, cluster, ['plan'], {'node_maintenance_host_rollout_plan': None}, args=args)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    assert 'nothing disruptive to do' in res.stdout and 'acceptance:' not in res.stdout
    res = run(tmp_path, cluster, ['plan'],
              {'node_maintenance_host_rollout_plan': None, 'gpu_health_accept_new_nodes': 'true'}, args=args)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    assert 'acceptance: ' + ACCEPT_REASON in res.stdout
    assert 'Batches: gpu-a' in res.stdout
    # A Node that already advertises GPUs served before: turning the acceptance on does not take it out of service.
    cluster.nodes['nori'] = copy.deepcopy(NORI)
    res = run(tmp_path, cluster, ['plan'],
              {'node_maintenance_host_rollout_plan': None, 'gpu_health_accept_new_nodes': True}, args=args)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    assert 'nothing disruptive to do' in res.stdout and 'acceptance:' not in res.stdout
    res = run(tmp_path, cluster, ['plan'],
              {'node_maintenance_host_rollout_plan': None, 'gpu_health_accept_new_nodes': 'maybe'}, args=args)
    assert res.returncode != 0
    assert 'gpu_health_accept_new_nodes must be true or false (got maybe)' in res.stdout
    assert [m for m, _p, _b in cluster.requests if m != 'GET'] == []


def accept_vars(tmp_path, healthy):
    return {'node_maintenance_host_rollout_plan': {'nodes': {'gpu-a': dict(DISRUPTIVE, restart=[], accept=[ACCEPT_REASON],
                                                                           accept_label=ACCEPT)}},
            'gpu_health_nvidia_smi_path': stand_in(tmp_path, 'gpu-a', healthy), 'gpu_health_kernel_log': False}


def test_a_new_node_with_healthy_gpus_is_labelled_passed_and_uncordoned(tmp_path, cluster):
    cluster.add_node(new_node())
    res = run(tmp_path, cluster, 'accept', accept_vars(tmp_path, True))
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    assert 'gpu-a: HEALTHY - 1 GPU(s) listed' in res.stdout
    meta = node(cluster)['metadata']
    assert meta['labels'][ACCEPT] == 'passed' and meta['labels'][LABEL] == 'done'
    assert node(cluster)['spec'].get('unschedulable') in (None, False)
    # Cordoned and labelled pending in one write first, then passed together with "done" and the uncordon, in one
    # write (a kill can never leave it labelled done and cordoned).
    writes = [b for m, p, b in cluster.requests if m == 'PATCH' and p.split('?')[0] == '/api/v1/nodes/nori']
    labels = [((b.get('metadata') or {}).get('labels') or {}).get(ACCEPT) for b in writes]
    assert [v for v in labels if v] == ['pending', 'passed'], writes
    assert writes[labels.index('pending')]['spec'] == {'unschedulable': True}, writes
    assert labels.index('pending') < labels.index('passed') == len(writes) - 1
    assert writes[-1]['spec'] == {'unschedulable': False} and writes[-1]['metadata']['labels'][LABEL] == 'done', writes[-1]


def test_a_new_node_with_an_unhealthy_gpu_stays_cordoned_with_the_reason_and_is_checked_again(tmp_path, cluster):
    cluster.add_node(new_node())
    res = run(tmp_path, cluster, 'accept', accept_vars(tmp_path, False))
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]   # the rescue ran; the stop step would fail it
    meta = node(cluster)['metadata']
    assert meta['labels'][ACCEPT] == 'pending' and meta['labels'][LABEL] == 'failed'
    assert node(cluster)['spec']['unschedulable'] is True
    reason = meta['annotations']['baremetal.gpu/driver-upgrade.reason']
    assert 'GPU ACCEPTANCE FAILED: gpu-a is unhealthy' in reason, reason
    # Still pending: the next plan holds it again, whatever its capacity says by then.
    after = copy.deepcopy(node(cluster))
    after['status']['capacity']['nvidia.com/gpu'] = '1'
    cluster.nodes['nori'] = after
    res = run(tmp_path, cluster, ['plan'],
              {'node_maintenance_host_rollout_plan': None, 'gpu_health_accept_new_nodes': True}, args=['--skip-tags', 'nvidia_driver'])
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    assert 'acceptance: ' + ACCEPT_REASON in res.stdout
    # Fixed: the rerun's batch checks it, labels it passed, uncordons it (it was schedulable before the first batch).
    res = run(tmp_path, cluster, 'accept', accept_vars(tmp_path, True))
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    meta = node(cluster)['metadata']
    assert meta['labels'][ACCEPT] == 'passed' and meta['labels'][LABEL] == 'done'
    assert node(cluster)['spec'].get('unschedulable') in (None, False)


def test_a_run_killed_in_the_acceptance_of_a_new_node_is_finished_by_the_next_one(tmp_path, cluster):
    """kill -9 of day 1's batch (its whole process group) as the new node's GPUs are checked: the Node is cordoned,
    labelled upgrading and acceptance pending, its state before kept on it. The next plan holds it for its acceptance
    again; the next batch checks it, labels it passed and uncordons it: it was schedulable before the killed run, which
    the annotation kept across the kill, so the rerun's cordon of a cordoned node does not make it stay cordoned."""
    cluster.add_node(new_node())
    killed_at(start(tmp_path, cluster, 'accept', accept_vars(tmp_path, True)),
              'TASK [baremetal.gpu.gpu_health : Accept | Read the GPUs')
    meta = node(cluster)['metadata']
    assert node(cluster)['spec']['unschedulable'] is True
    assert meta['labels'][LABEL] == 'upgrading' and meta['labels'][ACCEPT] == 'pending', meta['labels']
    assert meta['annotations'][INITIAL] == 'false'
    res = run(tmp_path, cluster, ['plan'],
              {'node_maintenance_host_rollout_plan': None, 'gpu_health_accept_new_nodes': True}, args=['--skip-tags', 'nvidia_driver'])
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    assert 'acceptance: ' + ACCEPT_REASON in res.stdout and 'Batches: gpu-a' in res.stdout, res.stdout[-3000:]
    res = run(tmp_path, cluster, 'accept', accept_vars(tmp_path, True))
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    meta = node(cluster)['metadata']
    assert meta['labels'][ACCEPT] == 'passed' and meta['labels'][LABEL] == 'done', meta['labels']
    assert node(cluster)['spec'].get('unschedulable') in (None, False)
    assert INITIAL not in meta['annotations']


def test_a_node_lost_in_its_change_is_asked_once_and_stays_cordoned_failed(tmp_path, cluster):
    """A node that stops answering in its change (a reboot it never came back from): the leave step's answers step
    finds it unreachable and fails it; the rescue labels it failed from the API host and keeps it cordoned, without
    asking the node again (each ask of a lost node costs a connection timeout: with ssh, ten seconds or more)."""
    cluster.add_node(NORI)
    res = run(tmp_path, cluster, 'lost')
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]   # the rescue ran; the stop step would fail it
    meta = node(cluster)['metadata']
    assert meta['labels'][LABEL] == 'failed', meta['labels']
    assert node(cluster)['spec']['unschedulable'] is True
    reason = meta['annotations']['baremetal.gpu/driver-upgrade.reason']
    assert reason.startswith('lost: gpu-a does not answer any more'), reason
    # One connection attempt per task after the loss: the change's step, then one ask; the rescue asks no more.
    asked = unreachable_tasks(res.stdout, 'gpu-a')
    assert asked == ['A step of the change on the lost node',
                     'baremetal.gpu.node_maintenance : Ask | Ask the node (a lost node is not an error here)'], asked
    # Nothing more was done on the node: its record still says it is out of service for this rollout.
    record = json.loads((tmp_path / 'state' / 'host-rollout.json').read_text())
    assert record['state'] == 'upgrading' and record['cordoned'] is True, record


def pause_writes(cluster):
    """The Node label writes of the pauses, in order: (request index, {label: value or None})."""
    labels = (support().EXPORTER_PAUSE['label'], support().DEVICE_PLUGIN_PAUSE['label'])
    found = []
    for i, (m, _p, b) in enumerate(cluster.requests):
        written = ((b or {}).get('metadata') or {}).get('labels') or {} if m == 'PATCH' else {}
        if set(labels) & set(written):
            found.append((i, dict((k, v) for k, v in written.items() if k in labels)))
    return found


def task_results(out, task):
    """The result lines (ok, changed, skipping, fatal...) a run printed under the tasks whose name starts with
    ``task``."""
    found, inside = [], False
    for line in out.splitlines():
        if line.startswith('TASK ['):
            inside = line[len('TASK ['):].startswith(task)
        elif inside and re.match(r'^(ok|changed|skipping|fatal|failed): ', line):
            found.append(line.split(' =>')[0])
    return found


def plugin_pods(cluster):
    return sorted(name for (_ns, name), p in cluster.pods.items()
                  if (p['metadata'].get('labels') or {}).get('app.kubernetes.io/name') == 'nvidia-device-plugin')


def test_a_mig_layout_is_made_out_of_service_with_the_exporter_and_device_plugin_off(tmp_path, cluster):
    """The plan put the node in a batch for its MIG layout (mig_manager's decide step): cordoned, then the layout
    applied with the exporter's and the device plugin's pods off the node (their DaemonSets keep off the pause
    labels; the stand-in refuses the mode change while either runs there), let back after (the DaemonSet controller
    starts a new device plugin pod, which sees the instances), what the layout makes waited for, and the node
    uncordoned. nvidia_drm, loaded there (it holds the GPU too), is unloaded for the apply and loaded again."""
    variables = mig_node(tmp_path, cluster, drm_loaded=True)
    plan = dict(DISRUPTIVE, restart=[], mig=[MIG_REASON], node_name='nori')
    variables['node_maintenance_host_rollout_plan'] = {'nodes': {'gpu-a': plan}}
    res = run(tmp_path, cluster, 'mig', variables)

    assert res.returncode == 0, res.stdout[-5000:] + res.stderr[-2000:]
    state = json.loads((tmp_path / 'mig-state.json').read_text())
    assert state['gpus'] == [{'device_id': '0x233010DE', 'mig_enabled': True, 'devices': {'1g.10gb': 7}}]
    exporter, plugin = support().EXPORTER_PAUSE, support().DEVICE_PLUGIN_PAUSE
    # In order: cordon, both paused in one write and let back in one (the apply between them), uncordon; no pod
    # deleted by the run (the DaemonSets took them off and started them again).
    pauses, cordons = pause_writes(cluster), cluster.cordon_writes()
    assert [v for _i, v in pauses][:2] == [{exporter['label']: exporter['value'], plugin['label']: plugin['value']},
                                           {exporter['label']: None, plugin['label']: None}], pauses
    assert [v for _i, v in cordons] == [True, False], cordons
    assert cordons[0][0] < pauses[0][0] < pauses[1][0] < cordons[1][0]
    assert not [c for c in cluster.calls() if c.startswith('DELETE ')], cluster.calls()
    assert plugin_pods(cluster) and plugin_pods(cluster) != ['nvidia-device-plugin-x7k2p'], plugin_pods(cluster)
    labels = node(cluster)['metadata']['labels']
    assert labels[LABEL] == 'done' and node(cluster)['spec'].get('unschedulable') in (None, False)
    assert exporter['label'] not in labels and plugin['label'] not in labels
    assert 'MIG: ' + MIG_REASON in res.stdout
    assert modprobe_calls(tmp_path) == ['-r nvidia_drm', 'nvidia_drm']
    assert (tmp_path / 'sys-module' / 'nvidia_drm').is_dir() and not (tmp_path / 'mig-record' / 'nvidia_drm-unloaded').exists()
    # Selected for boot in our drop-in, from our own layouts file.
    dropin = (tmp_path / 'dropin' / 'zz-baremetal-gpu.conf').read_text()
    assert 'Environment="MIG_PARTED_SELECTED_CONFIG=all-1g.10gb"' in dropin
    assert 'Environment="MIG_PARTED_CONFIG_FILE=%s"' % variables['mig_manager_config_file'] in dropin


def test_a_device_plugin_that_does_not_keep_off_the_label_is_restarted_after_the_apply(tmp_path, cluster):
    """mig_manager_pause_device_plugin false (a device plugin of the site's): only the exporter is paused; the device
    plugin's pod is deleted after the apply, so that its DaemonSet starts one that sees the instances."""
    variables = mig_node(tmp_path, cluster, plugin_keeps_off=False)
    plan = dict(DISRUPTIVE, restart=[], mig=[MIG_REASON], node_name='nori')
    variables.update({'node_maintenance_host_rollout_plan': {'nodes': {'gpu-a': plan}},
                      'mig_manager_pause_device_plugin': 'false'})
    res = run(tmp_path, cluster, 'mig', variables)
    assert res.returncode == 0, res.stdout[-5000:] + res.stderr[-2000:]
    exporter = support().EXPORTER_PAUSE
    pauses = pause_writes(cluster)
    assert [v for _i, v in pauses] == [{exporter['label']: exporter['value']}, {exporter['label']: None}], pauses
    deleted = [i for i, (m, p, _b) in enumerate(cluster.requests)
               if m == 'DELETE' and p == '/api/v1/namespaces/nvidia-device-plugin/pods/nvidia-device-plugin-x7k2p']
    assert len(deleted) == 1 and pauses[1][0] < deleted[0] < cluster.cordon_writes()[-1][0], cluster.calls()
    assert json.loads((tmp_path / 'mig-state.json').read_text())['gpus'][0]['mig_enabled'] is True


def test_a_device_plugin_that_stays_on_the_paused_node_stops_the_change_before_the_apply(tmp_path, cluster):
    """mig_manager_pause_device_plugin true with a device plugin that does not keep off the label: the wait for its
    pod ends (gpu_health_reset_pause_timeout), the apply is not tried, the pods are let back, the node stays cordoned
    (the batch failed), and the error names the pod and the switch."""
    variables = mig_node(tmp_path, cluster, plugin_keeps_off=False)
    plan = dict(DISRUPTIVE, restart=[], mig=[MIG_REASON], node_name='nori')
    variables.update({'node_maintenance_host_rollout_plan': {'nodes': {'gpu-a': plan}}, 'gpu_health_reset_pause_timeout': 2})
    res = run(tmp_path, cluster, 'mig', variables)
    assert re.search(r'gpu-a +: .* rescued=1', res.stdout), res.stdout[-3000:]
    assert ('nvidia-device-plugin/nvidia-device-plugin-x7k2p (app.kubernetes.io/name=nvidia-device-plugin) still run '
            'on nori 2 s after the Node was labelled baremetal.gpu/device-plugin=paused') in res.stdout, res.stdout[-3000:]
    assert 'set mig_manager_pause_device_plugin: false' in res.stdout
    assert json.loads((tmp_path / 'mig-state.json').read_text())['gpus'][0]['mig_enabled'] is False
    labels = node(cluster)['metadata']['labels']
    assert support().DEVICE_PLUGIN_PAUSE['label'] not in labels and support().EXPORTER_PAUSE['label'] not in labels
    assert node(cluster)['spec']['unschedulable'] is True and labels[LABEL] == 'failed', labels


def test_a_run_killed_after_the_apply_lets_the_pods_back_on_the_next_run(tmp_path, cluster):
    """kill -9 of the batch once the layout is on the GPUs, before the pods are let back: the Node is left cordoned
    with both pause labels. The next plan takes the node into a batch again (a stopped run left it out of service),
    although its GPUs have the layout; that batch removes the labels (the DaemonSets start the pods again), waits for
    what the layout makes and uncordons the node, without applying again. nvidia_drm, unloaded for the apply and
    killed before it was loaded again, is loaded by that batch (the marker the unload left)."""
    variables = mig_node(tmp_path, cluster, drm_loaded=True)
    plan = dict(DISRUPTIVE, restart=[], mig=[MIG_REASON], node_name='nori')
    variables['node_maintenance_host_rollout_plan'] = {'nodes': {'gpu-a': plan}}
    out = killed_at(start(tmp_path, cluster, 'mig', variables),
                    'TASK [Apply | Load nvidia_drm again where this role unloaded it',
                    after='Apply | Apply the layout with nvidia-mig-parted')
    assert 'Apply | Apply the layout with nvidia-mig-parted' in out
    assert modprobe_calls(tmp_path) == ['-r nvidia_drm'] and not (tmp_path / 'sys-module' / 'nvidia_drm').exists()
    assert (tmp_path / 'mig-record' / 'nvidia_drm-unloaded').exists()
    exporter, plugin = support().EXPORTER_PAUSE, support().DEVICE_PLUGIN_PAUSE
    labels = node(cluster)['metadata']['labels']
    assert labels.get(exporter['label']) == exporter['value'] and labels.get(plugin['label']) == plugin['value'], labels
    assert node(cluster)['spec']['unschedulable'] is True and labels[LABEL] == 'upgrading'
    assert not plugin_pods(cluster) and json.loads((tmp_path / 'mig-state.json').read_text())['gpus'][0]['mig_enabled']

    res = run(tmp_path, cluster, ['plan'], dict(variables, node_maintenance_host_rollout_plan=None),
              args=['--skip-tags', 'nvidia_driver'])
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    assert 'Batches: gpu-a' in res.stdout and MIG_REASON not in res.stdout, res.stdout[-3000:]
    resume = dict(DISRUPTIVE, restart=[], mig=[], resume=['a stopped run left the Node out of service'],
                  node_name='nori')
    variables['node_maintenance_host_rollout_plan'] = {'nodes': {'gpu-a': resume}}
    res = run(tmp_path, cluster, 'mig', variables)
    assert res.returncode == 0, res.stdout[-5000:] + res.stderr[-2000:]
    labels = node(cluster)['metadata']['labels']
    assert exporter['label'] not in labels and plugin['label'] not in labels, labels
    assert labels[LABEL] == 'done' and node(cluster)['spec'].get('unschedulable') in (None, False)
    assert plugin_pods(cluster), cluster.pods
    assert task_results(res.stdout, 'baremetal.gpu.mig_manager : Apply | Apply the layout with nvidia-mig-parted') == [
        'skipping: [gpu-a]'], res.stdout[-3000:]
    assert modprobe_calls(tmp_path) == ['-r nvidia_drm', 'nvidia_drm']
    assert (tmp_path / 'sys-module' / 'nvidia_drm').is_dir() and not (tmp_path / 'mig-record' / 'nvidia_drm-unloaded').exists()


def test_nvidia_drm_in_use_stops_the_change_before_the_apply(tmp_path, cluster):
    """nvidia_drm loaded and in use (a display server on the GPU): modprobe -r fails, the layout is not applied, the
    error names the module and the switch, the module stays loaded and no marker is left; the node stays cordoned
    (the batch failed) with the pods let back."""
    variables = mig_node(tmp_path, cluster, drm_loaded=True)
    (tmp_path / 'nvidia_drm-busy').write_text('')
    plan = dict(DISRUPTIVE, restart=[], mig=[MIG_REASON], node_name='nori')
    variables['node_maintenance_host_rollout_plan'] = {'nodes': {'gpu-a': plan}}
    res = run(tmp_path, cluster, 'mig', variables)
    assert re.search(r'gpu-a +: .* rescued=1', res.stdout), res.stdout[-3000:]
    assert 'nvidia_drm cannot be unloaded for the MIG change (modprobe: FATAL: Module nvidia_drm is in use.)' in res.stdout
    assert 'set mig_manager_unload_nvidia_drm to false' in res.stdout
    assert json.loads((tmp_path / 'mig-state.json').read_text())['gpus'][0]['mig_enabled'] is False
    assert (tmp_path / 'sys-module' / 'nvidia_drm').is_dir() and not (tmp_path / 'mig-record' / 'nvidia_drm-unloaded').exists()
    labels = node(cluster)['metadata']['labels']
    assert support().DEVICE_PLUGIN_PAUSE['label'] not in labels and support().EXPORTER_PAUSE['label'] not in labels
    assert node(cluster)['spec']['unschedulable'] is True and labels[LABEL] == 'failed', labels


def gpus_cannot_reset(tmp_path, variables):
    """The node's GPUs cannot be reset (a GPU passed through to a VM): the stand-in sets a mode change pending and fails
    as nvidia-mig-parted does after its reset failed; the stand-in again, as nvidia-smi, prints the real H100 capture
    with the GPU's current and pending MIG mode. Returns the run's variables."""
    (tmp_path / 'mig-no-reset').write_text('')
    smi = tmp_path / 'nvidia-smi'
    smi.write_text((tmp_path / 'nvidia-mig-parted').read_text())
    smi.chmod(0o755)
    plan = dict(DISRUPTIVE, restart=[], mig=[MIG_REASON], node_name='nori')
    return dict(variables, mig_manager_nvidia_smi=str(smi), node_maintenance_host_rollout_plan={'nodes': {'gpu-a': plan}})


PENDING = 'GPU 0 (00000000:00:06.0): MIG mode Enabled pending, Disabled now'
REBOOT_TASK = 'Apply | Reboot the node for the MIG mode change'   # an include: its header has no role prefix


def test_a_mig_mode_change_the_gpus_cannot_be_reset_for_waits_for_a_reboot_out_of_service(tmp_path, cluster):
    """Where the GPUs cannot be reset, the mode change waits for a boot. mig_manager_reboot false (the default): no
    reboot, the run fails naming the pending GPU and the variable, and the node stays cordoned and labelled failed,
    with what holds the GPUs given back (the pods let back, nvidia_drm loaded again)."""
    variables = gpus_cannot_reset(tmp_path, mig_node(tmp_path, cluster, drm_loaded=True))
    res = run(tmp_path, cluster, 'mig', variables)
    assert re.search(r'gpu-a +: .* rescued=1', res.stdout), res.stdout[-3000:]
    assert 'error resetting all GPUs' in res.stdout, res.stdout[-3000:]
    assert ('The GPUs could not be reset, so the MIG mode change waits for a boot (%s): set mig_manager_reboot to true'
            % PENDING) in res.stdout, res.stdout[-3000:]
    state = json.loads((tmp_path / 'mig-state.json').read_text())['gpus'][0]
    assert state['mig_enabled'] is False and state['mig_pending'] is True
    assert task_results(res.stdout, REBOOT_TASK) == ['skipping: [gpu-a]']
    labels = node(cluster)['metadata']['labels']
    assert node(cluster)['spec']['unschedulable'] is True and labels[LABEL] == 'failed', labels
    assert support().DEVICE_PLUGIN_PAUSE['label'] not in labels and support().EXPORTER_PAUSE['label'] not in labels
    assert modprobe_calls(tmp_path) == ['-r nvidia_drm', 'nvidia_drm']


def test_mig_manager_reboot_never_reboots_the_machine_running_ansible(tmp_path, cluster):
    """mig_manager_reboot true: the reboot the pending mode change needs is refused on the machine running Ansible (here
    every node is, connection local; a container is refused the same way) before it is tried, naming the GPU; the node
    stays out of service. A real reboot cannot run here: no test of this project reboots a node."""
    variables = gpus_cannot_reset(tmp_path, mig_node(tmp_path, cluster))
    res = run(tmp_path, cluster, 'mig', dict(variables, mig_manager_reboot=True))
    assert re.search(r'gpu-a +: .* rescued=1', res.stdout), res.stdout[-3000:]
    assert ('the MIG mode change of layout all-1g.10gb waits for a boot (%s), and it is a container or the machine '
            'running Ansible: not rebooted' % PENDING) in res.stdout, res.stdout[-3000:]
    # The guard failed the block: the reboot itself never ran (no task of it at all), where the run above skipped it.
    assert 'TASK [baremetal.gpu.host_common : Reboot | Reboot the node]' not in res.stdout
    assert 'TASK [baremetal.gpu.host_common : Reboot | Refuse to reboot' in res.stdout
    assert node(cluster)['spec']['unschedulable'] is True and node(cluster)['metadata']['labels'][LABEL] == 'failed'


def test_a_node_of_a_cluster_outside_a_batch_never_gets_its_mig_layout(tmp_path, cluster):
    """A node the plan held back (in a cluster, not disruptive: the plan did not see the layout missing) is never
    changed: the role fails, saying why, and the GPU keeps its MIG off."""
    variables = mig_node(tmp_path, cluster)
    held = dict(DISRUPTIVE, restart=[], disruptive=False, node_name='nori')
    variables['node_maintenance_host_rollout_plan'] = {'nodes': {'gpu-a': held}}
    res = run(tmp_path, cluster, 'mig', variables)
    # The batch's rescue (the engine's failed step) took it: the rollout's stop step ends the run after the batch.
    assert re.search(r'gpu-a +: .* failed=0 .* rescued=1', res.stdout), res.stdout[-3000:]
    assert 'is a node of a cluster and its GPUs lack MIG layout all-1g.10gb' in res.stdout, res.stdout[-3000:]
    # It never left service: not cordoned, not labelled by the engine.
    assert LABEL not in node(cluster)['metadata']['labels'] and not node(cluster)['spec'].get('unschedulable')
    state = json.loads((tmp_path / 'mig-state.json').read_text())
    assert state['gpus'][0]['mig_enabled'] is False
    assert not [c for c in cluster.calls() if c.startswith('DELETE ')]


def test_check_mode_changes_neither_the_gpus_nor_the_node(tmp_path, cluster):
    variables = mig_node(tmp_path, cluster)
    plan = dict(DISRUPTIVE, restart=[], mig=[MIG_REASON], node_name='nori')
    variables['node_maintenance_host_rollout_plan'] = {'nodes': {'gpu-a': plan}}
    res = run(tmp_path, cluster, 'mig', variables, args=['--check'])
    assert res.returncode == 0, res.stdout[-5000:] + res.stderr[-2000:]
    assert json.loads((tmp_path / 'mig-state.json').read_text())['gpus'][0]['mig_enabled'] is False
    assert not (tmp_path / 'dropin').exists() and not (tmp_path / 'mig').exists()
    # The engine's writes are the API server's dry runs (kubernetes.core in check mode): nothing is stored.
    writes = [c for c in cluster.calls() if not c.startswith('GET ')]
    assert writes and all(c.endswith('?dryRun=All') for c in writes), writes
    assert not node(cluster)['spec'].get('unschedulable') and LABEL not in node(cluster)['metadata']['labels']


def test_the_plan_refuses_a_mig_layout_without_nvidia_mig_parted_or_a_package(tmp_path, cluster):
    """Before the lock and before any Node is touched: the layout cannot be made on this node as configured."""
    variables = mig_node(tmp_path, cluster)
    variables.update({'node_maintenance_host_rollout_plan': None, 'mig_manager_parted': str(tmp_path / 'absent')})
    res = run(tmp_path, cluster, ['plan'], variables, args=['--skip-tags', 'nvidia_driver'])
    assert res.returncode != 0
    assert ('its sharing profile asks for MIG layout all-1g.10gb, and %s is not installed: set mig_manager_package'
            % (tmp_path / 'absent')) in res.stdout, res.stdout[-3000:]
    assert [c for c in cluster.calls() if not c.startswith('GET ')] == []


def test_the_uninstall_loads_nvidia_drm_that_a_stopped_mig_change_left_unloaded(tmp_path):
    """mig_manager's uninstall removes its record directory, where a MIG change killed after the unload left the
    nvidia_drm marker: it loads the module first (the driver is still there), and a second run changes nothing."""
    seams = modprobe_stand_in(tmp_path, False)
    marker = tmp_path / 'mig-record' / 'nvidia_drm-unloaded'
    marker.parent.mkdir()
    marker.write_text('')
    variables = dict(seams, mig_manager_config_file=str(tmp_path / 'mig' / 'layouts.yaml'),
                     __mig_manager_dropin=str(tmp_path / 'dropin' / 'zz-baremetal-gpu.conf'),
                     __mig_manager_record=str(tmp_path / 'mig-record' / 'installed.json'),
                     __mig_manager_cache=str(tmp_path / 'mig-cache'), __mig_manager_drm_marker=str(marker))
    (tmp_path / 'vars.yml').write_text(yaml.safe_dump(variables))
    include = {'name': 'baremetal.gpu.mig_manager', 'tasks_from': 'uninstall'}
    (tmp_path / 'play.yml').write_text(yaml.safe_dump([{
        'name': 'mig_manager uninstall', 'hosts': 'localhost', 'gather_facts': False,
        'tasks': [{'name': 'Uninstall', 'ansible.builtin.include_role': include}]}]))
    for expected in (['nvidia_drm'], ['nvidia_drm']):
        res = subprocess.run(['ansible-playbook', '-i', 'localhost,', '-c', 'local', str(tmp_path / 'play.yml'),
                              '-e', '@' + str(tmp_path / 'vars.yml')], capture_output=True, text=True,
                             env=ansible_env({}), timeout=300, check=False)
        assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
        assert modprobe_calls(tmp_path) == expected
    assert (tmp_path / 'sys-module' / 'nvidia_drm').is_dir() and not marker.exists()
    assert 'changed=0' in res.stdout.split('PLAY RECAP')[-1], res.stdout[-2000:]
