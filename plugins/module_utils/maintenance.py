# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The maintenance engine's decisions: the one batch planner of every playbook that can disrupt a GPU node.

Pure functions over plain data (Node, Pod and Lease objects as the API server returns them, the node facts
of baremetal.gpu.gpu_node_facts), used by the filters in plugins/filter/maintenance.py and by
playbooks/gpu_nodes.yml (day 1), playbooks/upgrade_driver.yml (a driver branch change) and
playbooks/uninstall.yml (the host layer taken off), through roles/upgrade's plan, enter and leave steps.

- What a node needs (``node``, ``upgrade_node``): whether it is in a cluster, its RKE2 role, and whether the
  run would disrupt it (reboot, RKE2 restart, a driver change, a resume after a crash).
- Which Node an inventory host is (``map_node``): its name, then the kubernetes.io/hostname label, then an
  InternalIP; a node of a cluster that cannot be mapped is refused before any change.
- The plan (``plan``): nodes outside a cluster never share a batch with nodes of a cluster; quiet nodes run in
  parallel; RKE2 servers one at a time first; then agents node_maintenance_batch_size at a time, within
  node_maintenance_max_unavailable counted from the cluster (``unavailable``: every unschedulable or NotReady Node,
  cluster-wide, except those this engine took out itself).
- The budget before each batch (``batch_gate``): counted again from the cluster, the batch shrinks so that
  node_maintenance_max_unavailable holds whoever else is working.
- The cluster-wide lock (``lease_decision``, ``lease_object``): a coordination.k8s.io/v1 Lease whose holder is
  the run (run id, host, start time), taken, renewed, waited for, or taken over once expired.
The knobs follow NVIDIA GPU Operator's driver upgrade policy (maxParallelUpgrades, maxUnavailable), the lock
kured's, the server/agent split Rancher's system-upgrade-controller's.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
from datetime import datetime, timedelta

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
LEASE_NAME = 'baremetal-gpu-maintenance'
LEASE_NAMESPACE = 'kube-system'
TIME_FORMAT = '%Y-%m-%dT%H:%M:%S.%fZ'


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


def node_ready(node):
    for cond in ((node.get('status') or {}).get('conditions') or []):
        if cond.get('type') == 'Ready':
            return cond.get('status') == 'True'
    return False


def _labels(node):
    return ((node or {}).get('metadata') or {}).get('labels') or {}


def _node_name(node):
    return ((node or {}).get('metadata') or {}).get('name') or ''


def quarantined(node):
    """Whether gpu_health's quarantine took the node out of service (its taint is on the Node)."""
    return any((taint or {}).get('key') == QUARANTINE_TAINT for taint in ((node or {}).get('spec') or {}).get('taints') or [])


def ours(node):
    """Whether this engine took the node out itself (one of its state labels says upgrading): a crash to resume."""
    labels = _labels(node)
    return any(labels.get(label) == 'upgrading' for label in STATE_LABELS)


def gpu_node(node):
    """Whether a Node is a GPU Node: its capacity or allocatable lists a GPU resource (nvidia.com/gpu, a MIG or shared
    one) other than 0, or GPU Feature Discovery labelled it nvidia.com/gpu.present=true."""
    status = (node or {}).get('status') or {}
    for key in ('capacity', 'allocatable'):
        for resource, quantity in (status.get(key) or {}).items():
            if GPU_RESOURCE.match(resource) and str(quantity).strip() not in ('', '0'):
                return True
    return str(_labels(node).get(GPU_PRESENT_LABEL, '')).lower() == 'true'


def gpu_scope(cluster_nodes, own=()):
    """The names of the cluster's GPU Nodes (gpu_node) and of the Nodes the inventory's GPU hosts map to (``own``: a
    GPU host whose driver is not on yet has no GPU capacity), sorted: what the budget is a share of."""
    names = set(n for n in own if n)
    names.update(_node_name(n) for n in cluster_nodes or [] if gpu_node(n))
    return sorted(names)


def unavailable(cluster_nodes, exclude=(), count_ours=False, scope=None):
    """The Nodes of the cluster that are out of service now: unschedulable, NotReady or quarantined (gpu_health's
    taint), whoever took them out, except those named in ``exclude`` and, unless ``count_ours``, those this engine
    took out itself (``ours``: the plan puts them back through a batch of their own). With ``scope`` (Node names:
    gpu_scope), only those Nodes count; None counts every Node. Returns a sorted list of {name, why}."""
    scope = None if scope is None else set(scope)
    out = []
    for node in cluster_nodes or []:
        name = _node_name(node)
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


