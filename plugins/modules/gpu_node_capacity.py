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
  - Fails at once, each with its own message, when a named node does not exist, the configuration
    cannot be loaded, or the API answers 401 Unauthorized or 403 Forbidden.
  - Retries, within O(timeout), when the API cannot be reached (connection refused, no answer within
    O(request_timeout)) or answers 429, 500, 502, 503 or 504 (an API server restarting or overloaded);
    fails after O(timeout) with the last such error and the number of attempts.
  - Fails after O(timeout) naming every unmet expectation, for example
    C(node gpu-01 reports nvidia.com/gpu allocatable 0, expected 8 after 120 s).
  - Never reports C(changed). The evaluation is C(plugins/module_utils/gpu_nodes.py).
author:
  - baremetal.gpu maintainers (@baremetal-gpu)
requirements:
  - kubernetes (the Python client) and PyYAML on the host that runs the module, usually the
    controller (C(delegate_to=localhost)).
  - The collection kubernetes.core, whose API client and connection options the module uses.
extends_documentation_fragment:
  - baremetal.gpu.attributes
  - baremetal.gpu.kubernetes
attributes:
  check_mode:
    details: Read-only; the checks run in check mode too.
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
      - Seconds to wait for every node to meet the expectations, retrying API errors that can pass
        (see above). V(0) reads the nodes once and does not retry.
      - A request in flight when the wait ends may take up to O(request_timeout) more.
    type: int
    default: 120
  poll_interval:
    description:
      - Seconds between two reads of the nodes.
    type: float
    default: 5
  request_timeout:
    description:
      - Seconds one API request may take, at least V(1). A request that takes longer counts as
        unreachable and is retried within O(timeout).
      - The limit covers the whole request, including the kubernetes client's own retries and the API
        discovery that kubernetes.core's client makes when it connects.
      - V(0) is refused; it does not mean "no limit".
    type: int
    default: 30
