# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Day 1 in batches (plugins/module_utils/host_rollout.py and the filters beside it).

Real inputs: RKE2's generated containerd configs before and after it detected the nvidia runtime
(tests/fixtures/rke2), apt's answer on the Ubuntu 24.04 test node (tests/fixtures/apt/ubuntu2404-policy.txt)
and the recorded RKE2 Node (tests/fixtures/k8s-nodes). The node facts are written here in the shape
gpu_node_facts returns (its readers are tested on captured node trees in test_node_facts.py).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import os
import re

import pytest

from ansible_collections.baremetal.gpu.plugins.module_utils import apt as aptlib
from ansible_collections.baremetal.gpu.plugins.module_utils import host_rollout

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures')


def fixture(*parts):
    with open(os.path.join(FIXTURES, *parts)) as handle:
        return handle.read()


BEFORE = fixture('rke2', 'config.toml.before')
AFTER = fixture('rke2', 'config.toml.after')
AFTER_V4 = fixture('rke2', 'config-v4.toml.after')
POLICY = aptlib.parse_policy(fixture('apt', 'ubuntu2404-policy.txt'))
NORI = json.loads(fixture('k8s-nodes', 'edgexr__rke2-vgpu-A16-4Q-nodes.json'))['items'][0]
H100 = {'address': '0000:00:06.0', 'device_id': '2330', 'family': 'Hopper'}


def facts(unit='rke2-server', enabled=True, present=True, loaded='580.178.04', installed=('580.178.04',),
          gpus=(H100,), nouveau=False, container=False):
    role = unit.split('-', 1)[1] if unit else ''
    return {'container': container, 'gpus': list(gpus), 'nouveau_loaded': nouveau, 'nvidia_loaded_version': loaded,
            'driver_installed_versions': list(installed),
            'rke2': {'present': present, 'unit': unit, 'role': role, 'role_reason': 'only %s is installed' % unit,
                     'units_installed': [unit] if unit else [], 'units_enabled': [unit] if unit and enabled else []}}


def node(facts_, api_node=None, config='', runtime=True, plan=None, apt=None):
    return host_rollout.node(facts_, api_node, host_rollout.reboot_reasons(facts_, plan, apt),
                             host_rollout.restart_reasons(config, runtime))


def driver_plan(install, remove=(), pins=None, ok=True):
    return {'ok': ok, 'install': list(install), 'remove': list(remove), 'pins': dict(pins or {}), 'branch': '580'}


# ---- what would the host layer do to a node ---------------------------------------------------------

def test_generated_configs_of_rke2():
    assert host_rollout.restart_reasons(AFTER, True) == []
    assert host_rollout.restart_reasons(AFTER_V4, True) == []
    assert host_rollout.restart_reasons(BEFORE, True, '/x/config.toml') == ['the nvidia runtime is missing from /x/config.toml']
    assert host_rollout.restart_reasons('', True) == ['the nvidia runtime is missing from config.toml']
    missing = host_rollout.restart_reasons(AFTER, False)
    assert len(missing) == 1 and 'not installed yet' in missing[0]


def test_a_quiet_node_of_the_cluster():
    plan = driver_plan(['nvidia-headless-no-dkms-580-open', 'nvidia-utils-580'])
    got = node(facts(), None, AFTER, True, plan, {'packages': POLICY})
    assert got == {'in_cluster': True, 'why': 'rke2-server is enabled (only rke2-server is installed)', 'role': 'server',
                   'unit': 'rke2-server', 'reboot': [], 'restart': [], 'resume': [], 'disruptive': False}


def test_driver_packages_to_install_mean_a_reboot():
    # apt says nvidia-driver-580 and nvidia-dkms-580 are not installed on the test node.
    plan = driver_plan(['nvidia-driver-580', 'nvidia-dkms-580=580.178.04*', 'nvidia-utils-580'])
    got = node(facts(), None, AFTER, True, plan, {'packages': POLICY})
    assert got['reboot'] == ['driver packages to install: nvidia-driver-580, nvidia-dkms-580']
    assert got['disruptive'] is True