def map_node(host, names, addresses, cluster_nodes):
    """The Node of inventory host ``host``: by name (``names``, in order: baremetal_gpu_node_name, the node's
    hostname, the inventory name), then by the kubernetes.io/hostname label, then by an InternalIP among
    ``addresses`` (the host's IPv4/IPv6 addresses). Returns {name, how} or None."""
    names = [str(n) for n in names or [] if n]
    addresses = set(str(a) for a in addresses or [] if a)
    nodes = list(cluster_nodes or [])
    for name in names:
        for node in nodes:
            if _node_name(node) == name:
                return {'name': name, 'how': 'name %s' % name}
    for name in names:
        for node in nodes:
            if _labels(node).get(HOSTNAME_LABEL) == name:
                return {'name': node['metadata']['name'], 'how': 'label %s=%s' % (HOSTNAME_LABEL, name)}
    for node in nodes:
        for address in ((node.get('status') or {}).get('addresses') or []):
            if address.get('type') == 'InternalIP' and address.get('address') in addresses:
                return {'name': node['metadata']['name'], 'how': 'InternalIP %s' % address.get('address')}
    return None


def mapping_errors(hosts, in_cluster, mapped, kubeconfig_found, kubeconfig_named=False, allow_without_api=False):
    """Refusals before any change. With a kubeconfig: a host that is a node of a cluster (its RKE2 unit is enabled)
    but that no Node maps to. Without one: hosts that run RKE2, so their reboots and restarts could not be cordoned
    or drained: refused when the user named a kubeconfig (cluster_kubeconfig) that no host has, and when none was
    found at the default place either, unless ``allow_without_api`` (node_maintenance_allow_without_cluster_api)
    says to go on with only the batching to protect the cluster.
    ``in_cluster``/``mapped``: host -> bool / host -> map_node() or None."""
    errors = []
    members = [h for h in hosts if in_cluster.get(h)]
    if kubeconfig_found:
        lost = [h for h in members if not mapped.get(h)]
        if lost:
            errors.append('%s run RKE2 but no Node of the cluster matches them by name, %s label or InternalIP: they '
                          'would be rebooted or restarted without a cordon. Set baremetal_gpu_node_name to the Node name '
                          'for each' % (', '.join(lost), HOSTNAME_LABEL))
    elif kubeconfig_named and members:
        errors.append('the kubeconfig named by cluster_kubeconfig was found on no host while %s run RKE2: their reboots '
                      'and restarts cannot be cordoned or drained. Fix cluster_kubeconfig' % ', '.join(members))
    elif members and not allow_without_api:
        errors.append('no kubeconfig was found on any host of k8s_control or gpu_nodes (cluster_kubeconfig is not set, '
                      'and the default, RKE2\'s own kubeconfig, is on none of them) while %s run RKE2: their reboots and restarts '
                      'could not be cordoned or drained. Set cluster_kubeconfig, or node_maintenance_allow_without_cluster_api: '
                      'true to go on with only the batching to protect the cluster' % ', '.join(members))
    return errors


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


# The options table of the nvidia runtime in a containerd config (versions 2, 3 and 4), as the
# rke2_nvidia_runtime role looks for it (__rke2_nvidia_runtime_options_re).
RUNTIME_OPTIONS = re.compile(r'''\[plugins\.["'](?:io\.containerd\.grpc\.v1\.cri|io\.containerd\.cri\.v1\.runtime)["']'''
                             r'''\.containerd\.runtimes\.["']?nvidia["']?\.options\]''')


def _name(package):
    return str(package).split('=', 1)[0]


def persistent_reasons(facts):
    """The reasons for a reboot that the node's state shows (gpu_node_facts' pci, modules and driver subsets),
    those a reboot should clear, worded as nvidia_driver's tasks/reboot.yml words them."""
    facts = facts or {}
    reasons = []
    loaded = facts.get('nvidia_loaded_version') or ''
    installed = list(facts.get('driver_installed_versions') or [])
    if facts.get('nouveau_loaded') is True:
        reasons.append('nouveau is loaded')
    if loaded and installed and loaded not in installed:
        reasons.append('the loaded nvidia module is not the installed driver (loaded %s, installed %s)'
                       % (loaded, ', '.join(installed)))
    if facts.get('gpus') and not loaded and not facts.get('container'):
        reasons.append('an NVIDIA GPU is present but no nvidia module is loaded')
    return reasons


def reboot_reasons(facts, driver_plan=None, apt=None):
    """The reasons nvidia_driver would reboot this node, known before anything changes.

    ``facts``: ansible_facts['gpu_node'] (modules, pci and driver subsets). ``driver_plan``: the fact
    nvidia_driver_plan of nvidia_driver's decide step, or None when that role is not run (then only the
    node's state counts). ``apt``: the result of that step's apt_sources_info (packages: {name: {installed,
    candidate}}), or None where apt was not asked (RHEL family): then the branch alone is compared.
    """
    reasons = persistent_reasons(facts)
    installed = list(facts.get('driver_installed_versions') or [])
    if driver_plan and driver_plan.get('ok'):
        branch = str(driver_plan.get('branch') or '')
        branches = sorted(set(v.split('.', 1)[0] for v in installed))
        if branch and branch not in branches:
            reasons.append('driver branch %s is not installed yet (installed: %s)' % (branch, ', '.join(branches) or 'none'))
        packages = (apt or {}).get('packages')
        if packages is not None:
            reasons.extend(_package_reasons(driver_plan, packages))
    return reasons


