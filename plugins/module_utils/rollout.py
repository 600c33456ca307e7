# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rolling maintenance of GPU nodes: batch sizes, the nodes already out, and the pods that hold GPUs.

Pure functions over plain data (Node and Pod objects as the API server returns them), used by the
filters baremetal.gpu.rollout_plan and baremetal.gpu.gpu_pods and the upgrade role. The knobs and
their meaning follow NVIDIA GPU Operator's driver upgrade policy (maxParallelUpgrades,
maxUnavailable, waitForCompletion, gpuPodDeletion, drain), which manages containerized drivers
only; this collection applies the same policy to host-installed drivers.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

STATE_LABEL = 'baremetal.gpu/driver-upgrade'
SKIP_LABEL = 'baremetal.gpu/driver-upgrade.skip'
# Set while the node is in maintenance: the node was unschedulable before we cordoned it.
INITIAL_STATE_ANNOTATION = 'baremetal.gpu/driver-upgrade.initially-unschedulable'
REASON_ANNOTATION = 'baremetal.gpu/driver-upgrade.reason'
STATES = ('upgrading', 'done', 'failed')
GPU_RESOURCE = re.compile(r'^nvidia\.com/(gpu|mig-|gpu\.shared|vgpu)')
FINISHED_PHASES = ('Succeeded', 'Failed')


