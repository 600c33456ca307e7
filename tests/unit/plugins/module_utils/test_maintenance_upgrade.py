# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rollout planning and GPU pod selection (plugins/module_utils/maintenance_*.py).

Nodes are the recorded RKE2 node of tests/fixtures/k8s-nodes (SOURCE.md there), copied and changed
per case (unschedulable, labels). No recorded Pod list was at hand: the pods are written here from
the Pod API and each is validated against the Kubernetes 1.31 Pod schema (kubernetes-validate).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.baremetal.gpu.plugins.module_utils import maintenance_nodes
from ansible_collections.baremetal.gpu.plugins.module_utils import maintenance_plan
from ansible_collections.baremetal.gpu.plugins.module_utils import maintenance_reasons
from ansible_collections.baremetal.gpu.tests.unit.plugins.module_utils.real_node import named as node

HOSTS = ['gpu-a', 'gpu-b', 'gpu-c', 'gpu-d']


@pytest.mark.parametrize('value, total, expected', [
    (1, 4, 1), ('2', 4, 2), ('25%', 4, 1), ('50%', 4, 2), ('100%', 4, 4), ('10%', 4, 1), ('25%', 100, 25),
])
def test_parse_count(value, total, expected):
    assert maintenance_plan.parse_count(value, total, 'node_maintenance_batch_size') == expected


@pytest.mark.parametrize('value, words', [
    (0, 'at least 1'), ('0', 'at least 1'), ('-1', 'number of nodes or a percentage'), ('0%', 'between 1% and 100%'),
    ('101%', 'between 1% and 100%'), ('half', 'number of nodes or a percentage'), ('', 'number of nodes'),
])
def test_parse_count_refusals(value, words):
    with pytest.raises(ValueError) as err:
        maintenance_plan.parse_count(value, 4, 'node_maintenance_batch_size')
    assert 'node_maintenance_batch_size' in str(err.value) and words in str(err.value)


def unode(host, status_done, api_node=None, role='agent', enabled=False):
    facts = {'rke2': {'unit': 'rke2-' + role, 'role': role, 'units_enabled': ['rke2-' + role] if enabled else []}}
    return maintenance_reasons.upgrade_node(facts, api_node, {'done': status_done, 'reasons': [] if status_done else ['x']})


def test_the_first_reason_of_a_pending_node_says_the_change():
    """The engine's enter step annotates the Node with the reasons: the first says where the node goes."""
    facts = dict(ON_595, driver_installed_branches=['580'], driver_stack_packages=['nvidia-utils-580'])
    got = maintenance_reasons.upgrade_node(facts, None, maintenance_reasons.host_status(facts, {}, '595'))
    assert got['disruptive'] and got['reasons'][:2] == ['to driver branch 595', 'installed branches: 580']
    resumed = maintenance_reasons.upgrade_node(ON_595, node('gpu-a', labels={'baremetal.gpu/driver-upgrade': 'upgrading'}),
                                               maintenance_reasons.host_status(ON_595, {}, '595'))
    assert resumed['resume'] and resumed['reasons'] == [
        'a stopped run left the Node out of service (labelled upgrading): back in service']


def test_upgrade_plan_counts_nodes_already_out():
    apis = {'gpu-a': node('gpu-a'), 'gpu-b': node('gpu-b', unschedulable=True), 'gpu-c': node('gpu-c'), 'gpu-d': None}
    nodes = dict((h, unode(h, False, apis[h])) for h in HOSTS)
    got = maintenance_plan.plan(2, 2, HOSTS, nodes, [n for n in apis.values() if n], what='moved to branch 595')
    assert got['agent_batch'] == 1 and got['already_unavailable'] == ['gpu-b']
    assert got['pending'] == ['gpu-d', 'gpu-a', 'gpu-b', 'gpu-c'] and got['noop'] is False
    # gpu-d is no node of the cluster: a batch of its own, first.
    assert got['batches'] == [['gpu-d'], ['gpu-a'], ['gpu-b'], ['gpu-c']]
    assert 'minus 1 GPU Node(s) already out of service' in got['reason']


def test_upgrade_plan_resumes_its_own_cordon():
    apis = {'gpu-a': node('gpu-a', unschedulable=True, labels={maintenance_nodes.STATE_LABEL: 'upgrading'}), 'gpu-b': node('gpu-b')}
    nodes = dict((h, unode(h, False, apis[h])) for h in apis)
    got = maintenance_plan.plan(1, 1, ['gpu-a', 'gpu-b'], nodes, list(apis.values()))
    assert got['agent_batch'] == 1 and got['already_unavailable'] == []