def _package_reasons(driver_plan, packages):
    """What apt would change of the plan's packages (apt_sources_info's answer: installed, candidate)."""
    reasons = []
    wanted = [_name(p) for p in driver_plan.get('install') or []]
    missing = [p for p in wanted if not (packages.get(p) or {}).get('installed')]
    if missing:
        reasons.append('driver packages to install: %s' % ', '.join(missing))
    pins = driver_plan.get('pins') or {}
    newer = []
    for name in wanted:
        info = packages.get(name) or {}
        have, candidate = info.get('installed'), info.get('candidate')
        if not have:
            continue
        pin = str(pins.get(name) or '').rstrip('*')
        if pin and not str(have).startswith(pin):
            newer.append('%s %s -> %s*' % (name, have, pin))
        elif not pin and candidate and candidate != have:
            newer.append('%s %s -> %s' % (name, have, candidate))
    if newer:
        reasons.append('driver packages to change: %s' % ', '.join(newer))
    if driver_plan.get('remove'):
        reasons.append('driver packages to remove: %s' % ', '.join(driver_plan['remove']))
    return reasons


def restart_reasons(generated_config, runtime_binary_present, generated_path='config.toml', pending=None):
    """The reasons rke2_nvidia_runtime would restart RKE2 that are known before anything changes.

    ``generated_config``: the text of RKE2's generated containerd config.toml ('' or None when the
    file is not there). ``runtime_binary_present``: whether the NVIDIA container runtime is installed.
    ``pending``: the restart an earlier run recorded before its configuration change and did not do (it was
    killed or held back): rke2_nvidia_runtime's restart-pending.json, {reasons, unit, recorded}, or None.
    """
    reasons = []
    if pending:
        reasons.append('an RKE2 restart recorded at %s is still pending (%s)' % (
            pending.get('recorded') or '?', ', '.join(pending.get('reasons') or []) or 'no reason recorded'))
    if not runtime_binary_present:
        reasons.append('the NVIDIA container runtime is not installed yet (the toolkit install restarts RKE2)')
    if not RUNTIME_OPTIONS.search(generated_config or ''):
        reasons.append('the nvidia runtime is missing from %s' % generated_path)
    return reasons


def role_runs(role, run_tags=None, skip_tags=None):
    """Whether the play's tags let ``role`` run (gpu_nodes.yml tags each role with its name; its tasks carry
    <role>_<phase> tags too). ``run_tags``/``skip_tags``: ansible_run_tags and ansible_skip_tags."""
    run_tags = list(run_tags or ['all'])
    skip_tags = list(skip_tags or [])
    if role in skip_tags or 'all' in skip_tags:
        return False
    return 'all' in run_tags or any(t == role or t.startswith(role + '_') for t in run_tags)


def acceptance_pending(api_node):
    """Whether Node ``api_node`` still has to pass its GPU acceptance before it serves (gpu_health_accept_new_nodes):
    labelled ACCEPTANCE_LABEL=pending (a batch took it out of service for it, and it has not passed), or not
    labelled and advertising no GPU (a new node: it never served GPUs). A Node labelled passed, or one that already
    advertises GPUs without the label (it served before the acceptance was asked for), is not checked again: turning
    the acceptance on never takes a serving fleet out of service. No Node (no cluster API, or not a node of the
    cluster): nothing to hold out of service, so no acceptance."""
    if not api_node:
        return False
    value = _labels(api_node).get(ACCEPTANCE_LABEL)
    if value is not None:
        return value != 'passed'
    capacity = (api_node.get('status') or {}).get('capacity') or {}
    return not any(GPU_RESOURCE.match(key) and str(count).strip() not in ('', '0') for key, count in capacity.items())


