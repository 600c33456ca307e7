# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure node evaluation on the recorded Node objects in tests/fixtures/k8s-nodes.

Values asserted were read from the JSON files: node 'nori' has nvidia.com/gpu "1" in capacity and
allocatable, labels nvidia.com/gpu.present "true", gpu.count "1", gpu.product "NVIDIA-A16-4Q",
and Ready True (KubeletReady, lastTransitionTime 2025-03-19T20:41:10Z); the AKS nodes have no
nvidia.com/* resource or label.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import os

import pytest

from ansible_collections.baremetal.gpu.plugins.module_utils import gpu_nodes as gn

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'k8s-nodes')


def recorded(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return json.load(handle)


NORI = recorded('edgexr__rke2-vgpu-A16-4Q-nodes.json')['items'][0]
AKS = recorded('edgexr__aks-no-gpu-nodes.json')['items']


@pytest.mark.parametrize('kwargs, expected', [
    ({}, 1),
    ({'expected_per_node': 8}, 8),
    ({'gpu_count': 8}, 8),
    ({'gpu_count': 2, 'replicas': 4}, 8),
    ({'mig_devices': 7}, 7),
    ({'expected_per_node': 0}, 0),
])
def test_expected_count(kwargs, expected):
    assert gn.expected_count(**kwargs) == expected


@pytest.mark.parametrize('kwargs, fragment', [
    ({'expected_per_node': 8, 'mig_devices': 7}, 'give only one of'),
    ({'replicas': 4}, 'replicas needs gpu_count'),
    ({'gpu_count': -1}, 'gpu_count must not be negative'),
])
def test_expected_count_errors(kwargs, fragment):
    with pytest.raises(gn.NodeSpecError) as err:
        gn.expected_count(**kwargs)
    assert fragment in str(err.value)


@pytest.mark.parametrize('value, expected', [('8', 8), ('0', 0), (4, 4), ('1k', 1000), ('2Ki', 2048),
                                             (None, None), ('100m', None), ('abc', None)])
def test_parse_count(value, expected):
    assert gn.parse_count(value) == expected


def test_recorded_rke2_node_passes():
    report = gn.evaluate_node(NORI, 'nvidia.com/gpu', 1, gn.OP_EXACT,
                              {'present': True, 'count': 1, 'product': '^NVIDIA-A16'})
    assert report['problems'] == []
    assert report['capacity'] == 1 and report['allocatable'] == 1
    assert report['labels'] == {'nvidia.com/gpu.present': 'true', 'nvidia.com/gpu.count': '1',
                                'nvidia.com/gpu.product': 'NVIDIA-A16-4Q'}
    assert report['ready'] == {'status': 'True', 'reason': 'KubeletReady',
                               'message': 'kubelet is posting ready status',
                               'last_transition_time': '2025-03-19T20:41:10Z'}


def test_recorded_rke2_node_at_least_and_exact():
    assert gn.evaluate_node(NORI, 'nvidia.com/gpu', 0)['problems'] == []
    assert gn.evaluate_node(NORI, 'nvidia.com/gpu', 2)['problems'] == [
        'node nori reports nvidia.com/gpu capacity 1, expected at least 2',
        'node nori reports nvidia.com/gpu allocatable 1, expected at least 2']
    assert gn.evaluate_node(NORI, 'nvidia.com/gpu', 0, gn.OP_EXACT, waited=120)['problems'] == [
        'node nori reports nvidia.com/gpu capacity 1, expected 0 after 120 s',
        'node nori reports nvidia.com/gpu allocatable 1, expected 0 after 120 s']


def test_allocatable_zero_message_matches_style_guide():
    node = copy.deepcopy(NORI)
    node['metadata']['name'] = 'gpu-01'
    node['status']['capacity']['nvidia.com/gpu'] = '8'
    node['status']['allocatable']['nvidia.com/gpu'] = '0'
    assert gn.evaluate_node(node, 'nvidia.com/gpu', 8, gn.OP_EXACT, waited=120)['problems'] == [
        'node gpu-01 reports nvidia.com/gpu allocatable 0, expected 8 after 120 s']


def test_recorded_aks_nodes_have_no_gpu():
    for node in AKS:
        report = gn.evaluate_node(node, 'nvidia.com/gpu', 1, gfd={'present': True, 'count': 1, 'product': 'A'})
        assert report['capacity'] is None and report['allocatable'] is None
        assert report['labels'] == {'nvidia.com/gpu.present': None, 'nvidia.com/gpu.count': None,
                                    'nvidia.com/gpu.product': None}
        assert report['ready']['status'] == 'True'
        assert report['ready']['message'] == 'kubelet is posting ready status. AppArmor enabled'
        assert len(report['problems']) == 5
        assert report['problems'][2] == ('node %s label nvidia.com/gpu.present: expected true, found no such label'
                                         % node['metadata']['name'])


def test_not_ready_and_missing_ready():
    node = copy.deepcopy(NORI)
    ready = [c for c in node['status']['conditions'] if c['type'] == 'Ready'][0]
    ready.update(status='False', reason='KubeletNotReady', message='container runtime network not ready')
    assert gn.evaluate_node(node, 'nvidia.com/gpu', 1)['problems'] == [
        'node nori Ready condition: expected True, found False (KubeletNotReady: container runtime network not ready)']
    assert gn.evaluate_node(node, 'nvidia.com/gpu', 1, require_ready=False)['problems'] == []
    node['status']['conditions'] = [c for c in node['status']['conditions'] if c['type'] != 'Ready']
    assert gn.evaluate_node(node, 'nvidia.com/gpu', 1)['problems'] == [
        'node nori Ready condition: expected True, found no Ready condition']


def test_unparseable_quantity():
    node = copy.deepcopy(NORI)
    node['status']['allocatable']['nvidia.com/gpu'] = '500m'
    assert gn.evaluate_node(node, 'nvidia.com/gpu', 1)['problems'] == [
        "node nori reports nvidia.com/gpu allocatable '500m' (not a count), expected at least 1"]


def test_present_false_label_check():
    assert gn.evaluate_node(NORI, 'nvidia.com/gpu', 1, gfd={'present': False})['problems'] == [
        "node nori label nvidia.com/gpu.present: expected false, found 'true'"]