def parse_count(value, total, variable):
    """A node count given as a number or a percentage ('25%') of ``total``; at least 1.

    Raises ValueError naming ``variable`` for 0, a negative number, more than 100 % or anything else.
    A percentage is rounded down, but never to 0 (25 % of 2 nodes is 1 node).
    """
    text = str(value).strip()
    match = re.match(r'^([0-9]+)(%?)$', text)
    if not match:
        raise ValueError('%s must be a number of nodes or a percentage such as "25%%", got %r' % (variable, value))
    number = int(match.group(1))
    if match.group(2):
        if number < 1 or number > 100:
            raise ValueError('%s must be a percentage between 1%% and 100%%, got %r' % (variable, value))
        return max(1, total * number // 100)
    if number < 1:
        raise ValueError('%s must be at least 1, got %r' % (variable, value))
    return number


def node_unschedulable(node):
    return bool((node.get('spec') or {}).get('unschedulable'))


def plan(batch_size, max_unavailable, hosts, nodes, installed, target):
    """The batches of a rollout of driver branch ``target`` over ``hosts`` (the inventory's GPU nodes).

    ``nodes`` maps host -> its Node object, or None when the host is no node of the cluster (or there
    is no cluster). ``installed`` maps host -> the driver branch installed there ('' when none).
    A host labelled to skip is left alone; a host that already has ``target`` is done (whatever its
    label says: a label from an earlier rollout to another branch proves nothing); the rest are
    pending. Nodes that are unschedulable already count against ``max_unavailable``, except those this
    rollout cordoned itself (state label "upgrading": a crash to resume).
    Returns serial (0 when nothing is pending), skip, done, pending, already_unavailable, noop, reason.
    Raises ValueError naming the variable for bad sizes, or when no node may be taken out.
    """
    total = max(len(hosts), 1)
    batch = parse_count(batch_size, total, 'upgrade_batch_size')
    limit = parse_count(max_unavailable, total, 'upgrade_max_unavailable')
    skip, done, pending, already = [], [], [], []
    for host in hosts:
        node = nodes.get(host)
        labels = ((node or {}).get('metadata') or {}).get('labels') or {}
        if str(labels.get(SKIP_LABEL, '')).lower() in ('true', '1', 'yes'):
            skip.append(host)
            continue
        if str(installed.get(host) or '') == str(target):
            done.append(host)
        else:
            pending.append(host)
        if node is not None and node_unschedulable(node) and labels.get(STATE_LABEL) != 'upgrading':
            already.append(host)
    if not pending:
        return {'serial': 0, 'skip': skip, 'done': done, 'pending': [], 'already_unavailable': already,
                'noop': True, 'reason': 'nothing to do: driver branch %s is already installed on %s%s'
                % (target, ', '.join(done) or 'no host', (' (left alone: %s)' % ', '.join(skip)) if skip else '')}
    room = limit - len(already)
    if room < 1:
        raise ValueError('upgrade_max_unavailable allows %d unavailable GPU node(s), but %d are already unschedulable '
                         '(%s): no node can be taken out. Uncordon them, or raise upgrade_max_unavailable'
                         % (limit, len(already), ', '.join(already)))
    serial = min(batch, room)
    reason = ('%d node(s) to upgrade in batches of %d (upgrade_batch_size %s = %d; upgrade_max_unavailable %s = %d, '
              'minus %d already unschedulable)'
              % (len(pending), serial, batch_size, batch, max_unavailable, limit, len(already)))
    return {'serial': serial, 'skip': skip, 'done': done, 'pending': pending, 'already_unavailable': already,
            'noop': False, 'reason': reason}


# The branch a package of the driver stack belongs to: nvidia-utils-580, libnvidia-gl-595,
# nvidia-headless-no-dkms-580-open, nvidia-firmware-580-580.178.04, linux-modules-nvidia-595-open-6.8.0-90-generic,
# xserver-xorg-video-nvidia-580. Packages without a branch in their name (nvidia-container-toolkit,
# linux-signatures-nvidia-<kernel>, Debian's nvidia-driver) have none.
PACKAGE_BRANCH = re.compile(r'^(?:(?:lib)?nvidia-[a-z0-9-]*?|linux-(?:modules|objects)-nvidia|xserver-xorg-video-nvidia)'
                            r'-([0-9]{3})(?:-|$)')
UNFINISHED_STATES = ('upgrading', 'failed')


def package_branch(name):
    """The driver branch in a package name ('580'), or '' when the name carries none."""
    match = PACKAGE_BRANCH.match(str(name or ''))
    return match.group(1) if match else ''


def host_status(facts, record, target, hold=True):
    """Whether a host is done with the move to branch ``target``, from what the host itself shows.

    ``facts`` are ansible_facts['gpu_node'] with the driver section; ``record`` is the host's upgrade
    record (roles/upgrade record.yml: state, from, to, started, finished, reason) or None/{}. Done means:
    only ``target`` is installed, no package of another branch is left, every DKMS build is of
    ``target``, the target's packages are held (when ``hold``), and no earlier upgrade of this host was
    left unfinished (record state upgrading or failed: it goes through the whole path again, so that a
    node cordoned by a crashed run is checked and uncordoned). Returns {branch, done, reasons}:
    branch is the single installed branch ('' when none or several).
    """
    target = str(target)
    facts = facts or {}
    record = record or {}
    branches = [str(b) for b in facts.get('driver_installed_branches') or []]
    reasons = []
    if branches != [target]:
        reasons.append('installed branches: %s' % (', '.join(branches) or 'none'))
    others = sorted(p for p in facts.get('driver_stack_packages') or [] if package_branch(p) not in ('', target))
    if others:
        reasons.append('packages of another branch: %s' % ', '.join(others))
    dkms = sorted(set('%s/%s' % (m.get('module'), m.get('version')) for m in facts.get('driver_dkms_modules') or []
                      if not str(m.get('version') or '').startswith(target + '.')))
    if dkms:
        reasons.append('DKMS builds of another branch: %s' % ', '.join(dkms))
    held_target = [p for p in facts.get('driver_held_packages') or [] if package_branch(p) == target]
    if hold and branches == [target] and not held_target:
        reasons.append('no package of branch %s is held' % target)
    if record.get('state') in UNFINISHED_STATES:
        reasons.append('its last upgrade (to %s, started %s) ended in state %s' % (
            record.get('to') or '?', record.get('started') or '?', record.get('state')))
    return {'branch': branches[0] if len(branches) == 1 else '', 'done': not reasons, 'reasons': reasons}


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