def node(facts, api_node=None, reboot=None, restart=None, label=HOST_ROLLOUT_LABEL, accept_new=False):
    """One host of day 1 (or of the uninstall, ``label``): in_cluster, why, role (server, agent or ''), unit,
    reboot and restart reasons, resume (the last run left the node cordoned, ``label``=upgrading), accept (with
    ``accept_new``, gpu_health_accept_new_nodes: the reason its GPUs are checked before its first uncordon, when
    acceptance_pending()), accept_label, disruptive (a node to accept leaves service too: it is uncordoned only
    after its GPUs passed)."""
    rke2 = facts.get('rke2') or {}
    unit = rke2.get('unit') or ''
    enabled = unit and unit in (rke2.get('units_enabled') or [])
    role = rke2.get('role') or ''
    if enabled:
        why = '%s is enabled (%s)' % (unit, rke2.get('role_reason') or 'gpu_node_facts')
    elif api_node:
        why = 'the cluster API lists Node %s' % _node_name(api_node)
    elif not rke2.get('present'):
        why = 'no RKE2 on the node'
    elif not unit:
        why = 'its RKE2 role is unclear: %s' % (rke2.get('role_reason') or '')
    else:
        why = '%s is installed but not enabled' % unit
    in_cluster = bool(enabled or api_node)
    reboot = list(reboot or [])
    restart = list(restart or []) if rke2.get('present') else []
    # A rollout that stopped after the node left service (a failure or a crash after its reboot or restart)
    # left it cordoned and labelled: it goes through its batch again, which puts it back in service.
    resume = (['the last rollout left it out of service (label %s=upgrading)' % label]
              if _labels(api_node).get(label) == 'upgrading' else [])
    accept = (['a new node: its GPUs are checked before its first uncordon (gpu_health_accept_new_nodes)']
              if accept_new and in_cluster and acceptance_pending(api_node) else [])
    return {'in_cluster': in_cluster, 'why': why, 'role': role if in_cluster else '', 'unit': unit,
            'reboot': reboot, 'restart': restart, 'resume': resume, 'accept': accept, 'accept_label': ACCEPTANCE_LABEL,
            'node_name': _node_name(api_node),
            'disruptive': in_cluster and bool(reboot or restart or resume or accept)}


def uninstall_node(facts, api_node=None, runtime_present=False, rke2_files=None):
    """One host of the uninstall (playbooks/uninstall.yml's host part): what taking the host layer off disrupts.

    Purging the driver takes the userland of running GPU pods away, removing the NVIDIA container runtime breaks
    every container that uses it, and taking RKE2's template off restarts RKE2: on a node of a cluster each is done
    out of service (cordon, GPU pods deleted, drain), in a batch. ``facts``: ansible_facts['gpu_node'] (driver and
    rke2 subsets); ``runtime_present``: the uninstall removes the NVIDIA container runtime (container_toolkit's
    containerd drop-in is there, or a toolkit package it purges); ``rke2_files``: the files of rke2_nvidia_runtime
    found on the node. Same shape as node(): in_cluster, why, role, unit, reboot (empty: the
    uninstall never reboots), restart, reasons, resume, disruptive."""
    facts = facts or {}
    reasons = []
    versions = list(facts.get('driver_installed_versions') or [])
    if versions:
        reasons.append('driver %s to purge' % ', '.join(versions))
    if runtime_present:
        reasons.append('the NVIDIA container runtime to remove')
    restart = ['%s to remove (RKE2 restarts)' % ', '.join(rke2_files)] if rke2_files else []
    base = node(facts, api_node, [], restart, label=UNINSTALL_LABEL)
    base['reasons'] = reasons + restart
    base['disruptive'] = bool(base['in_cluster'] and (reasons or base['restart'] or base['resume']))
    return base


def remediate_node(facts, api_node=None, remediation=None):
    """One host of gpu_health's remediation (playbooks/gpu_health.yml, gpu_health_action=remediate): what the
    remediation does to it. ``remediation``: gpu_health.remediation_plan()'s answer for the host (step none,
    reset_gpu or reboot, gpus, reasons). A GPU reset stops what runs on that GPU and a reboot stops the node, so on
    a node of a cluster either is done out of service (cordon, GPU pods deleted, drain), in a batch; a node the last
    remediation left out of service (label baremetal.gpu/gpu-remediation=upgrading) goes through its batch again.
    Same shape as node(), plus step and gpus; reasons are the remediation's."""
    remediation = remediation or {}
    step = remediation.get('step') or 'none'
    reasons = list(remediation.get('reasons') or []) if step != 'none' else []
    base = node(facts or {}, api_node, reasons if step == 'reboot' else [], [], label=REMEDIATION_LABEL)
    base['step'] = step
    base['gpus'] = list(remediation.get('gpus') or []) if step == 'reset_gpu' else []
    base['reasons'] = reasons
    base['disruptive'] = bool(base['in_cluster'] and (step != 'none' or base['resume']))
    return base


def upgrade_node(facts, api_node, status):
    """One host of a driver branch change: in_cluster (a Node maps to it, or its RKE2 unit is enabled), role,
    skip (label baremetal.gpu/driver-upgrade.skip), done and disruptive (not done: host_status()'s answer)."""
    rke2 = (facts or {}).get('rke2') or {}
    unit = rke2.get('unit') or ''
    enabled = bool(unit and unit in (rke2.get('units_enabled') or []))
    in_cluster = bool(api_node) or enabled
    labels = _labels(api_node)
    skip = str(labels.get(SKIP_LABEL, '')).lower() in ('true', '1', 'yes')
    done = bool((status or {}).get('done'))
    # A Node a stopped run of ours left out of service (labelled upgrading) goes through its batch again even when
    # the host shows the change done (a kill after the done record, before the uncordon): nothing is left to change,
    # and the leave step puts it back in service.
    resume = bool(api_node) and ours(api_node)
    reasons = list((status or {}).get('reasons') or [])
    if done and resume:
        reasons = ['a stopped run left the Node out of service (labelled upgrading): back in service']
    return {'in_cluster': in_cluster, 'role': (rke2.get('role') or '') if in_cluster else '', 'unit': unit,
            'node_name': _node_name(api_node),
            'why': ('the cluster API lists Node %s' % api_node['metadata']['name']) if api_node else
                   ('%s is enabled' % unit if enabled else 'no Node of the cluster'),
            'skip': skip, 'done': done and not resume, 'resume': resume, 'reasons': reasons,
            'disruptive': not skip and (not done or resume)}


