# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Day 1 in batches (plugins/module_utils/maintenance_*.py and the filters beside it).

Real inputs: RKE2's generated containerd configs before and after it detected the nvidia runtime
(tests/fixtures/rke2), apt's answer on the Ubuntu 24.04 test node (tests/fixtures/apt/ubuntu2404-policy.txt)
and the recorded RKE2 Node (tests/fixtures/k8s-nodes). The node facts are written here in the shape
gpu_node_facts returns (its readers are tested on captured node trees in test_node_facts.py).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import os
import re

import pytest

from ansible_collections.baremetal.gpu.plugins.module_utils import apt as aptlib
from ansible_collections.baremetal.gpu.plugins.module_utils import maintenance_lease
from ansible_collections.baremetal.gpu.plugins.module_utils import maintenance_mapping
from ansible_collections.baremetal.gpu.plugins.module_utils import maintenance_nodes
from ansible_collections.baremetal.gpu.plugins.module_utils import maintenance_plan
from ansible_collections.baremetal.gpu.plugins.module_utils import maintenance_reasons
from ansible_collections.baremetal.gpu.plugins.module_utils import support
from ansible_collections.baremetal.gpu.tests.unit.plugins.module_utils.real_node import NORI, named as api

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures')


def fixture(*parts):
    with open(os.path.join(FIXTURES, *parts)) as handle:
        return handle.read()


BEFORE = fixture('rke2', 'config.toml.before')
AFTER = fixture('rke2', 'config.toml.after')
AFTER_V4 = fixture('rke2', 'config-v4.toml.after')
POLICY = aptlib.parse_policy(fixture('apt', 'ubuntu2404-policy.txt'))
H100 = {'address': '0000:00:06.0', 'device_id': '2330', 'family': 'Hopper'}


def facts(unit='rke2-server', enabled=True, present=True, loaded='580.178.04', installed=('580.178.04',),
          gpus=(H100,), nouveau=False, container=False):
    role = unit.split('-', 1)[1] if unit else ''
    return {'container': container, 'gpus': list(gpus), 'nouveau_loaded': nouveau, 'nvidia_loaded_version': loaded,
            'driver_installed_versions': list(installed),
            'rke2': {'present': present, 'unit': unit, 'role': role, 'role_reason': 'only %s is installed' % unit,
                     'units_installed': [unit] if unit else [], 'units_enabled': [unit] if unit and enabled else []}}


def node(facts_, api_node=None, config='', runtime=True, plan=None, apt=None):
    return maintenance_reasons.node(facts_, api_node, maintenance_reasons.reboot_reasons(facts_, plan, apt),
                                    maintenance_reasons.restart_reasons(config, runtime))


def driver_plan(install, remove=(), pins=None, ok=True):
    return {'ok': ok, 'install': list(install), 'remove': list(remove), 'pins': dict(pins or {}), 'branch': '580'}


# ---- what would the host layer do to a node ---------------------------------------------------------

def test_generated_configs_of_rke2():
    assert maintenance_reasons.restart_reasons(AFTER, True) == []
    assert maintenance_reasons.restart_reasons(AFTER_V4, True) == []
    assert maintenance_reasons.restart_reasons(BEFORE, True, '/x/config.toml') == ['the nvidia runtime is missing from /x/config.toml']
    assert maintenance_reasons.restart_reasons('', True) == ['the nvidia runtime is missing from config.toml']
    missing = maintenance_reasons.restart_reasons(AFTER, False)
    assert len(missing) == 1 and 'not installed yet' in missing[0]


def test_a_quiet_node_of_the_cluster():
    plan = driver_plan(['nvidia-headless-no-dkms-580-open', 'nvidia-utils-580'])
    got = node(facts(), None, AFTER, True, plan, {'packages': POLICY})
    assert got == {'in_cluster': True, 'why': 'rke2-server is enabled (only rke2-server is installed)', 'role': 'server',
                   'unit': 'rke2-server', 'reboot': [], 'restart': [], 'mig': [], 'resume': [], 'accept': [],
                   'accept_label': 'baremetal.gpu/gpu-acceptance', 'node_name': '', 'disruptive': False}


def test_driver_packages_to_install_mean_a_reboot():
    # apt says nvidia-driver-580 and nvidia-dkms-580 are not installed on the test node.
    plan = driver_plan(['nvidia-driver-580', 'nvidia-dkms-580=580.178.04*', 'nvidia-utils-580'])
    got = node(facts(), None, AFTER, True, plan, {'packages': POLICY})
    assert got['reboot'] == ['driver packages to install: nvidia-driver-580, nvidia-dkms-580']
    assert got['disruptive'] is True


def test_driver_packages_to_change_or_remove_mean_a_reboot():
    policy = copy.deepcopy(POLICY)
    policy['nvidia-utils-580']['candidate'] = '580.200.01-0ubuntu0.24.04.1'
    got = maintenance_reasons.reboot_reasons(facts(), driver_plan(['nvidia-utils-580', 'nvidia-headless-no-dkms-580-open'],
                                                                  remove=['nvidia-dkms-580']), {'packages': policy})
    assert got == ['driver packages to change: nvidia-utils-580 580.178.04-0ubuntu0.24.04.1 -> 580.200.01-0ubuntu0.24.04.1',
                   'driver packages to remove: nvidia-dkms-580']
    # A pin the installed version already matches changes nothing; another one does.
    pinned = driver_plan(['nvidia-utils-580=580.178.04*'], pins={'nvidia-utils-580': '580.178.04*'})
    assert maintenance_reasons.reboot_reasons(facts(), pinned, {'packages': policy}) == []
    pinned = driver_plan(['nvidia-utils-580=580.159.04*'], pins={'nvidia-utils-580': '580.159.04*'})
    assert maintenance_reasons.reboot_reasons(facts(), pinned, {'packages': policy}) == [
        'driver packages to change: nvidia-utils-580 580.178.04-0ubuntu0.24.04.1 -> 580.159.04*']
    # A plan that refuses (ok false) predicts nothing: the role fails before any change.
    assert maintenance_reasons.reboot_reasons(facts(), driver_plan(['nvidia-driver-580'], ok=False), {'packages': POLICY}) == []


