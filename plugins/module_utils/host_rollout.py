# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Day 1 in batches: which GPU nodes are already Kubernetes nodes and need a reboot or an RKE2 restart.

Pure functions over plain data, used by the filters baremetal.gpu.host_rollout_node and
baremetal.gpu.host_rollout_plan and by playbooks/gpu_nodes.yml (roles/upgrade/tasks/host_rollout_*.yml).

A node is *in a cluster* when its RKE2 unit (gpu_node_facts' rke2.unit, from its server/agent role) is
enabled, or when the cluster API lists a Node of its name. Such a node is *disruptive* when the host
layer would reboot it (the reasons of nvidia_driver's tasks/reboot.yml, predicted before anything
changes from the node facts and nvidia_driver's read-only decision) or restart RKE2 (the reasons of
rke2_nvidia_runtime's tasks/service.yml that can be known beforehand: the runtime binary is not
installed yet, or RKE2's generated containerd config lacks the nvidia runtime).

The batches: the nodes outside a cluster and the quiet nodes of the cluster go with the first batch
(in parallel, as before); then the disruptive RKE2 servers one at a time; then the disruptive agents
in batches of min(batch size, max unavailable minus the nodes already unschedulable).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.baremetal.gpu.plugins.module_utils.rollout import node_unschedulable, parse_count

STATE_LABEL = 'baremetal.gpu/host-rollout'
# The options table of the nvidia runtime in a containerd config (versions 2, 3 and 4), as the
# rke2_nvidia_runtime role looks for it (__rke2_nvidia_runtime_options_re).
RUNTIME_OPTIONS = re.compile(r'''\[plugins\.["'](?:io\.containerd\.grpc\.v1\.cri|io\.containerd\.cri\.v1\.runtime)["']'''
                             r'''\.containerd\.runtimes\.["']?nvidia["']?\.options\]''')


def _name(package):
    return str(package).split('=', 1)[0]


def reboot_reasons(facts, driver_plan=None, apt=None):
    """The reasons nvidia_driver would reboot this node, known before anything changes.

    ``facts``: ansible_facts['gpu_node'] (modules, pci and driver subsets). ``driver_plan``: the fact
    nvidia_driver_plan of nvidia_driver's decide step, or None when that role is not run (then only the
    node's state counts). ``apt``: the result of that step's apt_sources_info (packages: {name: {installed,
    candidate}}), or None where apt was not asked (RHEL family): then the branch alone is compared.
    """
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


def restart_reasons(generated_config, runtime_binary_present, generated_path='config.toml'):
    """The reasons rke2_nvidia_runtime would restart RKE2 that are known before anything changes.

    ``generated_config``: the text of RKE2's generated containerd config.toml ('' or None when the
    file is not there). ``runtime_binary_present``: whether the NVIDIA container runtime is installed.
    """
    reasons = []
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


def node(facts, api_node=None, reboot=None, restart=None):
    """One host: in_cluster, why, role (server, agent or ''), unit, reboot and restart reasons, resume (the
    last rollout left the node cordoned, label baremetal.gpu/host-rollout=upgrading), disruptive."""
    rke2 = facts.get('rke2') or {}
    unit = rke2.get('unit') or ''
    enabled = unit and unit in (rke2.get('units_enabled') or [])
    role = rke2.get('role') or ''
    if enabled:
        why = '%s is enabled (%s)' % (unit, rke2.get('role_reason') or 'gpu_node_facts')
    elif api_node:
        why = 'the cluster API lists Node %s' % ((api_node.get('metadata') or {}).get('name') or '')
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
    labels = ((api_node or {}).get('metadata') or {}).get('labels') or {}
    resume = (['the last rollout left it out of service (label %s=upgrading)' % STATE_LABEL]
              if labels.get(STATE_LABEL) == 'upgrading' else [])
    return {'in_cluster': in_cluster, 'why': why, 'role': role if in_cluster else '', 'unit': unit,
            'reboot': reboot, 'restart': restart, 'resume': resume,
            'disruptive': in_cluster and bool(reboot or restart or resume)}


def plan(batch_size, max_unavailable, hosts, nodes, api_nodes=None):
    """The order and the batches of the host layer over ``hosts`` (the GPU nodes, inventory order).

    ``nodes`` maps host -> node() of that host. ``api_nodes`` maps host -> its Node object or None
    (no API, or no such Node). Returns order, serial (the play's batch sizes), batches, outside, quiet,
    servers, agents, already_unavailable, reason. Raises ValueError naming the variable for a bad batch
    size or maximum, or when the nodes already unschedulable leave no room for a disruptive node.
    """
    api_nodes = api_nodes or {}
    total = max(len(hosts), 1)
    batch = parse_count(batch_size, total, 'upgrade_batch_size')
    limit = parse_count(max_unavailable, total, 'upgrade_max_unavailable')
    outside, quiet, servers, agents, already = [], [], [], [], []
    for host in hosts:
        info = nodes.get(host) or {}
        api = api_nodes.get(host)
        labels = ((api or {}).get('metadata') or {}).get('labels') or {}
        if api is not None and node_unschedulable(api) and labels.get(STATE_LABEL) != 'upgrading':
            already.append(host)
        if not info.get('in_cluster'):
            outside.append(host)
        elif not info.get('disruptive'):
            quiet.append(host)
        elif info.get('role') == 'server':
            servers.append(host)
        else:
            agents.append(host)
    together = [h for h in hosts if h in outside or h in quiet]  # inventory order
    if not servers and not agents:
        return {'order': together, 'serial': [len(together)] if together else [1], 'batches': [together] if together else [],
                'outside': outside, 'quiet': quiet, 'servers': [], 'agents': [], 'already_unavailable': already,
                'agent_batch': 0,
                'reason': 'no node of a cluster needs a reboot or an RKE2 restart: every GPU node runs at once'}
    room = limit - len(already)
    if room < 1:
        raise ValueError('upgrade_max_unavailable allows %d unavailable GPU node(s), but %d are already unschedulable '
                         '(%s): no node of the cluster can be rebooted or have RKE2 restarted. Uncordon them, or raise '
                         'upgrade_max_unavailable' % (limit, len(already), ', '.join(already)))
    step = min(batch, room)
    batches = [[s] for s in servers] + [agents[i:i + step] for i in range(0, len(agents), step)]
    batches[0] = together + batches[0]
    reason = ('%d node(s) of the cluster need a reboot or an RKE2 restart: servers one at a time (%s), then agents '
              '(%s) in batches of %d (upgrade_batch_size %s = %d; upgrade_max_unavailable %s = %d, minus %d already '
              'unschedulable); the %d other GPU node(s) run with the first batch'
              % (len(servers) + len(agents), ', '.join(servers) or 'none', ', '.join(agents) or 'none', step,
                 batch_size, batch, max_unavailable, limit, len(already), len(together)))
    return {'order': [h for b in batches for h in b], 'serial': [len(b) for b in batches], 'batches': batches,
            'outside': outside, 'quiet': quiet, 'servers': servers, 'agents': agents, 'already_unavailable': already,
            'agent_batch': step, 'reason': reason}