def plan(batch_size, max_unavailable, hosts, nodes, cluster_nodes=None, host_nodes=None, what='changed',
         count_all_nodes=False):
    """THE batch plan of every playbook that can disrupt a GPU node (day 1, a driver change, the uninstall).

    ``hosts``: the GPU nodes in inventory order. ``nodes``: host -> node() or upgrade_node() (in_cluster, role,
    disruptive, skip, node_name). ``cluster_nodes``: every Node object of the cluster, or None without a cluster.
    ``host_nodes`` is unused (kept for callers).
    The budget belongs to the cluster: a percentage of node_maintenance_max_unavailable or node_maintenance_batch_size
    is of the cluster's GPU Nodes (gpu_scope: Nodes with a GPU resource or GPU Feature Discovery's
    nvidia.com/gpu.present=true, and the Nodes the inventory's hosts map to), never of the play; without a cluster
    view, of the play's hosts in a cluster. The Nodes out of service that count against it are those GPU Nodes
    (unschedulable or NotReady), or every Node with ``count_all_nodes``. Hosts outside a cluster have
    their own batches (node_maintenance_batch_size of them) and never widen the cluster's room.
    Batches, in order: the nodes outside a cluster (those to change in batches, the quiet ones with the first of
    them; never with a node of a cluster); the quiet nodes of the cluster, all at once (their reboots and restarts
    are held back); the disruptive RKE2 servers one at a time; the disruptive agents in batches of
    min(node_maintenance_batch_size, node_maintenance_max_unavailable minus the Nodes out of service). Skipped hosts
    are in no batch. Returns order, serial, batches, outside, quiet, servers, agents, skip, pending,
    already_unavailable, agent_batch, limit, scope (the Node names the budget counts, None for all), base (how many
    Nodes a percentage is of), noop, reason. Raises ValueError naming the variable for bad knobs, or when the cluster
    has no room for a disruptive node.
    """
    outside_busy, outside_quiet, quiet, servers, agents, skip = [], [], [], [], [], []
    for host in hosts:
        info = nodes.get(host) or {}
        if info.get('skip'):
            skip.append(host)
        elif not info.get('in_cluster'):
            (outside_busy if info.get('disruptive') else outside_quiet).append(host)
        elif not info.get('disruptive'):
            quiet.append(host)
        elif info.get('role') == 'server':
            servers.append(host)
        else:
            agents.append(host)
    in_cluster = quiet + servers + agents
    if cluster_nodes is not None:
        gpu_names = gpu_scope(cluster_nodes, [(nodes.get(h) or {}).get('node_name') for h in in_cluster])
        scope = None if count_all_nodes else gpu_names
        base = max(len(gpu_names), 1)
    else:
        scope = None
        base = max(len(in_cluster), 1)
    batch = parse_count(batch_size, base, 'node_maintenance_batch_size')
    outside_batch = parse_count(batch_size, max(len(outside_busy) + len(outside_quiet), 1), 'node_maintenance_batch_size')
    limit = parse_count(max_unavailable, base, 'node_maintenance_max_unavailable')
    # The nodes a stopped run left out of service come back first (stable: inventory order otherwise).
    servers.sort(key=lambda h: not (nodes.get(h) or {}).get('resume'))
    agents.sort(key=lambda h: not (nodes.get(h) or {}).get('resume'))
    # A node a run of ours left cordoned and labelled failed, which this plan takes through a batch again, does not
    # count against the room for its own retry (it would block it whenever node_maintenance_max_unavailable is 1; the gate
    # before its batch excludes the batch's own nodes too). A node someone else cordoned still counts.
    # Likewise a quarantined Node this plan takes through a batch (its remediation): it is out of service for the
    # reason the plan is there to fix, and counting it would leave no room to remediate it.
    retried = set((nodes.get(h) or {}).get('node_name') for h in servers + agents) - set([None, ''])
    own = set(_node_name(n) for n in cluster_nodes or []
              if _node_name(n) in retried
              and (quarantined(n) or any(_labels(n).get(label) == 'failed' for label in STATE_LABELS)))
    counted = 'GPU Node(s)' if scope is not None else 'Node(s)'
    counted_base = ('%d GPU Node(s) of the cluster' % base) if cluster_nodes is not None else (
        '%d host(s) of the play in a cluster, no cluster view' % base)
    already = [n['name'] for n in unavailable(cluster_nodes, exclude=own, scope=scope)]
    batches = []
    if outside_busy:
        batches.extend(outside_busy[i:i + outside_batch] for i in range(0, len(outside_busy), outside_batch))
        batches[0] = outside_quiet + batches[0]
    elif outside_quiet:
        batches.append(outside_quiet)
    if quiet:
        batches.append(quiet)
    step = 0
    # A quarantined Node this plan remediates is out of service already: its batch takes no room of the budget.
    quarantined_own = set(_node_name(n) for n in cluster_nodes or [] if _node_name(n) in own and quarantined(n))
    needs_room = [h for h in servers + agents if (nodes.get(h) or {}).get('node_name') not in quarantined_own]
    if servers or agents:
        room = limit - len(already)
        if room < 1 and not needs_room:
            room = batch
        if room < 1:
            raise ValueError('node_maintenance_max_unavailable allows %d unavailable node(s) (of %s), but %d %s of the '
                             'cluster are out of service already (unschedulable, NotReady or quarantined: %s): no node of '
                             'the cluster can be taken out. Bring them back, or raise node_maintenance_max_unavailable'
                             % (limit, counted_base, len(already), counted, ', '.join(already)))
        step = min(batch, room)
        batches.extend([s] for s in servers)
        batches.extend(agents[i:i + step] for i in range(0, len(agents), step))
    pending = outside_busy + servers + agents
    reason = ('%d node(s) to be %s: %d outside a cluster (in batches of %d, never with a node of a cluster), RKE2 '
              'servers one at a time (%s), then agents (%s) in batches of %d (node_maintenance_batch_size %s = %d; '
              'node_maintenance_max_unavailable %s = %d of %s, minus %d %s already out of service); %d quiet '
              'node(s) in parallel'
              % (len(pending), what, len(outside_busy), outside_batch, ', '.join(servers) or 'none',
                 ', '.join(agents) or 'none', step, batch_size, batch, max_unavailable, limit, counted_base,
                 len(already), counted, len(outside_quiet) + len(quiet)))
    if not pending:
        reason = 'nothing disruptive to do: every GPU node runs at once, in parallel (%s)' % (
            ', '.join(outside_quiet + quiet) or 'no node')
    return {'order': [h for b in batches for h in b], 'serial': [len(b) for b in batches] or [1], 'batches': batches,
            'outside': outside_busy + outside_quiet, 'quiet': quiet, 'servers': servers, 'agents': agents,
            'skip': skip, 'pending': pending, 'already_unavailable': already, 'agent_batch': step, 'limit': limit,
            'scope': scope, 'base': base, 'noop': not pending, 'reason': reason}