def test_a_branch_not_installed_means_a_reboot_without_apt_too():
    # RHEL family: apt is not asked; the decided branch against the installed driver still tells.
    plan = driver_plan(['nvidia-driver-595'])
    plan['branch'] = '595'
    assert maintenance_reasons.reboot_reasons(facts(), plan, None) == [
        'driver branch 595 is not installed yet (installed: 580)']
    assert maintenance_reasons.reboot_reasons(facts(installed=(), loaded='', gpus=()), driver_plan(['nvidia-driver-580']), None) == [
        'driver branch 580 is not installed yet (installed: none)']
    assert maintenance_reasons.reboot_reasons(facts(), driver_plan(['nvidia-driver-580']), None) == []


@pytest.mark.parametrize('kwargs, reason', [
    ({'nouveau': True}, 'nouveau is loaded'),
    ({'loaded': '570.133.20'}, 'the loaded nvidia module is not the installed driver (loaded 570.133.20, installed 580.178.04)'),
    ({'loaded': ''}, 'an NVIDIA GPU is present but no nvidia module is loaded'),
])
def test_reboot_reasons_from_the_node(kwargs, reason):
    assert maintenance_reasons.reboot_reasons(facts(**kwargs)) == [reason]


def test_no_reboot_reason_in_a_container_or_without_a_gpu():
    assert maintenance_reasons.reboot_reasons(facts(loaded='', container=True)) == []
    assert maintenance_reasons.reboot_reasons(facts(loaded='', gpus=())) == []


@pytest.mark.parametrize('kwargs, api, why', [
    ({'enabled': False}, None, 'rke2-server is installed but not enabled'),
    ({'unit': '', 'present': True}, None, 'its RKE2 role is unclear'),
    ({'unit': '', 'present': False}, None, 'no RKE2 on the node'),
])
def test_nodes_outside_a_cluster_are_never_disruptive(kwargs, api, why):
    got = node(facts(**kwargs), api, BEFORE, False)
    assert got['in_cluster'] is False and got['disruptive'] is False and got['role'] == ''
    assert why in got['why']


def test_a_node_the_api_lists_is_in_the_cluster():
    got = node(facts(unit='rke2-agent', enabled=False), NORI, BEFORE, True)
    assert got['in_cluster'] is True and got['disruptive'] is True and got['role'] == 'agent'
    assert got['why'] == 'the cluster API lists Node nori'


@pytest.mark.parametrize('role, run_tags, skip_tags, runs', [
    ('nvidia_driver', None, None, True),
    ('nvidia_driver', ['all'], [], True),
    ('nvidia_driver', ['nvidia_driver_install'], [], True),
    ('nvidia_driver', ['container_toolkit'], [], False),
    ('nvidia_driver', ['all'], ['nvidia_driver'], False),
    ('rke2_nvidia_runtime', ['all'], ['nvidia_driver', 'container_toolkit'], True),
    ('rke2_nvidia_runtime', ['rke2'], [], False),
])
def test_role_runs(role, run_tags, skip_tags, runs):
    assert maintenance_reasons.role_runs(role, run_tags, skip_tags) is runs


def test_a_node_the_last_rollout_left_cordoned_goes_through_its_batch_again():
    left = copy.deepcopy(NORI)
    left['spec']['unschedulable'] = True
    left['metadata']['labels']['baremetal.gpu/host-rollout'] = 'upgrading'
    got = node(facts(unit='rke2-agent'), left, AFTER, True)
    assert got['reboot'] == [] and got['restart'] == []
    assert got['resume'] == ['the last rollout left it out of service (label baremetal.gpu/host-rollout=upgrading)']
    assert got['disruptive'] is True
    left['metadata']['labels']['baremetal.gpu/host-rollout'] = 'done'
    assert node(facts(unit='rke2-agent'), left, AFTER, True)['disruptive'] is False


def test_gpu_acceptance_of_a_new_node_only():
    """gpu_health_accept_new_nodes: the real RKE2 Node advertises nvidia.com/gpu 1, so it served GPUs before and is
    not checked (turning the acceptance on must not take a serving fleet out of service); the same Node before its
    device plugin ran (no GPU in its capacity) is new: it leaves service in a batch of its own and is uncordoned only
    after the check. Labelled pending (a batch took it out for its check, killed or failed since), it is checked
    again whatever its capacity; labelled passed, never again. Without accept_new, or outside a cluster, no check."""
    reason = 'a new node: its GPUs are checked before its first uncordon (gpu_health_accept_new_nodes)'
    quiet = node(facts(unit='rke2-agent'), NORI, AFTER, True)
    assert quiet['disruptive'] is False and quiet['accept'] == []
    assert maintenance_reasons.node(facts(unit='rke2-agent'), NORI, [], [], accept_new=True)['accept'] == []
    new = copy.deepcopy(NORI)
    for part in ('capacity', 'allocatable'):
        new['status'][part].pop('nvidia.com/gpu')
    got = maintenance_reasons.node(facts(unit='rke2-agent'), new, [], [], accept_new=True)
    assert got['accept'] == [reason] and got['disruptive'] is True
    assert got['accept_label'] == 'baremetal.gpu/gpu-acceptance'
    assert maintenance_reasons.node(facts(unit='rke2-agent'), new, [], [])['disruptive'] is False
    new['status']['capacity']['nvidia.com/gpu'] = '0'
    assert maintenance_reasons.node(facts(unit='rke2-agent'), new, [], [], accept_new=True)['accept'] == [reason]
    pending = copy.deepcopy(NORI)
    pending['metadata']['labels']['baremetal.gpu/gpu-acceptance'] = 'pending'
    assert maintenance_reasons.node(facts(unit='rke2-agent'), pending, [], [], accept_new=True)['accept'] == [reason]
    new['metadata']['labels']['baremetal.gpu/gpu-acceptance'] = 'passed'
    assert maintenance_reasons.node(facts(unit='rke2-agent'), new, [], [], accept_new=True)['disruptive'] is False
    # No Node: not a node of the cluster, or no cluster API to cordon it through.
    assert maintenance_reasons.node(facts(unit=''), None, [], [], accept_new=True)['accept'] == []
    assert maintenance_reasons.node(facts(unit='rke2-agent'), None, [], [], accept_new=True)['accept'] == []


# ---- the batches --------------------------------------------------------------------------------------

def info(in_cluster=True, role='agent', disruptive=True):
    return {'in_cluster': in_cluster, 'role': role if in_cluster else '', 'disruptive': in_cluster and disruptive}