def test_driver_packages_to_change_or_remove_mean_a_reboot():
    policy = copy.deepcopy(POLICY)
    policy['nvidia-utils-580']['candidate'] = '580.200.01-0ubuntu0.24.04.1'
    got = host_rollout.reboot_reasons(facts(), driver_plan(['nvidia-utils-580', 'nvidia-headless-no-dkms-580-open'],
                                                           remove=['nvidia-dkms-580']), {'packages': policy})
    assert got == ['driver packages to change: nvidia-utils-580 580.178.04-0ubuntu0.24.04.1 -> 580.200.01-0ubuntu0.24.04.1',
                   'driver packages to remove: nvidia-dkms-580']
    # A pin the installed version already matches changes nothing; another one does.
    pinned = driver_plan(['nvidia-utils-580=580.178.04*'], pins={'nvidia-utils-580': '580.178.04*'})
    assert host_rollout.reboot_reasons(facts(), pinned, {'packages': policy}) == []
    pinned = driver_plan(['nvidia-utils-580=580.159.04*'], pins={'nvidia-utils-580': '580.159.04*'})
    assert host_rollout.reboot_reasons(facts(), pinned, {'packages': policy}) == [
        'driver packages to change: nvidia-utils-580 580.178.04-0ubuntu0.24.04.1 -> 580.159.04*']
    # A plan that refuses (ok false) predicts nothing: the role fails before any change.
    assert host_rollout.reboot_reasons(facts(), driver_plan(['nvidia-driver-580'], ok=False), {'packages': POLICY}) == []


def test_a_branch_not_installed_means_a_reboot_without_apt_too():
    # RHEL family: apt is not asked; the decided branch against the installed driver still tells.
    plan = driver_plan(['nvidia-driver-595'])
    plan['branch'] = '595'
    assert host_rollout.reboot_reasons(facts(), plan, None) == [
        'driver branch 595 is not installed yet (installed: 580)']
    assert host_rollout.reboot_reasons(facts(installed=(), loaded='', gpus=()), driver_plan(['nvidia-driver-580']), None) == [
        'driver branch 580 is not installed yet (installed: none)']
    assert host_rollout.reboot_reasons(facts(), driver_plan(['nvidia-driver-580']), None) == []


@pytest.mark.parametrize('kwargs, reason', [
    ({'nouveau': True}, 'nouveau is loaded'),
    ({'loaded': '570.133.20'}, 'the loaded nvidia module is not the installed driver (loaded 570.133.20, installed 580.178.04)'),
    ({'loaded': ''}, 'an NVIDIA GPU is present but no nvidia module is loaded'),
])
def test_reboot_reasons_from_the_node(kwargs, reason):
    assert host_rollout.reboot_reasons(facts(**kwargs)) == [reason]


def test_no_reboot_reason_in_a_container_or_without_a_gpu():
    assert host_rollout.reboot_reasons(facts(loaded='', container=True)) == []
    assert host_rollout.reboot_reasons(facts(loaded='', gpus=())) == []


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
    assert host_rollout.role_runs(role, run_tags, skip_tags) is runs


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


# ---- the batches --------------------------------------------------------------------------------------

def info(in_cluster=True, role='agent', disruptive=True):
    return {'in_cluster': in_cluster, 'role': role if in_cluster else '', 'disruptive': in_cluster and disruptive}


def api(name, unschedulable=False, labels=None):
    out = copy.deepcopy(NORI)
    out['metadata']['name'] = name
    out['metadata']['labels'].update(labels or {})
    if unschedulable:
        out['spec']['unschedulable'] = True
    return out