def batch_gate(batch, host_nodes, disruptive, cluster_nodes, limit, scope=None):
    """The budget before a batch, counted again from the cluster: which hosts of ``batch`` may go now.

    ``host_nodes``: host -> Node name (or None outside the cluster). ``disruptive``: host -> bool. ``limit``: the
    plan's node_maintenance_max_unavailable in nodes; ``scope``: the plan's scope (the GPU Nodes the budget counts), None
    for every Node. Nodes out of service (unschedulable or NotReady, taken out by anyone else) count
    against it; the disruptive hosts of the batch beyond the room left are deferred (the next
    run takes them). The plan puts the nodes a stopped run left out of service (``resume``) first, so that they
    come back before the budget is spent on others. Returns {go, defer, room, unavailable, message}.
    """
    mine = set(n for n in (host_nodes.get(h) for h in batch) if n)
    # A quarantined Node of this plan (one a later batch remediates) does not take the room of the batch before it;
    # any other quarantined Node counts.
    planned = set(n for n in host_nodes.values() if n)
    mine |= set(_node_name(n) for n in cluster_nodes or [] if _node_name(n) in planned and quarantined(n))
    # Every Node out of service outside this batch counts, a node labelled upgrading too: with the lock held it is
    # out of service all the same (a crashed run of ours, or another run that lost its lock).
    out_now = unavailable(cluster_nodes, exclude=mine, count_ours=True, scope=scope)
    room = limit - len(out_now)
    go, defer = [], []
    out_already = set(_node_name(n) for n in cluster_nodes or [] if quarantined(n))
    for host in batch:
        if not disruptive.get(host) or not host_nodes.get(host):
            go.append(host)
        elif host_nodes.get(host) in out_already:
            # Quarantined: out of service already, so its remediation takes no room.
            go.append(host)
        elif room > 0:
            go.append(host)
            room -= 1
        else:
            defer.append(host)
    busy = ', '.join('%s (%s)' % (n['name'], n['why']) for n in out_now) or 'none'
    message = ('node_maintenance_max_unavailable %d; out of service in the cluster now: %s' % (limit, busy)
               + ('; deferred to the next run: %s' % ', '.join(defer) if defer else ''))
    return {'go': go, 'defer': defer, 'room': limit - len(out_now), 'unavailable': out_now, 'message': message}