def test_servers_one_at_a_time_and_outside_nodes_never_with_cluster_nodes():
    hosts = ['s1', 'fresh', 's2', 'a1', 'a2', 'a3', 'quiet']
    nodes = {'s1': info(role='server'), 's2': info(role='server'), 'fresh': info(in_cluster=False),
             'a1': info(), 'a2': info(), 'a3': info(), 'quiet': info(disruptive=False)}
    got = maintenance_plan.plan(2, '100%', hosts, nodes)
    assert got['batches'] == [['fresh'], ['quiet'], ['s1'], ['s2'], ['a1', 'a2'], ['a3']]
    assert got['serial'] == [1, 1, 1, 1, 2, 1]
    assert got['order'] == ['fresh', 'quiet', 's1', 's2', 'a1', 'a2', 'a3']
    assert got['servers'] == ['s1', 's2'] and got['agents'] == ['a1', 'a2', 'a3'] and got['agent_batch'] == 2
    # A server is never in a batch with another disruptive node, whatever the batch size.
    got = maintenance_plan.plan('100%', '100%', hosts, nodes)
    assert got['batches'] == [['fresh'], ['quiet'], ['s1'], ['s2'], ['a1', 'a2', 'a3']]


def test_three_servers_and_five_agents_batch_2_and_25_percent():
    # upgrade_driver.yml rebooted two RKE2 servers together (etcd quorum) with node_maintenance_batch_size 2.
    hosts = ['s1', 's2', 's3', 'a1', 'a2', 'a3', 'a4', 'a5']
    nodes = dict((h, info(role='server' if h.startswith('s') else 'agent')) for h in hosts)
    got = maintenance_plan.plan(2, '25%', hosts, nodes, [api(h) for h in hosts])
    assert got['batches'][:3] == [['s1'], ['s2'], ['s3']]
    assert got['batches'][3:] == [['a1', 'a2'], ['a3', 'a4'], ['a5']]
    assert got['limit'] == 2 and got['agent_batch'] == 2


def test_nothing_disruptive_runs_every_node_at_once():
    nodes = {'a': info(disruptive=False), 'b': info(in_cluster=False)}
    got = maintenance_plan.plan(1, '25%', ['a', 'b'], nodes)
    assert got['batches'] == [['b'], ['a']] and got['order'] == ['b', 'a'] and got['noop'] is True
    assert 'every GPU node runs at once, in parallel' in got['reason']


def test_outside_nodes_to_change_go_in_batches_of_their_own():
    busy = dict(info(in_cluster=False), disruptive=True)
    nodes = {'a1': info(), 'b1': busy, 'b2': busy, 'b3': info(in_cluster=False)}
    got = maintenance_plan.plan(1, '100%', ['a1', 'b1', 'b2', 'b3'], nodes)
    assert got['batches'] == [['b3', 'b1'], ['b2'], ['a1']]


def cpu_node(name, unschedulable=False):
    """A Node without a GPU: the real Node with its GPU capacity and GPU Feature Discovery's labels taken off."""
    out = api(name, unschedulable=unschedulable)
    for key in ('capacity', 'allocatable'):
        out['status'][key] = dict((k, v) for k, v in (out['status'].get(key) or {}).items() if not k.startswith('nvidia.com/'))
    out['metadata']['labels'] = dict((k, v) for k, v in out['metadata']['labels'].items() if not k.startswith('nvidia.com/'))
    return out


def test_max_unavailable_counts_gpu_nodes_out_anywhere_in_the_cluster():
    hosts = ['a1', 'a2', 'a3', 'a4']
    nodes = dict((h, dict(info(), node_name=h)) for h in hosts)
    cluster = [api('a1'), api('a2', unschedulable=True), api('a3'), api('a4'), api('gpu-9', unschedulable=True),
               cpu_node('cpu-1', unschedulable=True)]
    got = maintenance_plan.plan(3, 3, hosts, nodes, cluster)
    # GPU Nodes out of service count, the play's and others'; a cordoned CPU node does not.
    assert got['already_unavailable'] == ['a2', 'gpu-9'] and got['agent_batch'] == 1
    # Unless the operator asks for every Node to count.
    got = maintenance_plan.plan(3, 4, hosts, nodes, cluster, count_all_nodes=True)
    assert got['already_unavailable'] == ['a2', 'cpu-1', 'gpu-9'] and got['scope'] is None and got['agent_batch'] == 1
    with pytest.raises(ValueError, match=r'4 Node\(s\) of the cluster are out of service already'):
        maintenance_plan.plan(3, 4, hosts, nodes, cluster + [cpu_node('cpu-2', True)], count_all_nodes=True)
    # A node this engine took out itself (a crash to resume) does not count.
    cluster[1] = api('a2', unschedulable=True, labels={'baremetal.gpu/host-rollout': 'upgrading'})
    assert maintenance_plan.plan(3, 3, hosts, nodes, cluster)['agent_batch'] == 2
    # A NotReady GPU node counts as out too.
    down = api('gpu-8')
    down['status']['conditions'] = [dict(c, status='False') if c['type'] == 'Ready' else c
                                    for c in down['status']['conditions']]
    assert maintenance_plan.plan(3, 3, hosts, nodes, cluster + [down])['already_unavailable'] == ['gpu-8', 'gpu-9']


def test_a_cordoned_cpu_node_does_not_refuse_gpu_maintenance():
    # On the old count every cordoned Node of the cluster took the room: one cordoned CPU node refused the whole plan.
    nodes = {'a1': dict(info(), node_name='a1'), 'a2': dict(info(), node_name='a2')}
    cluster = [api('a1'), api('a2'), cpu_node('cpu-1', unschedulable=True)]
    got = maintenance_plan.plan(1, 1, ['a1', 'a2'], nodes, cluster)
    assert got['batches'] == [['a1'], ['a2']] and got['already_unavailable'] == []
    gate = maintenance_plan.batch_gate(['a1'], {'a1': 'a1'}, {'a1': True}, cluster, got['limit'], got['scope'])
    assert gate['go'] == ['a1']
    # The gate with every Node counted (no scope) defers it, as the operator asked.
    assert maintenance_plan.batch_gate(['a1'], {'a1': 'a1'}, {'a1': True}, cluster, 1)['defer'] == ['a1']


