# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure evaluation of Kubernetes Node objects for GPU capacity (no client, no I/O).

A node is given as the JSON dict the API server returns (``GET /api/v1/nodes/<name>``,
or one item of ``GET /api/v1/nodes``), exactly as ``kubectl get node -o json`` prints it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

GFD_PRESENT = 'nvidia.com/gpu.present'
GFD_COUNT = 'nvidia.com/gpu.count'
GFD_PRODUCT = 'nvidia.com/gpu.product'

OP_AT_LEAST = '>='
OP_EXACT = '=='


class NodeSpecError(ValueError):
    """The expectations given to the module contradict each other."""


def expected_count(expected_per_node=None, gpu_count=None, replicas=None, mig_devices=None):
    """The count each node must advertise, from one of three sources.

    - ``expected_per_node``: given directly;
    - ``gpu_count`` x ``replicas`` (time-slicing: each GPU is advertised ``replicas`` times;
      ``replicas`` defaults to 1), for example ``gpu_count`` from the nvidia_smi module;
    - ``mig_devices``: the number of MIG devices (MIG ``single`` strategy advertises each MIG
      device as one ``nvidia.com/gpu``; with ``mixed`` set ``resource`` to the MIG profile resource).
    Nothing given: 1 (at least one GPU advertised).
    """
    given = [name for name, value in (('expected_per_node', expected_per_node), ('gpu_count', gpu_count),
                                      ('mig_devices', mig_devices)) if value is not None]
    if len(given) > 1:
        raise NodeSpecError('give only one of expected_per_node, gpu_count (with replicas) and '
                            'mig_devices; got %s' % ', '.join(given))
    if replicas is not None and gpu_count is None:
        raise NodeSpecError('replicas needs gpu_count (expected = gpu_count x replicas)')
    for name, value in (('expected_per_node', expected_per_node), ('gpu_count', gpu_count),
                        ('replicas', replicas), ('mig_devices', mig_devices)):
        if value is not None and value < 0:
            raise NodeSpecError('%s must not be negative, got %s' % (name, value))
    if expected_per_node is not None:
        return expected_per_node
    if gpu_count is not None:
        return gpu_count * (replicas if replicas is not None else 1)
    if mig_devices is not None:
        return mig_devices
    return 1


_QUANTITY_SUFFIX = {'k': 10 ** 3, 'M': 10 ** 6, 'G': 10 ** 9, 'T': 10 ** 12,
                    'Ki': 2 ** 10, 'Mi': 2 ** 20, 'Gi': 2 ** 30, 'Ti': 2 ** 40}
_QUANTITY_RE = re.compile(r'^\s*(\d+)\s*(k|M|G|T|Ki|Mi|Gi|Ti)?\s*$')


def parse_count(value):
    """An extended-resource quantity ('8', '1k') as an int; None when absent or not an integer."""
    if value is None:
        return None
    if isinstance(value, int):
        return value
    match = _QUANTITY_RE.match(str(value))
    if not match:
        return None
    return int(match.group(1)) * _QUANTITY_SUFFIX.get(match.group(2), 1)


def ready_condition(node):
    """The node's Ready condition as {status, reason, message, last_transition_time}, or None."""
    for cond in (node.get('status') or {}).get('conditions') or []:
        if cond.get('type') == 'Ready':
            return {
                'status': cond.get('status'),
                'reason': cond.get('reason'),
                'message': cond.get('message'),
                'last_transition_time': cond.get('lastTransitionTime'),
            }
    return None


def _compare(found, expected, op):
    if found is None:
        return False
    if op == OP_EXACT:
        return found == expected
    return found >= expected


def _expected_text(expected, op):
    return ('%s' % expected) if op == OP_EXACT else ('at least %s' % expected)


def evaluate_node(node, resource, expected, op=OP_AT_LEAST, gfd=None, require_ready=True, waited=None):
    """Evaluate one node; return a report dict with ``problems`` (empty when the node passes).

    ``gfd`` may hold ``present`` (bool), ``count`` (int) and ``product`` (a regular expression)
    for the GPU Feature Discovery labels nvidia.com/gpu.present, .count and .product.
    ``waited`` (seconds) is appended to capacity problems ("... after 120 s").
    """
    gfd = gfd or {}
    meta = node.get('metadata') or {}
    status = node.get('status') or {}
    name = meta.get('name')
    labels = meta.get('labels') or {}
    capacity_raw = (status.get('capacity') or {}).get(resource)
    allocatable_raw = (status.get('allocatable') or {}).get(resource)
    capacity = parse_count(capacity_raw)
    allocatable = parse_count(allocatable_raw)
    ready = ready_condition(node)
    after = '' if waited is None else ' after %s s' % _seconds(waited)
    problems = []

    for what, raw, value in (('capacity', capacity_raw, capacity), ('allocatable', allocatable_raw, allocatable)):
        if not _compare(value, expected, op):
            if raw is None:
                shown = '0 (not advertised; device plugin not registered?)'
            elif value is None:
                shown = '%r (not a count)' % raw
            else:
                shown = str(value)
            problems.append('node %s reports %s %s %s, expected %s%s'
                            % (name, resource, what, shown, _expected_text(expected, op), after))

    checked = {}
    if gfd.get('present') is not None:
        want = 'true' if gfd['present'] else 'false'
        found = labels.get(GFD_PRESENT)
        checked[GFD_PRESENT] = found
        if found != want:
            problems.append('node %s label %s: expected %s, found %s'
                            % (name, GFD_PRESENT, want, _label(found)))
    if gfd.get('count') is not None:
        found = labels.get(GFD_COUNT)
        checked[GFD_COUNT] = found
        if parse_count(found) != gfd['count']:
            problems.append('node %s label %s: expected %s, found %s'
                            % (name, GFD_COUNT, gfd['count'], _label(found)))
    if gfd.get('product') is not None:
        found = labels.get(GFD_PRODUCT)
        checked[GFD_PRODUCT] = found
        if found is None or not re.search(gfd['product'], found):
            problems.append('node %s label %s: expected to match %r, found %s'
                            % (name, GFD_PRODUCT, gfd['product'], _label(found)))

    if require_ready and (ready is None or ready['status'] != 'True'):
        problems.append('node %s Ready condition: expected True, found %s'
                        % (name, 'no Ready condition' if ready is None
                           else '%s (%s: %s)' % (ready['status'], ready['reason'], ready['message'])))

    return {
        'name': name,
        'resource': resource,
        'expected': expected,
        'comparison': op,
        'capacity': capacity,
        'allocatable': allocatable,
        'labels': checked,
        'ready': ready,
        'problems': problems,
    }


def _label(value):
    return 'no such label' if value is None else repr(value)


def _seconds(value):
    if float(value) == int(value):
        return '%d' % int(value)
    return '%.1f' % value