# ---- the cluster-wide lock: a coordination.k8s.io/v1 Lease ---------------------------------------------

RFC3339 = re.compile(r'^([0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2})(\.[0-9]+)?([Zz]|[+-][0-9]{2}:?[0-9]{2})?$')


def _parse_time(text):
    """An RFC 3339 time as the API server or a client writes it (MicroTime '...T10:00:00.000000Z', '+00:00' from a
    client's isoformat(), no fraction), as a naive UTC datetime; None when it is none of these."""
    match = RFC3339.match(str(text or '').strip())
    if not match:
        return None
    base = datetime.strptime(match.group(1).replace('t', 'T').replace(' ', 'T'), '%Y-%m-%dT%H:%M:%S')
    fraction = match.group(2) or ''
    if fraction:
        base += timedelta(microseconds=int((fraction[1:] + '000000')[:6]))
    zone = match.group(3) or 'Z'
    if zone not in ('Z', 'z'):
        sign = -1 if zone[0] == '-' else 1
        digits = zone[1:].replace(':', '')
        base -= sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
    return base


def holder_identity(run_id, host, started):
    """The Lease's holderIdentity: the run id, the host running Ansible, the start time."""
    return '%s@%s@%s' % (run_id, host, started)


def lease_object(identity, now, duration, namespace=LEASE_NAMESPACE, name=LEASE_NAME, current=None):
    """The Lease to write: a new one, or ``current`` updated (its metadata.resourceVersion kept, so the API server
    refuses the update with 409 Conflict when someone else wrote the Lease since it was read)."""
    spec = {'holderIdentity': identity, 'leaseDurationSeconds': int(duration), 'renewTime': now}
    if current:
        old = current.get('spec') or {}
        same = old.get('holderIdentity') == identity
        spec['acquireTime'] = old.get('acquireTime') if same and old.get('acquireTime') else now
        spec['leaseTransitions'] = int(old.get('leaseTransitions') or 0) + (0 if same else 1)
        meta = {'name': name, 'namespace': namespace,
                'resourceVersion': (current.get('metadata') or {}).get('resourceVersion')}
    else:
        spec['acquireTime'] = now
        spec['leaseTransitions'] = 0
        meta = {'name': name, 'namespace': namespace}
    meta['labels'] = {'app.kubernetes.io/managed-by': 'baremetal.gpu'}
    return {'apiVersion': 'coordination.k8s.io/v1', 'kind': 'Lease', 'metadata': meta, 'spec': spec}


def lease_decision(current, identity, now):
    """What to do with the Lease read now: create (none), renew (ours), take (released), take_over (expired; with
    a warning), or wait (held by another live run). ``now``: UTC time text. Returns {action, holder, expires,
    warning, message}."""
    if not current:
        return {'action': 'create', 'holder': '', 'expires': '', 'warning': '', 'message': 'no lock: taking it'}
    spec = current.get('spec') or {}
    holder = spec.get('holderIdentity') or ''
    if holder == identity:
        return {'action': 'renew', 'holder': holder, 'expires': '', 'warning': '', 'message': 'renewing our lock'}
    if not holder:
        return {'action': 'take', 'holder': '', 'expires': '', 'warning': '', 'message': 'the lock was released'}
    renewed = _parse_time(spec.get('renewTime') or spec.get('acquireTime'))
    duration = int(spec.get('leaseDurationSeconds') or 0)
    now_t = _parse_time(now)
    expires = renewed + timedelta(seconds=duration) if renewed else None
    if expires is None or now_t is None or now_t >= expires:
        warning = ('the maintenance lock held by %s expired (renewed %s, lease %d s): taken over. That run stopped '
                   'without releasing it; check the nodes it worked on' % (holder, spec.get('renewTime') or '?', duration))
        return {'action': 'take_over', 'holder': holder, 'expires': expires.strftime(TIME_FORMAT) if expires else '',
                'warning': warning, 'message': warning}
    return {'action': 'wait', 'holder': holder, 'expires': expires.strftime(TIME_FORMAT), 'warning': '',
            'message': 'the maintenance lock is held by %s until %s' % (holder, expires.strftime(TIME_FORMAT))}


def lease_release(current, identity):
    """The Lease with our hold released (holderIdentity emptied), or None when it is not ours."""
    if not current or (current.get('spec') or {}).get('holderIdentity') != identity:
        return None
    out = {'apiVersion': 'coordination.k8s.io/v1', 'kind': 'Lease', 'metadata': dict(current.get('metadata') or {}),
           'spec': dict(current.get('spec') or {})}
    out['spec'].pop('holderIdentity', None)
    return out