def test_a_percentage_is_of_the_clusters_gpu_nodes_not_of_the_play():
    # 12 new hosts outside the cluster and 4 agents of a cluster of 4 GPU Nodes, 25 %: one GPU Node at a time. On the
    # old count (25 % of the play's 16 hosts) the limit was 4 and all four agents went in one batch.
    agents = ['a%d' % i for i in range(1, 5)]
    fresh = ['new%02d' % i for i in range(1, 13)]
    nodes = dict((h, dict(info(), node_name=h)) for h in agents)
    nodes.update((h, dict(info(in_cluster=False), disruptive=True)) for h in fresh)
    cluster = [api(h) for h in agents] + [cpu_node('cpu-%d' % i) for i in range(8)]
    got = maintenance_plan.plan('25%', '25%', fresh + agents, nodes, cluster)
    assert got['base'] == 4 and got['limit'] == 1 and got['agent_batch'] == 1
    assert got['batches'][-4:] == [['a1'], ['a2'], ['a3'], ['a4']]
    # The hosts outside the cluster are batched among themselves: 25 % of 12 is 3, never with a node of the cluster.
    assert got['batches'][:4] == [fresh[0:3], fresh[3:6], fresh[6:9], fresh[9:12]]
    # With three GPU Nodes out already, a fourth is refused, with or without the new hosts in the play.
    out = [api(h, unschedulable=True) for h in ('a2', 'a3', 'a4')] + [api('a1')]
    for hosts in (agents, fresh + agents):
        with pytest.raises(ValueError, match=r'allows 1 unavailable node\(s\) \(of 4 GPU Node\(s\) of the cluster\)'):
            maintenance_plan.plan(1, '25%', hosts, dict(nodes, a2=info(disruptive=False), a3=info(disruptive=False),
                                                        a4=info(disruptive=False)), out)


def test_a_gpu_host_without_gpu_capacity_yet_is_a_gpu_node_of_the_budget():
    # Day 1: the driver is not on yet, so the host's Node lists no GPU; it is one of the play's GPU hosts all the same.
    nodes = dict((h, dict(info(), node_name=h)) for h in ('g1', 'g2'))
    got = maintenance_plan.plan(1, '50%', ['g1', 'g2'], nodes, [cpu_node('g1'), cpu_node('g2'), cpu_node('cpu-1')])
    assert got['scope'] == ['g1', 'g2'] and got['base'] == 2 and got['limit'] == 1


def test_no_room_is_refused_naming_the_variable():
    nodes = {'a1': info(), 'a2': info()}
    cluster = [api('a1', unschedulable=True), api('a2')]
    with pytest.raises(ValueError, match='node_maintenance_max_unavailable allows 1 unavailable node'):
        maintenance_plan.plan(1, 1, ['a1', 'a2'], nodes, cluster)
    # With nothing disruptive the cordoned node is no reason to refuse.
    quiet = {'a1': info(disruptive=False), 'a2': info(disruptive=False)}
    assert maintenance_plan.plan(1, 1, ['a1', 'a2'], quiet, cluster)['serial'] == [2]


def test_a_node_left_failed_is_no_reason_to_refuse_its_own_retry():
    # The last run left a1 cordoned, labelled failed (its GPU acceptance failed, say); this run takes it through its
    # batch again. Its own unavailability does not count against itself, as in the gate before its batch; another
    # node out of service still does.
    failed = copy.deepcopy(NORI)
    failed['spec']['unschedulable'] = True
    failed['metadata']['labels']['baremetal.gpu/host-rollout'] = 'failed'
    failed['metadata']['labels']['baremetal.gpu/gpu-acceptance'] = 'pending'
    retry = maintenance_reasons.node(facts(unit='rke2-agent'), failed, [], [], accept_new=True)
    assert retry['disruptive'] is True and retry['node_name'] == 'nori'
    got = maintenance_plan.plan(1, 1, ['gpu-a'], {'gpu-a': retry}, [failed])
    assert got['batches'] == [['gpu-a']] and got['already_unavailable'] == []
    with pytest.raises(ValueError, match=r'1 GPU Node\(s\) of the cluster are out of service already \(unschedulable, '
                                         r'NotReady or quarantined: other\)'):
        maintenance_plan.plan(1, 1, ['gpu-a'], {'gpu-a': retry}, [failed, api('other', unschedulable=True)])
    # Cordoned by someone else (no failed label of ours): it counts, even though this plan takes it through a batch.
    del failed['metadata']['labels']['baremetal.gpu/host-rollout']
    with pytest.raises(ValueError, match=r'quarantined: nori\)'):
        maintenance_plan.plan(1, 1, ['gpu-a'], {'gpu-a': retry}, [failed])


def quarantined_node(name):
    """A GPU Node under gpu_health's quarantine taint (schedulable: the taint alone keeps GPU pods off)."""
    node = api(name)
    node['spec']['taints'] = [{'key': 'baremetal.gpu/gpu-unhealthy', 'value': 'row_remap_pending', 'effect': 'NoSchedule'}]
    return node


def test_a_quarantined_node_counts_as_unavailable_except_for_its_own_remediation():
    # On the old count a Node under the quarantine taint counted nowhere: a driver rollout took one more Node out while
    # the quarantine already held one, beyond node_maintenance_max_unavailable.
    nodes = {'a1': dict(info(), node_name='a1'), 'a2': dict(info(), node_name='a2')}
    cluster = [api('a1'), api('a2'), quarantined_node('sick')]
    with pytest.raises(ValueError, match=r'out of service already \(unschedulable, NotReady or quarantined: sick\)'):
        maintenance_plan.plan(1, 1, ['a1', 'a2'], nodes, cluster)
    assert maintenance_nodes.unavailable(cluster) == [{'name': 'sick', 'why': 'quarantined'}]
    gate = maintenance_plan.batch_gate(['a1'], {'a1': 'a1', 'a2': 'a2'}, {'a1': True}, cluster, 1)
    assert gate['defer'] == ['a1'] and 'sick (quarantined)' in gate['message']
    # The remediation of two quarantined Nodes with room for one: the plan does not count its own quarantined Nodes,
    # and the gate before the first batch does not count the one a later batch remediates; another still counts.
    sick = [quarantined_node('q1'), quarantined_node('q2')]
    remedy = {'q1': dict(info(), node_name='q1'), 'q2': dict(info(), node_name='q2')}
    got = maintenance_plan.plan(1, 1, ['q1', 'q2'], remedy, sick)
    assert got['batches'] == [['q1'], ['q2']] and got['already_unavailable'] == []
    host_nodes = {'q1': 'q1', 'q2': 'q2'}
    assert maintenance_plan.batch_gate(['q1'], host_nodes, {'q1': True, 'q2': True}, sick, 1)['go'] == ['q1']
    # A third quarantined Node, not in this plan, fills the budget: the remediation of the quarantined ones still goes
    # (they are out of service already, so it takes no room), and a healthy node of the same plan is deferred.
    other = sick + [quarantined_node('q3')]
    assert maintenance_plan.plan(1, 1, ['q1', 'q2'], remedy, other)['already_unavailable'] == ['q3']
    assert maintenance_plan.batch_gate(['q1'], host_nodes, {'q1': True, 'q2': True}, other, 1)['go'] == ['q1']
    mixed = other + [api('h1')]
    gate = maintenance_plan.batch_gate(['q1', 'h1'], dict(host_nodes, h1='h1'), {'q1': True, 'h1': True}, mixed, 1)
    assert gate['go'] == ['q1'] and gate['defer'] == ['h1']