def test_a_node_left_cordoned_after_its_done_record_is_resumed():
    # A kill after the host's done record and before the leave step: the host shows the change done, the Node is still
    # cordoned and labelled upgrading. Before, the plan took it as done and it stayed out of service for good.
    stuck = node('gpu-a', unschedulable=True, labels={maintenance_nodes.STATE_LABEL: 'upgrading'})
    got = unode('gpu-a', True, stuck)
    assert got['disruptive'] is True and got['resume'] is True and got['done'] is False
    assert got['reasons'] == ['a stopped run left the Node out of service (labelled upgrading): back in service']
    plan = maintenance_plan.plan(1, 1, ['gpu-a'], {'gpu-a': got}, [stuck])
    assert plan['pending'] == ['gpu-a'] and plan['batches'] == [['gpu-a']]
    # Done and back in service: nothing to do.
    assert unode('gpu-a', True, node('gpu-a', labels={maintenance_nodes.STATE_LABEL: 'done'}))['disruptive'] is False


def test_upgrade_plan_skip_label_and_done_nodes():
    apis = {'gpu-a': node('gpu-a', labels={maintenance_nodes.SKIP_LABEL: 'true'}),
            'gpu-b': node('gpu-b', labels={maintenance_nodes.STATE_LABEL: 'done'}), 'gpu-c': node('gpu-c')}
    nodes = {'gpu-a': unode('gpu-a', False, apis['gpu-a']), 'gpu-b': unode('gpu-b', False, apis['gpu-b']),
             'gpu-c': unode('gpu-c', True, apis['gpu-c'])}
    got = maintenance_plan.plan(1, '25%', ['gpu-a', 'gpu-b', 'gpu-c'], nodes, list(apis.values()))
    assert got['skip'] == ['gpu-a'] and got['quiet'] == ['gpu-c'] and got['pending'] == ['gpu-b']


def test_upgrade_plan_noop_when_every_node_has_the_branch():
    got = maintenance_plan.plan(1, 1, HOSTS, dict((h, unode(h, True)) for h in HOSTS), None)
    assert got['noop'] is True and got['pending'] == []


def test_upgrade_plan_refuses_when_no_room():
    apis = [node('gpu-a', unschedulable=True), node('gpu-b', unschedulable=True)]
    nodes = {'gpu-a': unode('gpu-a', False, apis[0]), 'gpu-b': unode('gpu-b', False, apis[1]), 'gpu-c': unode('gpu-c', False, node('gpu-c')),
             'gpu-d': unode('gpu-d', False, node('gpu-d'))}
    with pytest.raises(ValueError) as err:
        maintenance_plan.plan(1, '50%', HOSTS, nodes, apis)
    assert 'node_maintenance_max_unavailable allows 2' in str(err.value) and 'gpu-a, gpu-b' in str(err.value)


def test_an_enabled_rke2_server_without_a_node_is_still_in_the_cluster():
    got = unode('s', False, None, role='server', enabled=True)
    assert got['in_cluster'] is True and got['role'] == 'server' and got['disruptive'] is True


def pod(name, namespace='default', resources=None, phase='Running', owner=None, labels=None, init=False):
    container = {'name': 'main', 'image': 'registry.example/app:1'}
    if resources:
        container['resources'] = resources
    spec = {'nodeName': 'gpu-a', 'containers': [{'name': 'side', 'image': 'registry.example/side:1'}]}
    if init:
        spec['initContainers'] = [container]
    else:
        spec['containers'].insert(0, container)
    meta = {'name': name, 'namespace': namespace, 'labels': labels or {}}
    if owner:
        meta['ownerReferences'] = [{'apiVersion': 'apps/v1', 'kind': owner[0], 'name': owner[1], 'uid': '1', 'controller': True}]
    return {'apiVersion': 'v1', 'kind': 'Pod', 'metadata': meta, 'spec': spec, 'status': {'phase': phase}}


PODS = [
    pod('train-0', 'ml', {'limits': {'nvidia.com/gpu': '2'}}, labels={'app': 'train'}, owner=('StatefulSet', 'train')),
    pod('mig-job', 'ml', {'limits': {'nvidia.com/mig-1g.10gb': '1'}}),
    pod('shared', 'ml', {'requests': {'nvidia.com/gpu.shared': '1'}, 'limits': {'nvidia.com/gpu.shared': '1'}}),
    pod('init-gpu', 'ml', {'limits': {'nvidia.com/gpu': '1'}}, init=True),
    pod('done-job', 'ml', {'limits': {'nvidia.com/gpu': '1'}}, phase='Succeeded'),
    pod('web', 'default', {'limits': {'cpu': '1'}}),
    pod('nvidia-dcgm-exporter-x', 'nvidia-dcgm', None, owner=('DaemonSet', 'dcgm-exporter')),
]


PODS[0]['spec']['volumes'] = [{'name': 'scratch', 'emptyDir': {}}]


