#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: gpu_node_capacity
short_description: Wait until Kubernetes nodes advertise the expected GPU capacity and allocatable
version_added: 0.1.0
description:
  - Reads one node, a list of nodes, or the nodes matching a label selector from the Kubernetes API
    and checks that C(status.capacity) and C(status.allocatable) for O(resource) (default
    C(nvidia.com/gpu)) are at least, or exactly, the expected count.
  - The expected count is O(expected_per_node), or O(gpu_count) x O(replicas) (time-slicing; for
    example O(gpu_count) from M(baremetal.gpu.nvidia_smi)), or O(mig_devices); with none given, at least 1.
  - Optionally checks the GPU Feature Discovery labels C(nvidia.com/gpu.present),
    C(nvidia.com/gpu.count) and C(nvidia.com/gpu.product) (a regular expression), and the Ready condition.
  - Polls every O(poll_interval) seconds for up to O(timeout) seconds, because the device plugin
    needs time after it starts to register with the kubelet.
  - Fails at once, each with its own message, when a named node does not exist, the API cannot be
    reached, or it answers 401 Unauthorized or 403 Forbidden; fails after O(timeout) naming every
    unmet expectation, for example C(node gpu-01 reports nvidia.com/gpu allocatable 0, expected 8 after 120 s).
  - Never reports C(changed). The evaluation is C(plugins/module_utils/gpu_nodes.py).
author:
  - baremetal.gpu maintainers (@baremetal-gpu)
requirements:
  - kubernetes (the Python client) on the host that runs the module, usually the controller
    (C(delegate_to=localhost)).
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - baremetal.gpu.k8s_connection
attributes:
  check_mode:
    support: full
    details: Read-only; the checks run in check mode too.
  diff_mode:
    support: none
  platform:
    platforms: posix