# ---- the budget before each batch ------------------------------------------------------------------------

def test_the_gate_shrinks_a_batch_to_what_the_cluster_allows_now():
    cluster = [api('a1'), api('a2'), api('a3'), api('other', unschedulable=True)]
    hosts = {'a1': 'a1', 'a2': 'a2', 'a3': 'a3', 'x': None}
    busy = {'a1': True, 'a2': True, 'a3': True, 'x': True}
    got = maintenance_plan.batch_gate(['a1', 'a2', 'a3', 'x'], hosts, busy, cluster, 3)
    assert got['go'] == ['a1', 'a2', 'x'] and got['defer'] == ['a3'] and got['room'] == 2
    assert got['unavailable'] == [{'name': 'other', 'why': 'unschedulable'}]
    assert 'deferred to the next run: a3' in got['message']
    # The batch's own nodes, cordoned by this run (a resume), do not count against it.
    cluster[0] = api('a1', unschedulable=True)
    assert maintenance_plan.batch_gate(['a1', 'a2'], hosts, busy, cluster, 3)['go'] == ['a1', 'a2']


def test_a_second_run_sees_the_first_runs_nodes_as_out():
    # Two operators: the first run's node is cordoned and labelled upgrading. The label must not hide it from the
    # second run's gate: a node out of service for any reason counts unless it is in this batch.
    cluster = [api('a1', unschedulable=True, labels={'baremetal.gpu/driver-upgrade': 'upgrading'}), api('a2')]
    got = maintenance_plan.batch_gate(['a2'], {'a2': 'a2'}, {'a2': True}, cluster, 1)
    assert got['go'] == [] and got['defer'] == ['a2']
    assert got['unavailable'] == [{'name': 'a1', 'why': 'unschedulable'}]
    # In the batch itself (a resume of our own) it does not count.
    assert maintenance_plan.batch_gate(['a1', 'a2'], {'a1': 'a1', 'a2': 'a2'}, {'a1': True, 'a2': True}, cluster, 1)['go'] \
        == ['a1']


def test_the_plan_puts_the_nodes_a_stopped_run_left_out_first():
    nodes = {'a1': {'in_cluster': True, 'role': 'agent', 'disruptive': True, 'resume': []},
             'a2': {'in_cluster': True, 'role': 'agent', 'disruptive': True, 'resume': []},
             'a3': {'in_cluster': True, 'role': 'agent', 'disruptive': True, 'resume': ['left cordoned']}}
    got = maintenance_plan.plan(1, 1, ['a1', 'a2', 'a3'], nodes, [api('a1'), api('a2'), api('a3')])
    assert got['batches'] == [['a3'], ['a1'], ['a2']]


# ---- which Node an inventory host is ------------------------------------------------------------------

def test_map_node_by_name_then_hostname_label_then_internal_ip():
    node = api('nori-k8s')
    node['metadata']['labels']['kubernetes.io/hostname'] = 'nori'
    node['status']['addresses'] = [{'type': 'InternalIP', 'address': '10.0.0.7'}, {'type': 'Hostname', 'address': 'x'}]
    assert maintenance_mapping.map_node('h', ['nori-k8s'], [], [node]) == {'name': 'nori-k8s', 'how': 'name nori-k8s'}
    assert maintenance_mapping.map_node('h', ['nori'], [], [node])['how'] == 'label kubernetes.io/hostname=nori'
    assert maintenance_mapping.map_node('h', ['gpu-7'], ['10.0.0.7'], [node])['how'] == 'InternalIP 10.0.0.7'
    assert maintenance_mapping.map_node('h', ['gpu-7'], ['10.0.0.8'], [node]) is None


def test_an_unmappable_node_of_a_cluster_is_refused():
    errors = maintenance_mapping.mapping_errors(['g1', 'g2'], {'g1': True, 'g2': False}, {'g1': None, 'g2': None}, True, True)
    assert errors and errors[0].startswith('g1 run RKE2 but no Node of the cluster matches them')
    assert 'baremetal_gpu_node_name' in errors[0]
    missing = maintenance_mapping.mapping_errors(['g1'], {'g1': True}, {}, False, True)
    assert 'the kubeconfig named by cluster_kubeconfig was found on no host while g1 run RKE2' in missing[0]
    # No kubeconfig named and none found at the default place: refused while hosts run RKE2 (they would be rebooted
    # uncordoned), unless node_maintenance_allow_without_cluster_api says to go on with the batching alone.
    none = maintenance_mapping.mapping_errors(['g1', 'g2'], {'g1': True, 'g2': False}, {}, False, False)
    assert len(none) == 1 and none[0].startswith('no kubeconfig was found on any host') and 'while g1 run RKE2' in none[0]
    assert 'node_maintenance_allow_without_cluster_api' in none[0] and 'cluster_kubeconfig' in none[0]
    assert maintenance_mapping.mapping_errors(['g1'], {'g1': True}, {}, False, False, allow_without_api=True) == []
    assert maintenance_mapping.mapping_errors(['g1'], {'g1': False}, {}, False, False) == []


# ---- the lock --------------------------------------------------------------------------------------------