def test_servers_one_at_a_time_and_the_rest_with_the_first_batch():
    hosts = ['s1', 'fresh', 's2', 'a1', 'a2', 'a3', 'quiet']
    nodes = {'s1': info(role='server'), 's2': info(role='server'), 'fresh': info(in_cluster=False),
             'a1': info(), 'a2': info(), 'a3': info(), 'quiet': info(disruptive=False)}
    got = host_rollout.plan(2, '100%', hosts, nodes)
    assert got['batches'] == [['fresh', 'quiet', 's1'], ['s2'], ['a1', 'a2'], ['a3']]
    assert got['serial'] == [3, 1, 2, 1]
    assert got['order'] == ['fresh', 'quiet', 's1', 's2', 'a1', 'a2', 'a3']
    assert got['servers'] == ['s1', 's2'] and got['agents'] == ['a1', 'a2', 'a3'] and got['agent_batch'] == 2
    # A server is never in a batch with another disruptive node, whatever the batch size.
    got = host_rollout.plan('100%', '100%', hosts, nodes)
    assert got['batches'] == [['fresh', 'quiet', 's1'], ['s2'], ['a1', 'a2', 'a3']]


def test_nothing_disruptive_runs_every_node_at_once():
    nodes = {'a': info(disruptive=False), 'b': info(in_cluster=False)}
    got = host_rollout.plan(1, '25%', ['a', 'b'], nodes)
    assert got['serial'] == [2] and got['batches'] == [['a', 'b']] and got['order'] == ['a', 'b']
    assert 'every GPU node runs at once' in got['reason']


def test_agents_only_first_batch_carries_the_others():
    nodes = {'a1': info(), 'a2': info(), 'b': info(in_cluster=False)}
    got = host_rollout.plan(1, '100%', ['a1', 'a2', 'b'], nodes)
    assert got['batches'] == [['b', 'a1'], ['a2']] and got['serial'] == [2, 1]


def test_max_unavailable_counts_nodes_already_cordoned():
    hosts = ['a1', 'a2', 'a3', 'a4']
    nodes = dict((h, info()) for h in hosts)
    apis = {'a1': api('a1'), 'a2': api('a2', unschedulable=True), 'a3': api('a3'), 'a4': api('a4')}
    got = host_rollout.plan(3, 3, hosts, nodes, apis)
    assert got['already_unavailable'] == ['a2'] and got['agent_batch'] == 2
    # A node this rollout cordoned itself (a crash to resume) does not count.
    apis['a2'] = api('a2', unschedulable=True, labels={'baremetal.gpu/host-rollout': 'upgrading'})
    assert host_rollout.plan(3, 3, hosts, nodes, apis)['agent_batch'] == 3


def test_no_room_is_refused_naming_the_variable():
    nodes = {'a1': info(), 'a2': info()}
    apis = {'a1': api('a1', unschedulable=True), 'a2': api('a2')}
    with pytest.raises(ValueError, match='upgrade_max_unavailable allows 1 unavailable GPU node'):
        host_rollout.plan(1, 1, ['a1', 'a2'], nodes, apis)
    # With nothing disruptive the cordoned node is no reason to refuse.
    quiet = {'a1': info(disruptive=False), 'a2': info(disruptive=False)}
    assert host_rollout.plan(1, 1, ['a1', 'a2'], quiet, apis)['serial'] == [2]


@pytest.mark.parametrize('batch, limit, words', [
    (0, 1, 'upgrade_batch_size must be at least 1'),
    ('0%', 1, 'upgrade_batch_size must be a percentage between 1% and 100%'),
    ('101%', 1, 'upgrade_batch_size must be a percentage between 1% and 100%'),
    (1, 'many', 'upgrade_max_unavailable must be a number of nodes or a percentage'),
    (-1, 1, 'upgrade_batch_size must be a number of nodes or a percentage'),
])
def test_bad_knobs_are_refused_naming_the_variable(batch, limit, words):
    with pytest.raises(ValueError, match=re.escape(words)):
        host_rollout.plan(batch, limit, ['a'], {'a': info(in_cluster=False)})