class LockConflict(Exception):
    """A write of the lock refused because someone else wrote it since we read it (the API server's 409
    Conflict on a stale resourceVersion, or 409 AlreadyExists on a create): someone else took it."""


def lock_acquire(store, identity, duration, timeout, poll, now, clock, sleep, renew_only=False, seen=None):
    """Take (or renew) the lock held in ``store`` for ``identity``; wait up to ``timeout`` seconds while another
    live run holds it; take over an expired one with a warning. Every write carries the resourceVersion that was
    read: a 409 (``LockConflict``) means someone else took it in between, and the lock is read and decided again,
    never overwritten. ``store``: get() -> object or None, create(obj), replace(obj) (both raise LockConflict).
    ``now``/``clock``/``sleep``: the UTC time text, a monotonic clock, a sleep (injected for the tests).
    ``renew_only``: the run must hold the lock already (a renewal per batch); anything else is a loss.
    ``seen``: the lock's resourceVersion when the caller's plan began ('' when there was none), or None.
    Returns {acquired, action, holder, waited, conflicts, warning, message, lease, stale}: ``stale`` (a reason, or '')
    when another run may have changed the nodes since the plan was made: this one waited for it, or someone wrote the
    lock between ``seen`` and the take (a run that finished, or worked, while the plan was being made)."""
    if timeout < 0:
        raise ValueError('the lock timeout must be 0 or more seconds, got %r' % (timeout,))
    start = clock()
    conflicts = 0
    last = None
    while True:
        current = store.get()
        decision = lease_decision(current, identity, now())
        waited = round(clock() - start, 1)
        if renew_only and decision['action'] != 'renew':
            holder = decision['holder'] or 'nobody'
            return {'acquired': False, 'action': 'lost', 'holder': decision['holder'], 'waited': waited,
                    'conflicts': conflicts, 'warning': '', 'lease': current,
                    'message': 'this run (%s) no longer holds the maintenance lock: it is held by %s now. The rollout '
                               'stops; nothing more is changed' % (identity, holder)}
        if decision['action'] == 'wait':
            last = decision
            if waited >= timeout:
                return {'acquired': False, 'action': 'wait', 'holder': decision['holder'], 'waited': waited,
                        'conflicts': conflicts, 'warning': '', 'lease': current,
                        'message': '%s; waited %s s for it (timeout %s s). Let that run finish, or raise the lock '
                                   'timeout' % (decision['message'], waited, timeout)}
            sleep(max(0.01, min(poll, timeout - waited)))
            continue
        body = lease_object(identity, now(), duration,
                            namespace=((current or {}).get('metadata') or {}).get('namespace') or LEASE_NAMESPACE,
                            name=((current or {}).get('metadata') or {}).get('name') or LEASE_NAME,
                            current=current if decision['action'] != 'create' else None)
        try:
            written = store.create(body) if decision['action'] == 'create' else store.replace(body)
        except LockConflict:
            # Someone else wrote the lock since we read it: read it again and decide again.
            conflicts += 1
            continue
        message = decision['message']
        if last:
            message = '%s (after waiting %s s: %s)' % (message, waited, last['message'])
        return {'acquired': True, 'action': decision['action'], 'holder': identity, 'waited': waited,
                'conflicts': conflicts, 'warning': decision['warning'], 'message': message, 'lease': written,
                'stale': plan_staleness(seen, current, waited)}


def plan_staleness(seen, current, waited):
    """Why a plan made before the lock was taken may be out of date, or ''. ``seen``: the lock's resourceVersion
    when the plan began ('' for no lock, None when unknown); ``current``: the lock read just before this run wrote
    it; ``waited``: seconds this run waited for another one."""
    if waited and waited > 0:
        return 'this run waited %s s for another run, which may have changed the nodes' % waited
    version = ((current or {}).get('metadata') or {}).get('resourceVersion') or ''
    if seen is not None and str(seen) != str(version):
        holder = ((current or {}).get('spec') or {}).get('holderIdentity') or 'another run'
        return ('the lock was written while the plan was made (version %s, now %s, last by %s)'
                % (seen or 'none', version or 'none', holder))
    return ''


def lock_release(store, identity):
    """Release our hold of the lock (holderIdentity emptied, with the resourceVersion read). A lock held by someone
    else, or written by someone else in between (409), is left alone. Returns {released, holder, message}."""
    current = store.get()
    body = lease_release(current, identity)
    if body is None:
        holder = ((current or {}).get('spec') or {}).get('holderIdentity') or ''
        return {'released': False, 'holder': holder,
                'message': 'the maintenance lock is not held by this run (%s): left alone' % (holder or 'nobody holds it')}
    try:
        store.replace(body)
    except LockConflict:
        return {'released': False, 'holder': '', 'message': 'someone else wrote the maintenance lock in between: left alone'}
    return {'released': True, 'holder': '', 'message': 'released the maintenance lock (%s)' % identity}