def test_lease_decisions():
    me = maintenance_lease.holder_identity('run-1', 'ctl', '2026-11-24T10:00:00.000000Z')
    other = maintenance_lease.holder_identity('run-0', 'ctl2', '2026-11-24T09:59:00.000000Z')
    now = '2026-11-24T10:00:30.000000Z'
    assert maintenance_lease.lease_decision(None, me, now)['action'] == 'create'
    held = maintenance_lease.lease_object(other, '2026-11-24T10:00:00.000000Z', 60)
    held['metadata']['resourceVersion'] = '7'
    wait = maintenance_lease.lease_decision(held, me, now)
    assert wait['action'] == 'wait' and wait['holder'] == other
    assert wait['message'] == 'the maintenance lock is held by %s until 2026-11-24T10:01:00.000000Z' % other
    over = maintenance_lease.lease_decision(held, me, '2026-11-24T10:01:00.000000Z')
    assert over['action'] == 'take_over' and 'expired' in over['warning'] and other in over['warning']
    mine = maintenance_lease.lease_object(me, now, 60, current=held)
    assert mine['metadata']['resourceVersion'] == '7'          # optimistic concurrency
    assert mine['spec']['leaseTransitions'] == 1 and mine['spec']['acquireTime'] == now
    assert maintenance_lease.lease_decision(mine, me, now)['action'] == 'renew'
    released = maintenance_lease.lease_release(mine, me)
    assert 'holderIdentity' not in released['spec']
    assert maintenance_lease.lease_decision(released, other, now)['action'] == 'take'
    assert maintenance_lease.lease_release(mine, other) is None


class FakeStore(object):
    """A lock store answering like the API server: every write bumps resourceVersion; a create of an existing object
    or a replace carrying a stale resourceVersion raises LockConflict (409). ``race``: objects another run writes
    just before our next write (between our read and our write)."""

    def __init__(self, current=None):
        self.obj = copy.deepcopy(current)
        self.version = 10
        self.race = []
        self.writes = []

    def get(self):
        return copy.deepcopy(self.obj)

    def _store(self, obj):
        self.version += 1
        self.obj = copy.deepcopy(obj)
        self.obj['metadata']['resourceVersion'] = str(self.version)
        return copy.deepcopy(self.obj)

    def _raced(self):
        if self.race:
            self._store(self.race.pop(0))

    def create(self, obj):
        self._raced()
        if self.obj is not None:
            raise maintenance_lease.LockConflict('AlreadyExists')
        self.writes.append(('create', obj))
        return self._store(obj)

    def replace(self, obj):
        self._raced()
        if self.obj is None or obj['metadata'].get('resourceVersion') != self.obj['metadata']['resourceVersion']:
            raise maintenance_lease.LockConflict('Conflict')
        self.writes.append(('replace', obj))
        return self._store(obj)


class Clock(object):
    def __init__(self, start='2026-11-24T10:00:00.000000Z'):
        self.t = 0.0
        self.start = maintenance_lease._parse_time(start)

    def now(self):
        return (self.start + maintenance_lease.timedelta(seconds=self.t)).strftime(maintenance_lease.TIME_FORMAT)

    def clock(self):
        return self.t

    def sleep(self, seconds):
        self.t += seconds


ME = 'run-2@ctl-b@2026-11-24T10:00:00.000000Z'
OTHER = 'run-1@ctl-a@2026-11-24T09:59:00.000000Z'


def acquire(store, clock, timeout=30, duration=60, renew_only=False):
    return maintenance_lease.lock_acquire(store, ME, duration, timeout, 5, clock.now, clock.clock, clock.sleep,
                                          renew_only=renew_only)


def test_lock_is_created_then_renewed_then_released():
    store, clock = FakeStore(), Clock()
    got = acquire(store, clock)
    assert got['acquired'] and got['action'] == 'create' and got['waited'] == 0
    assert store.obj['spec']['holderIdentity'] == ME and store.obj['spec']['leaseDurationSeconds'] == 60
    clock.sleep(20)
    renewed = acquire(store, clock, renew_only=True)
    assert renewed['action'] == 'renew' and store.obj['spec']['renewTime'] == '2026-11-24T10:00:20.000000Z'
    assert store.writes[-1][1]['metadata']['resourceVersion'] == '11'     # the version read, never blind
    assert maintenance_lease.lock_release(store, ME)['released'] is True
    assert 'holderIdentity' not in store.obj['spec']


def test_lock_held_by_a_live_run_waits_then_fails_naming_the_holder():
    held = maintenance_lease.lease_object(OTHER, '2026-11-24T10:00:00.000000Z', 600)
    store, clock = FakeStore(held), Clock()
    store.obj['metadata']['resourceVersion'] = '10'
    got = acquire(store, clock, timeout=30)
    assert not got['acquired'] and got['action'] == 'wait' and got['holder'] == OTHER
    assert got['waited'] == 30
    assert got['message'].startswith('the maintenance lock is held by %s until 2026-11-24T10:10:00.000000Z; waited 30'
                                     % OTHER)
    assert store.writes == []


def held_then_released(after):
    """OTHER's live lock at version 10, released by OTHER once the waiting clock reached ``after`` seconds."""
    store, clock = FakeStore(maintenance_lease.lease_object(OTHER, '2026-11-24T10:00:00.000000Z', 600)), Clock()
    store.obj['metadata']['resourceVersion'] = '10'
    real_sleep = clock.sleep

    def sleep(seconds):
        real_sleep(seconds)
        if clock.t >= after and store.obj['spec'].get('holderIdentity'):
            store._store(maintenance_lease.lease_release(store.obj, OTHER))
    clock.sleep = sleep
    return store, clock


def test_lock_is_taken_once_the_holder_releases_it_during_the_wait():
    store, clock = held_then_released(15)
    got = acquire(store, clock, timeout=60)
    assert got['acquired'] and got['action'] == 'take' and got['waited'] == 15
    assert 'after waiting 15' in got['message'] and OTHER in got['message']
    assert store.obj['spec']['holderIdentity'] == ME and store.obj['spec']['leaseTransitions'] == 1