def test_pods_are_valid_kubernetes_objects():
    kubernetes_validate = pytest.importorskip('kubernetes_validate')
    for item in PODS:
        kubernetes_validate.validate(item, '1.31.0', strict=True)


def test_gpu_pods():
    got = maintenance_nodes.gpu_pods(PODS)
    assert [(p['namespace'], p['name']) for p in got] == [('ml', 'init-gpu'), ('ml', 'mig-job'), ('ml', 'shared'), ('ml', 'train-0')]
    assert got[-1] == {'namespace': 'ml', 'name': 'train-0', 'resources': ['nvidia.com/gpu'], 'owner': 'StatefulSet/train',
                       'empty_dir': True}
    assert [p['name'] for p in got if p['empty_dir']] == ['train-0']


def test_gpu_pods_with_selector():
    assert [p['name'] for p in maintenance_nodes.gpu_pods(PODS, {'app': 'train'})] == ['train-0']


# ---- host_status: is a host done with the move to a branch? ----------------------------------------
# Package names as dpkg lists them on the Ubuntu 24.04 test nodes (580 and 595 from noble-updates).

ON_595 = {
    'driver_installed_branches': ['595'],
    'driver_stack_packages': ['libnvidia-compute-595', 'linux-modules-nvidia-595-open-6.8.0-90-generic',
                              'linux-signatures-nvidia-6.8.0-90-generic', 'nvidia-container-toolkit',
                              'nvidia-firmware-595-595.58.03', 'nvidia-headless-no-dkms-595-open', 'nvidia-utils-595'],
    'driver_held_packages': ['linux-modules-nvidia-595-open-6.8.0-90-generic', 'nvidia-headless-no-dkms-595-open',
                             'nvidia-utils-595'],
    'driver_dkms_modules': [],
}


@pytest.mark.parametrize('name, branch', [
    ('nvidia-utils-580', '580'), ('libnvidia-gl-595', '595'), ('nvidia-headless-no-dkms-580-open', '580'),
    ('nvidia-firmware-580-580.178.04', '580'), ('linux-modules-nvidia-595-open-6.8.0-100-generic', '595'),
    ('xserver-xorg-video-nvidia-580', '580'), ('nvidia-dkms-595-server-open', '595'),
    ('linux-signatures-nvidia-6.8.0-100-generic', ''), ('nvidia-container-toolkit', ''), ('nvidia-driver', ''),
    ('libnvidia-container1', ''), ('nvidia-kernel-common-580', '580'),
])
def test_package_branch(name, branch):
    assert maintenance_reasons.package_branch(name) == branch


def test_host_on_the_target_and_held_is_done():
    status = maintenance_reasons.host_status(ON_595, {'state': 'done', 'to': '595'}, '595')
    assert status == {'branch': '595', 'done': True, 'reasons': [], 'target': '595'}
    assert maintenance_reasons.host_status(ON_595, None, 595)['done']     # installed on day 1, no record


def test_host_on_the_old_branch_is_pending():
    facts = dict(ON_595, driver_installed_branches=['580'],
                 driver_stack_packages=['nvidia-utils-580'], driver_held_packages=['nvidia-utils-580'])
    status = maintenance_reasons.host_status(facts, {}, '595')
    assert not status['done'] and status['branch'] == '580'
    assert status['reasons'][0] == 'installed branches: 580'


@pytest.mark.parametrize('change, words', [
    ({'driver_stack_packages': ON_595['driver_stack_packages'] + ['linux-modules-nvidia-580-open-6.8.0-90-generic']},
     'packages of another branch: linux-modules-nvidia-580-open-6.8.0-90-generic'),
    ({'driver_dkms_modules': [{'module': 'nvidia', 'version': '580.178.04', 'kernel': '6.8.0-90-generic',
                               'arch': 'x86_64'}]}, 'DKMS builds of another branch: nvidia/580.178.04'),
    ({'driver_held_packages': []}, 'no package of branch 595 is held'),
    ({'driver_installed_branches': ['580', '595']}, 'installed branches: 580, 595'),
])
def test_host_with_leftovers_is_not_done(change, words):
    status = maintenance_reasons.host_status(dict(ON_595, **change), {'state': 'done', 'to': '595'}, '595')
    assert not status['done'] and words in status['reasons']


def test_holds_are_not_required_when_holding_is_off():
    assert maintenance_reasons.host_status(dict(ON_595, driver_held_packages=[]), {}, '595', hold=False)['done']


@pytest.mark.parametrize('state', ['upgrading', 'failed'])
def test_an_unfinished_upgrade_goes_through_again(state):
    status = maintenance_reasons.host_status(ON_595, {'state': state, 'to': '595', 'started': '2026-11-23T08:00:00.000001Z'}, '595')
    assert not status['done']
    assert status['reasons'] == ['its last upgrade (to 595, started 2026-11-23T08:00:00.000001Z) ended in state %s' % state]