notes:
  - The connection is kubernetes.core's C(get_api_client) with the options of C(kubernetes.core.k8s_auth_options)
    (documented by this collection's own fragment, so that these docs need no other collection), with one
    difference, made on purpose - O(kubeconfig) is not C(no_log), so that its path appears in
    messages instead of C(********). When O(kubeconfig) is a dictionary, its secrets (tokens, passwords,
    keys and certificate data) are hidden from the output instead. kubernetes.core 6.2.0, which this
    collection pins, hides the whole option; kubernetes.core 6.3.0 made the same change.
  - kubernetes.core's client reads the API discovery (C(/version), C(/api), C(/apis)) when it connects,
    unless its discovery cache in the temporary directory is fresh; that costs up to three requests more
    than the node reads.
  - Tested end to end against a local HTTP server on 127.0.0.1 that replays recorded real API
    responses (C(kubectl get nodes -o json) of an RKE2 node with a vGPU and of AKS nodes without GPUs),
    with the real kubernetes client, kubernetes.core's client, kubeconfig loading, token auth and HTTP code;
    including a node that gains capacity during the wait, 401, 403, 404, 503 then success, an API that
    comes up during the wait, an API that never answers, and connection refused. There is no
    Kubernetes API and no GPU in this project's CI, so it has not been run against a live cluster there.
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
  description: How many times the nodes were read (or the read was tried).
  returned: always
  type: int
  sample: 3
error:
  description:
    - Kind of failure, V(not_found) (a named node does not exist), V(unreachable) (connection failed or
      no answer, until O(timeout)), V(unauthorized) (401), V(forbidden) (403), V(api_error) (another HTTP
      error; 429 and 5xx until O(timeout)), V(config) (no usable kubeconfig),
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

import os
import re
import time

from ansible.module_utils.basic import missing_required_lib
from ansible.module_utils.common.text.converters import to_text

from ansible_collections.baremetal.gpu.plugins.module_utils.gpu_nodes import (
    NodeSpecError,
    evaluate_node,
    expected_count,
)
from ansible_collections.baremetal.gpu.plugins.module_utils.node_reader import (
    K8S_CONFIG,
    KUBERNETES_IMPORT_ERROR,
    KubeModule,
    K8sConnectionError,
    NodeReader,
    guarded,
    kubeconfig_secrets,
)
from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.exceptions import CoreException


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
    # kubernetes.core 6.2.0 marks kubeconfig no_log, which masks a kubeconfig path as ******** in every
    # message; the secrets of a kubeconfig given as a dictionary are hidden by main() instead.
    spec['kubeconfig'] = dict(AUTH_ARG_SPEC['kubeconfig'], no_log=False)
    # a path, not a secret (kubernetes.core leaves no_log unset, which sanity reports)
    spec['client_key'] = dict(AUTH_ARG_SPEC['client_key'], no_log=False)
    return spec


def describe_config(params):
    kubeconfig = params['kubeconfig']
    shown = '(a dictionary)' if isinstance(kubeconfig, dict) else kubeconfig
    return 'kubeconfig %s, context %s, host %s' % (shown, params['context'], params['host'])


def server_description(params):
    """Which API server is meant, for messages written before the client knows its address."""
    host = params['host'] or os.environ.get('K8S_AUTH_HOST')
    if host:
        return host
    kubeconfig = params['kubeconfig'] or os.environ.get('K8S_AUTH_KUBECONFIG')
    if isinstance(kubeconfig, dict):
        where = 'the server of the kubeconfig dictionary'
    elif kubeconfig:
        where = 'the server of kubeconfig %s' % kubeconfig
    else:
        where = 'the server of the in-cluster config or of ~/.kube/config'
    context = params['context'] or os.environ.get('K8S_AUTH_CONTEXT')
    return where + (' (context %s)' % context if context else '')


def connect(params):
    """kubernetes.core's API client (it reads the API discovery) within request_timeout, as a NodeReader.

    The connection options go to get_api_client as keyword arguments, which it resolves exactly as
    for its own modules (K8S_AUTH_* variables as fallbacks, then kubeconfig, in-cluster config).
    """
    where = server_description(params)
    auth = dict((name, params[name]) for name in AUTH_ARG_SPEC)
    try:
        client = guarded('the API discovery', where, params['request_timeout'], lambda: get_api_client(**auth))
    except K8sConnectionError:
        raise
    except (CoreException, OSError, ValueError, TypeError) as exc:
        raise K8sConnectionError('cannot load Kubernetes configuration (%s): %s'
                                 % (describe_config(params), to_text(exc)), K8S_CONFIG)
    return NodeReader(client.client.client, client.configuration.host or where, params['request_timeout'])


def read_nodes(reader, params):
    if params['name']:
        return [reader.read_node(name) for name in params['name']]
    return reader.list_nodes(params['label_selector'])


def main():
    module = KubeModule(
        argument_spec=argument_spec(),
        mutually_exclusive=[('name', 'label_selector'), ('expected_per_node', 'gpu_count', 'mig_devices')],
        required_one_of=[('name', 'label_selector')],
        required_by={'replicas': 'gpu_count'},
        supports_check_mode=True,
    )
    params = module.params
    # Hide the secrets of a kubeconfig given as a dictionary (the option itself is not no_log).
    module.no_log_values.update(kubeconfig_secrets(params['kubeconfig']))
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
    if params['request_timeout'] < 1:
        module.fail_json(msg='request_timeout must be at least 1 second, got %s (0 does not mean "no limit")'
                             % params['request_timeout'], **result)
    gfd = params['gfd_labels'] or {}
    if gfd.get('product') is not None:
        try:
            re.compile(gfd['product'])
        except re.error as exc:
            module.fail_json(msg='gfd_labels.product %r is not a valid regular expression: %s'
                                 % (gfd['product'], exc), **result)

    start = time.monotonic()
    reader = None
    while True:
        result['attempts'] += 1
        try:
            reader = reader or connect(params)
            nodes = read_nodes(reader, params)
        except K8sConnectionError as exc:
            elapsed = time.monotonic() - start
            result['elapsed'] = round(elapsed, 1)
            if not exc.retryable:
                module.fail_json(msg=exc.message, error=exc.kind, **result)
            if elapsed >= params['timeout']:
                module.fail_json(msg='%s (still failing after %d attempt(s) in %s s; timeout %s s)'
                                     % (exc.message, result['attempts'], result['elapsed'], params['timeout']),
                                 error=exc.kind, **result)
            time.sleep(min(params['poll_interval'], max(params['timeout'] - elapsed, 0.01)))
            continue
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