def test_a_plan_made_before_the_lock_is_stale_after_a_wait_or_a_write_in_between():
    # Two runs planned together; the first took the lock, the second waited for it: its plan is out of date
    # (the first may have finished the very nodes it planned), so the rollout plans again under the lock.
    store, clock = held_then_released(5)
    got = maintenance_lease.lock_acquire(store, ME, 60, 60, 5, clock.now, clock.clock, clock.sleep, seen='10')
    assert got['acquired'] and got['stale'].startswith('this run waited 5')
    # No wait, but another run took, worked and released the lock while this plan was being made (version 10 when
    # the plan began, 12 at the take): stale too.
    released = maintenance_lease.lease_release(maintenance_lease.lease_object(OTHER, '2026-11-24T10:00:00.000000Z', 600), OTHER)
    store, clock = FakeStore(released), Clock()
    store.obj['metadata']['resourceVersion'] = '12'
    got = maintenance_lease.lock_acquire(store, ME, 60, 0, 5, clock.now, clock.clock, clock.sleep, seen='10')
    assert got['acquired'] and got['waited'] == 0
    assert got['stale'] == 'the lock was written while the plan was made (version 10, now 12, last by another run)'
    # Nobody wrote it since the plan began (the same version, or still no lock at all): the plan stands.
    store, clock = FakeStore(released), Clock()
    store.obj['metadata']['resourceVersion'] = '12'
    assert maintenance_lease.lock_acquire(store, ME, 60, 0, 5, clock.now, clock.clock, clock.sleep, seen='12')['stale'] == ''
    store, clock = FakeStore(), Clock()
    assert maintenance_lease.lock_acquire(store, ME, 60, 0, 5, clock.now, clock.clock, clock.sleep, seen='')['stale'] == ''
    # A caller that did not read the lock first (seen None) is told only about a wait.
    assert maintenance_lease.plan_staleness(None, store.obj, 0) == ''


def test_expired_lock_is_taken_over_with_a_warning():
    held = maintenance_lease.lease_object(OTHER, '2026-11-24T09:00:00.000000Z', 60)
    store, clock = FakeStore(held), Clock()
    store.obj['metadata']['resourceVersion'] = '10'
    got = acquire(store, clock, timeout=0)
    assert got['acquired'] and got['action'] == 'take_over'
    assert 'expired' in got['warning'] and OTHER in got['warning']


def test_a_409_is_someone_else_taking_it_never_an_overwrite():
    # Both runs read "no lock"; the other one creates it first: our create is refused (AlreadyExists), we read
    # again, see its live hold and wait; its hold is never overwritten.
    store, clock = FakeStore(), Clock()
    store.race.append(maintenance_lease.lease_object(OTHER, clock.now(), 600))
    got = acquire(store, clock, timeout=10)
    assert not got['acquired'] and got['holder'] == OTHER and got['conflicts'] == 1
    assert store.obj['spec']['holderIdentity'] == OTHER and store.writes == []
    # The same on a take-over: the other run renews its expired lease between our read and our write (409 Conflict).
    old = maintenance_lease.lease_object(OTHER, '2026-11-24T09:00:00.000000Z', 60)
    store, clock = FakeStore(old), Clock()
    store.obj['metadata']['resourceVersion'] = '10'
    store.race.append(maintenance_lease.lease_object(OTHER, clock.now(), 600, current=store.obj))
    got = acquire(store, clock, timeout=0)
    assert not got['acquired'] and got['conflicts'] == 1 and store.obj['spec']['holderIdentity'] == OTHER


def test_renew_only_fails_when_the_lock_was_lost():
    store, clock = FakeStore(maintenance_lease.lease_object(OTHER, '2026-11-24T10:00:00.000000Z', 600)), Clock()
    store.obj['metadata']['resourceVersion'] = '10'
    got = acquire(store, clock, renew_only=True)
    assert not got['acquired'] and got['action'] == 'lost' and OTHER in got['message']


def test_release_leaves_another_runs_lock_alone():
    store = FakeStore(maintenance_lease.lease_object(OTHER, '2026-11-24T10:00:00.000000Z', 600))
    store.obj['metadata']['resourceVersion'] = '10'
    got = maintenance_lease.lock_release(store, ME)
    assert got == {'released': False, 'holder': OTHER,
                   'message': 'the maintenance lock is not held by this run (%s): left alone' % OTHER}
    assert store.obj['spec']['holderIdentity'] == OTHER


def test_lease_times_as_clients_write_them():
    # The kubernetes client writes a MicroTime with isoformat() ('+00:00'); the API server answers with 'Z'.
    for text in ('2026-11-24T10:00:00.000000Z', '2026-11-24T10:00:00+00:00', '2026-11-24T10:00:00.000000+00:00',
                 '2026-11-24T11:00:00+01:00', '2026-11-24T10:00:00Z'):
        assert maintenance_lease._parse_time(text) == maintenance_lease.datetime(2026, 11, 24, 10, 0, 0), text
    assert maintenance_lease._parse_time('2026-11-24T10:00:00.5Z').microsecond == 500000
    assert maintenance_lease._parse_time('yesterday') is None
    held = maintenance_lease.lease_object(OTHER, '2026-11-24T10:00:00.962224+00:00', 600)
    assert maintenance_lease.lease_decision(held, ME, '2026-11-24T10:05:00.000000Z')['action'] == 'wait'


def test_lock_timeout_below_zero_is_refused():
    with pytest.raises(ValueError, match='0 or more'):
        acquire(FakeStore(), Clock(), timeout=-1)


@pytest.mark.parametrize('batch, limit, words', [
    (0, 1, 'node_maintenance_batch_size must be at least 1'),
    ('0%', 1, 'node_maintenance_batch_size must be a percentage between 1% and 100%'),
    ('101%', 1, 'node_maintenance_batch_size must be a percentage between 1% and 100%'),
    (1, 'many', 'node_maintenance_max_unavailable must be a number of nodes or a percentage'),
    (-1, 1, 'node_maintenance_batch_size must be a number of nodes or a percentage'),
])
def test_bad_knobs_are_refused_naming_the_variable(batch, limit, words):
    with pytest.raises(ValueError, match=re.escape(words)):
        maintenance_plan.plan(batch, limit, ['a'], {'a': info(in_cluster=False)})


# ---- the uninstall's host part ---------------------------------------------------------------------------

def test_the_uninstall_disrupts_a_node_of_a_cluster_with_something_to_take_off():
    agent = facts(unit='rke2-agent')
    got = maintenance_reasons.uninstall_node(agent, None, True, ['/var/lib/rancher/rke2/agent/etc/containerd/config.toml.tmpl'])
    assert got['disruptive'] and got['in_cluster'] and got['role'] == 'agent' and got['reboot'] == []
    assert got['reasons'] == ['driver 580.178.04 to purge', 'the NVIDIA container runtime to remove',
                              '/var/lib/rancher/rke2/agent/etc/containerd/config.toml.tmpl to remove (RKE2 restarts)']
    # Nothing left to take off (a rerun after the uninstall): quiet, no cordon.
    bare = facts(unit='rke2-agent', installed=(), loaded='')
    assert not maintenance_reasons.uninstall_node(bare, None, False, [])['disruptive']
    # A node outside a cluster is never disruptive (nothing to cordon), whatever it holds.
    outside = facts(unit='', present=False)
    got = maintenance_reasons.uninstall_node(outside, None, True, [])
    assert not got['in_cluster'] and not got['disruptive'] and got['reasons']
    # A node the last uninstall left cordoned is resumed even with nothing left to take off.
    left = api('nori', unschedulable=True, labels={maintenance_nodes.UNINSTALL_LABEL: 'upgrading'})
    got = maintenance_reasons.uninstall_node(bare, left, False, [])
    assert got['disruptive'] and got['resume']