options:
  name:
    description:
      - Name of the node to check, or a list of names. Mutually exclusive with O(label_selector).
    type: list
    elements: str
    aliases: [names]
  label_selector:
    description:
      - Label selector choosing the nodes to check, for example V(nvidia.com/gpu.present=true).
        While it matches no node the module keeps waiting, and fails after O(timeout).
    type: str
  resource:
    description:
      - Extended resource to check, for example V(nvidia.com/gpu), V(nvidia.com/gpu.shared)
        (time-slicing with C(renameByDefault)) or V(nvidia.com/mig-1g.10gb) (MIG C(mixed) strategy).
    type: str
    default: nvidia.com/gpu
  expected_per_node:
    description:
      - Count every node must advertise. Mutually exclusive with O(gpu_count) and O(mig_devices).
    type: int
  gpu_count:
    description:
      - Physical GPUs per node (for example C(gpu_count) returned by M(baremetal.gpu.nvidia_smi));
        the expected count is O(gpu_count) x O(replicas).
    type: int
  replicas:
    description:
      - Time-slicing replicas per GPU (the device plugin's C(sharing.timeSlicing.resources[].replicas)).
        Needs O(gpu_count). Unset means 1.
    type: int
  mig_devices:
    description:
      - MIG devices per node (with the MIG C(single) strategy each is one C(nvidia.com/gpu)); for
        example the sum of C(mig_devices) over RV(baremetal.gpu.nvidia_smi#module:gpus).
    type: int
  comparison:
    description:
      - V(>=) accepts a node that advertises at least the expected count, V(==) only exactly that count.
    type: str
    choices: ['>=', '==']
    default: '>='
  gfd_labels:
    description:
      - GPU Feature Discovery labels every node must carry. Unset suboptions are not checked.
    type: dict
    suboptions:
      present:
        description: Required value of C(nvidia.com/gpu.present).
        type: bool
      count:
        description: Required value of C(nvidia.com/gpu.count) (physical GPUs, not replicas).
        type: int
      product:
        description: Regular expression C(nvidia.com/gpu.product) must match (C(re.search)), for example V(H100).
        type: str
  require_ready:
    description:
      - Require the node's Ready condition to be C(True).
    type: bool
    default: true
  timeout:
    description:
      - Seconds to wait for every node to meet the expectations. V(0) checks once.
    type: int
    default: 120
  poll_interval:
    description:
      - Seconds between two reads of the nodes.
    type: float
    default: 5
  request_timeout:
    description:
      - Seconds one API request may take.
    type: int
    default: 30
notes:
  - Tested end to end against a local HTTP server on 127.0.0.1 that replays recorded real API
    responses (C(kubectl get nodes -o json) of an RKE2 node with a vGPU and of AKS nodes without GPUs),
    with the real kubernetes client, kubeconfig loading, token auth and HTTP code; including a node
    that gains capacity during the wait, 401, 404 and connection refused. There is no Kubernetes API
    and no GPU in this project's CI, so it has not been run against a live cluster there.
seealso:
  - module: baremetal.gpu.nvidia_smi
  - module: kubernetes.core.k8s_info
  - name: NVIDIA device plugin, shared access to GPUs (time-slicing)
    description: How replicas and C(nvidia.com/gpu.shared) are advertised.
    link: https://github.com/NVIDIA/k8s-device-plugin#shared-access-to-gpus
"""

EXAMPLES = r"""
- name: Wait until gpu-01 and gpu-02 advertise 8 GPUs each
  baremetal.gpu.gpu_node_capacity:
    name: [gpu-01, gpu-02]
    expected_per_node: 8
    kubeconfig: /etc/rancher/rke2/rke2.yaml
    timeout: 300
  delegate_to: localhost

- name: Time-slicing with 4 replicas, derived from what nvidia-smi saw on the node
  baremetal.gpu.gpu_node_capacity:
    name: "{{ inventory_hostname }}"
    gpu_count: "{{ smi.gpu_count }}"
    replicas: 4
    comparison: "=="
    gfd_labels:
      present: true
      count: "{{ smi.gpu_count }}"
      product: "H100"
  delegate_to: localhost

- name: Every node labelled by GFD advertises at least one shared GPU
  baremetal.gpu.gpu_node_capacity:
    label_selector: nvidia.com/gpu.present=true
    resource: nvidia.com/gpu.shared
  delegate_to: localhost
  register: capacity

- name: Show what each node advertises
  ansible.builtin.debug:
    msg: "{{ capacity.nodes | items2dict(key_name='name', value_name='allocatable') }}"
"""

RETURN = r"""
resource:
  description: The resource checked.
  returned: always
  type: str
  sample: nvidia.com/gpu
expected:
  description: The count each node was expected to advertise (see O(comparison)).
  returned: always
  type: int
  sample: 8
comparison:
  description: V(>=) or V(==).
  returned: always
  type: str
  sample: ">="
elapsed:
  description: Seconds spent waiting.
  returned: always
  type: float
  sample: 12.5
attempts:
  description: How many times the nodes were read.
  returned: always
  type: int
  sample: 3
error:
  description:
    - Kind of failure, V(not_found) (a named node does not exist), V(unreachable) (connection failed),
      V(unauthorized) (401), V(forbidden) (403), V(api_error) (another HTTP error), V(config) (no usable
      kubeconfig),
      V(no_nodes) (the label selector matched nothing until O(timeout)) or V(not_met)
      (expectations not met after O(timeout)).
  returned: failure
  type: str
  sample: not_met
nodes:
  description: One entry per node checked, from the last read.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Node name.
      type: str
    capacity:
      description: C(status.capacity) of O(resource); V(null) when not advertised.
      type: int
    allocatable:
      description: C(status.allocatable) of O(resource); V(null) when not advertised.
      type: int
    labels:
      description: The GFD labels checked and their values (V(null) when absent).
      type: dict
    ready:
      description: The Ready condition (C(status), C(reason), C(message), C(last_transition_time)); V(null) when absent.
      type: dict
    problems:
      description: Every unmet expectation of this node; empty when it passed.
      type: list
      elements: str
  sample:
    - name: nori
      capacity: 1
      allocatable: 1
      labels:
        nvidia.com/gpu.present: "true"
        nvidia.com/gpu.product: NVIDIA-A16-4Q
      ready:
        status: "True"
        reason: KubeletReady
        message: kubelet is posting ready status
        last_transition_time: "2025-03-19T20:41:10Z"
      problems: []
"""

import re
import time

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.baremetal.gpu.plugins.module_utils.gpu_nodes import (
    NodeSpecError,
    evaluate_node,
    expected_count,
)
from ansible_collections.baremetal.gpu.plugins.module_utils.k8s_client import (
    AUTH_ARG_SPEC,
    KUBERNETES_IMPORT_ERROR,
    K8sConnectionError,
    NodeReader,
    build_configuration,
    resolve_auth,
)


def argument_spec():
    spec = dict(
        name=dict(type='list', elements='str', aliases=['names']),
        label_selector=dict(type='str'),
        resource=dict(type='str', default='nvidia.com/gpu'),
        expected_per_node=dict(type='int'),
        gpu_count=dict(type='int'),
        replicas=dict(type='int'),
        mig_devices=dict(type='int'),
        comparison=dict(type='str', choices=['>=', '=='], default='>='),
        gfd_labels=dict(type='dict', options=dict(
            present=dict(type='bool'),
            count=dict(type='int'),
            product=dict(type='str'),
        )),
        require_ready=dict(type='bool', default=True),
        timeout=dict(type='int', default=120),
        poll_interval=dict(type='float', default=5),
        request_timeout=dict(type='int', default=30),
    )
    spec.update(AUTH_ARG_SPEC)
    return spec


def read_nodes(reader, params):
    if params['name']:
        return [reader.read_node(name) for name in params['name']]
    return reader.list_nodes(params['label_selector'])


def main():
    module = AnsibleModule(
        argument_spec=argument_spec(),
        mutually_exclusive=[('name', 'label_selector'), ('expected_per_node', 'gpu_count', 'mig_devices')],
        required_one_of=[('name', 'label_selector')],
        required_by={'replicas': 'gpu_count'},
        supports_check_mode=True,
    )
    params = module.params
    result = dict(changed=False, resource=params['resource'], expected=None, comparison=params['comparison'],
                  elapsed=0.0, attempts=0, nodes=[])

    if KUBERNETES_IMPORT_ERROR:
        module.fail_json(msg=missing_required_lib('kubernetes'), exception=KUBERNETES_IMPORT_ERROR, **result)
    try:
        result['expected'] = expected_count(params['expected_per_node'], params['gpu_count'],
                                            params['replicas'], params['mig_devices'])
    except NodeSpecError as exc:
        module.fail_json(msg=str(exc), **result)
    if params['timeout'] < 0 or params['poll_interval'] <= 0:
        module.fail_json(msg='timeout must be >= 0 and poll_interval > 0, got %s and %s'
                             % (params['timeout'], params['poll_interval']), **result)
    gfd = params['gfd_labels'] or {}
    if gfd.get('product') is not None:
        try:
            re.compile(gfd['product'])
        except re.error as exc:
            module.fail_json(msg='gfd_labels.product %r is not a valid regular expression: %s'
                                 % (gfd['product'], exc), **result)

    try:
        reader = NodeReader(build_configuration(resolve_auth(params)), params['request_timeout'])
    except K8sConnectionError as exc:
        module.fail_json(msg=exc.message, error=exc.kind, **result)

    start = time.monotonic()
    while True:
        result['attempts'] += 1
        try:
            nodes = read_nodes(reader, params)
        except K8sConnectionError as exc:
            result['elapsed'] = round(time.monotonic() - start, 1)
            module.fail_json(msg=exc.message, error=exc.kind, **result)
        elapsed = time.monotonic() - start
        timed_out = elapsed >= params['timeout']
        reports = [evaluate_node(node, params['resource'], result['expected'], params['comparison'], gfd,
                                 params['require_ready'], params['timeout'] if timed_out else None)
                   for node in nodes]
        result.update(nodes=reports, elapsed=round(elapsed, 1))
        problems = [p for report in reports for p in report['problems']]
        if nodes and not problems:
            module.exit_json(**result)
        if timed_out:
            if not nodes:
                module.fail_json(msg='no node matches label selector %r after %s s'
                                     % (params['label_selector'], params['timeout']), error='no_nodes', **result)
            module.fail_json(msg='; '.join(problems), error='not_met', **result)
        time.sleep(min(params['poll_interval'], max(params['timeout'] - elapsed, 0.01)))


if __name__ == '__main__':
    main()
