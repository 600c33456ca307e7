# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The maintenance engine's view of the cluster: which Nodes are GPU Nodes, which are out of service, which the
engine or gpu_health's quarantine has taken out, and which pods hold a GPU.

Pure functions over Node and Pod objects as the API server returns them. The labels, annotations and the taint the
engine and the quarantine write are named here, once, for every other part of the engine
(maintenance_reasons.py, maintenance_mapping.py, maintenance_plan.py) and for gpu_health.
- ``unavailable``: the Nodes out of service now (unschedulable, NotReady or quarantined), except those this engine
  took out itself unless asked; ``gpu_scope``: the GPU Nodes, what a percentage budget is a share of.
- ``gpu_pods``: the pods of a Node that hold a GPU (a container's nvidia.com/* request or limit), finished ones not.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re


# The Node label of each kind of run, with the values upgrading, done, failed.
STATE_LABEL = 'baremetal.gpu/driver-upgrade'
HOST_ROLLOUT_LABEL = 'baremetal.gpu/host-rollout'
UNINSTALL_LABEL = 'baremetal.gpu/uninstall'
REMEDIATION_LABEL = 'baremetal.gpu/gpu-remediation'
STATE_LABELS = (STATE_LABEL, HOST_ROLLOUT_LABEL, UNINSTALL_LABEL, REMEDIATION_LABEL)
# gpu_health_accept_new_nodes: pending from the batch that takes a new Node out of service until its GPUs passed
# gpu_health's check (then passed, written with the batch's "done"); a Node without it never served GPUs or was
# there before the acceptance was asked for.
ACCEPTANCE_LABEL = 'baremetal.gpu/gpu-acceptance'
SKIP_LABEL = 'baremetal.gpu/driver-upgrade.skip'
INITIAL_STATE_ANNOTATION = 'baremetal.gpu/driver-upgrade.initially-unschedulable'
REASON_ANNOTATION = 'baremetal.gpu/driver-upgrade.reason'
RUN_ANNOTATION = 'baremetal.gpu/maintenance.run'
TIME_ANNOTATION = 'baremetal.gpu/maintenance.time'
HOSTNAME_LABEL = 'kubernetes.io/hostname'
# gpu_health's quarantine taint (NoSchedule): a quarantined Node is out of service for GPU work.
QUARANTINE_TAINT = 'baremetal.gpu/gpu-unhealthy'
# GPU Feature Discovery's label of a Node with an NVIDIA GPU.
GPU_PRESENT_LABEL = 'nvidia.com/gpu.present'
STATES = ('upgrading', 'done', 'failed')
GPU_RESOURCE = re.compile(r'^nvidia\.com/(gpu|mig-|gpu\.shared|vgpu)')
FINISHED_PHASES = ('Succeeded', 'Failed')


def node_unschedulable(node):
    return bool((node.get('spec') or {}).get('unschedulable'))


def node_ready(node):
    for cond in ((node.get('status') or {}).get('conditions') or []):
        if cond.get('type') == 'Ready':
            return cond.get('status') == 'True'
    return False


def node_labels(node):
    return ((node or {}).get('metadata') or {}).get('labels') or {}


def node_name(node):
    return ((node or {}).get('metadata') or {}).get('name') or ''


def quarantined(node):
    """Whether gpu_health's quarantine took the node out of service (its taint is on the Node)."""
    return any((taint or {}).get('key') == QUARANTINE_TAINT for taint in ((node or {}).get('spec') or {}).get('taints') or [])


def ours(node):
    """Whether this engine took the node out itself (one of its state labels says upgrading): a crash to resume."""
    labels = node_labels(node)
    return any(labels.get(label) == 'upgrading' for label in STATE_LABELS)


def gpu_node(node):
    """Whether a Node is a GPU Node: its capacity or allocatable lists a GPU resource (nvidia.com/gpu, a MIG or shared
    one) other than 0, or GPU Feature Discovery labelled it nvidia.com/gpu.present=true."""
    status = (node or {}).get('status') or {}
    for key in ('capacity', 'allocatable'):
        for resource, quantity in (status.get(key) or {}).items():
            if GPU_RESOURCE.match(resource) and str(quantity).strip() not in ('', '0'):
                return True
    return str(node_labels(node).get(GPU_PRESENT_LABEL, '')).lower() == 'true'


def gpu_scope(cluster_nodes, own=()):
    """The names of the cluster's GPU Nodes (gpu_node) and of the Nodes the inventory's GPU hosts map to (``own``: a
    GPU host whose driver is not on yet has no GPU capacity), sorted: what the budget is a share of."""
    names = set(n for n in own if n)
    names.update(node_name(n) for n in cluster_nodes or [] if gpu_node(n))
    return sorted(names)


def unavailable(cluster_nodes, exclude=(), count_ours=False, scope=None):
    """The Nodes of the cluster that are out of service now: unschedulable, NotReady or quarantined (gpu_health's
    taint), whoever took them out, except those named in ``exclude`` and, unless ``count_ours``, those this engine
    took out itself (``ours``: the plan puts them back through a batch of their own). With ``scope`` (Node names:
    gpu_scope), only those Nodes count; None counts every Node. Returns a sorted list of {name, why}."""
    scope = None if scope is None else set(scope)
    out = []
    for node in cluster_nodes or []:
        name = node_name(node)
        if name in exclude or (ours(node) and not count_ours) or (scope is not None and name not in scope):
            continue
        why = []
        if node_unschedulable(node):
            why.append('unschedulable')
        if not node_ready(node):
            why.append('NotReady')
        if quarantined(node):
            why.append('quarantined')
        if why:
            out.append({'name': name, 'why': ' and '.join(why)})
    return sorted(out, key=lambda n: n['name'])


def _requests_gpu(container):
    resources = container.get('resources') or {}
    names = list((resources.get('limits') or {}).keys()) + list((resources.get('requests') or {}).keys())
    return [n for n in names if GPU_RESOURCE.match(n)]


def gpu_pods(pods, selector_labels=None):
    """The pods that hold GPUs: any container (init containers too) asks for an nvidia.com/ GPU resource.

    ``pods`` is a list of Pod objects (or a PodList's items); finished pods (Succeeded, Failed) are left
    out. With ``selector_labels`` (a dict), only pods carrying all those labels. Returns
    [{namespace, name, resources, owner, empty_dir}] sorted by namespace and name (empty_dir: the pod has an
    emptyDir volume, whose data is lost when the pod is deleted).
    """
    out = []
    for pod in pods or []:
        meta = pod.get('metadata') or {}
        spec = pod.get('spec') or {}
        if ((pod.get('status') or {}).get('phase')) in FINISHED_PHASES:
            continue
        labels = meta.get('labels') or {}
        if selector_labels and any(labels.get(k) != v for k, v in selector_labels.items()):
            continue
        resources = []
        for container in (spec.get('initContainers') or []) + (spec.get('containers') or []):
            resources.extend(_requests_gpu(container))
        if not resources:
            continue
        owners = meta.get('ownerReferences') or []
        out.append({'namespace': meta.get('namespace'), 'name': meta.get('name'),
                    'resources': sorted(set(resources)),
                    'owner': ('%s/%s' % (owners[0].get('kind'), owners[0].get('name'))) if owners else '',
                    'empty_dir': any('emptyDir' in (v or {}) for v in spec.get('volumes') or [])})
    return sorted(out, key=lambda p: (p['namespace'] or '', p['name'] or ''))