def test_a_restart_an_uninstall_killed_before_it_left_pending_restarts_rke2_in_a_batch():
    """Killed between the removal of rke2_nvidia_runtime's files and RKE2's restart: the files are gone, and only the
    role's record says RKE2 still runs the config that names them; without it the node looked quiet, and its restart
    was held back for good."""
    bare = facts(unit='rke2-agent', installed=(), loaded='')
    record = {'reasons': ['the files of rke2_nvidia_runtime are removed (uninstall)'], 'unit': 'rke2-agent',
              'recorded': '2026-11-29T22:30:00.000000Z'}
    got = maintenance_reasons.uninstall_node(bare, None, False, [], record)
    assert got['disruptive'] and got['restart'] == [
        'a restart recorded by an earlier run that stopped before it (2026-11-29T22:30:00.000000Z)']
    assert not maintenance_reasons.uninstall_node(bare, None, False, [], None)['disruptive']


# ---- gpu_health's remediation ------------------------------------------------------------------------------

RESET = {'step': 'reset_gpu', 'gpus': [0], 'reasons': ['GPU 0: row_remap_pending (RESET_GPU) needs a GPU reset']}
REBOOT = {'step': 'reboot', 'gpus': [], 'reasons': ['GPU 0: xid (RESTART_BM) needs a reboot']}


def test_a_gpu_reset_or_a_reboot_is_disruptive_on_a_node_of_a_cluster():
    agent = facts(unit='rke2-agent')
    got = maintenance_reasons.remediate_node(agent, api('nori'), RESET)
    assert (got['disruptive'], got['in_cluster'], got['role'], got['step'], got['gpus']) == (True, True, 'agent', 'reset_gpu', [0])
    assert got['reboot'] == [] and got['reasons'] == RESET['reasons']
    got = maintenance_reasons.remediate_node(agent, None, REBOOT)
    assert got['disruptive'] and got['reboot'] == REBOOT['reasons'] and got['gpus'] == []
    # Nothing to do: not disruptive, no reasons; outside a cluster: never disruptive (nothing to cordon).
    assert not maintenance_reasons.remediate_node(agent, api('nori'), {'step': 'none', 'reasons': ['x']})['disruptive']
    assert maintenance_reasons.remediate_node(agent, api('nori'), {'step': 'none', 'reasons': ['x']})['reasons'] == []
    outside = maintenance_reasons.remediate_node(facts(unit='', present=False), None, RESET)
    assert not outside['in_cluster'] and not outside['disruptive'] and outside['step'] == 'reset_gpu'
    # The last remediation left the node cordoned: resumed with nothing left to do.
    left = api('nori', unschedulable=True, labels={maintenance_nodes.REMEDIATION_LABEL: 'upgrading'})
    got = maintenance_reasons.remediate_node(agent, left, {'step': 'none'})
    assert got['disruptive'] and got['resume']
    # A node out of service under this label is this engine's own (a crash to resume), as under the others.
    assert maintenance_nodes.ours(left)
    assert not got['exporter_paused']


def test_a_remediation_killed_while_the_exporter_was_off_says_so_for_the_next_one():
    # The reset's label that keeps the dcgm-exporter pod off (support.EXPORTER_PAUSE), left by a killed run on a node
    # resumed with nothing left to do: its change lets the exporter back (remediate.yml).
    pause = support.EXPORTER_PAUSE
    left = api('nori', unschedulable=True, labels={maintenance_nodes.REMEDIATION_LABEL: 'upgrading',
                                                   pause['label']: pause['value']})
    got = maintenance_reasons.remediate_node(facts(unit='rke2-agent'), left, {'step': 'none'})
    assert got['exporter_paused'] and got['resume'] and got['disruptive']
    # Someone else's value of the label is not ours to remove.
    other = api('nori', labels={pause['label']: 'off-for-maintenance'})
    assert not maintenance_reasons.remediate_node(facts(unit='rke2-agent'), other, {'step': 'none'})['exporter_paused']
    # The device plugin's pause alone (gpu_health_reset_pause_exporter false) says the same.
    plugin = support.DEVICE_PLUGIN_PAUSE
    left = api('nori', unschedulable=True, labels={maintenance_nodes.REMEDIATION_LABEL: 'upgrading',
                                                   plugin['label']: plugin['value']})
    assert maintenance_reasons.remediate_node(facts(unit='rke2-agent'), left, {'step': 'none'})['exporter_paused']


def test_the_uninstall_plan_takes_servers_one_at_a_time():
    hosts = ['s1', 's2', 'a1', 'a2', 'a3']
    nodes = dict((h, maintenance_reasons.uninstall_node(facts(unit='rke2-server' if h[0] == 's' else 'rke2-agent'), None, True, []))
                 for h in hosts)
    got = maintenance_plan.plan(2, '100%', hosts, nodes, [api(h) for h in hosts], what='taken off the host layer')
    assert got['batches'] == [['s1'], ['s2'], ['a1', 'a2'], ['a3']]


def test_a_pending_rke2_restart_recorded_by_a_killed_run_makes_the_node_disruptive():
    # The generated config already has the runtime and the binary is there: only the record says a restart is owed.
    pending = {'reasons': ['the containerd template changes'], 'unit': 'rke2-agent',
               'recorded': '2026-11-24T10:00:00.000000Z'}
    reasons = maintenance_reasons.restart_reasons(AFTER, True, 'config.toml', pending)
    assert reasons == ['an RKE2 restart recorded at 2026-11-24T10:00:00.000000Z is still pending '
                       '(the containerd template changes)']
    assert maintenance_reasons.restart_reasons(AFTER, True, 'config.toml', None) == []
    got = maintenance_reasons.node(facts(unit='rke2-agent', installed=('580.178.04',)), None, [], reasons)
    assert got['disruptive'] and got['restart'] == reasons
