# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a node needs from a maintenance run, and why: the maintenance engine's disruption reasons.

Pure functions over the node facts of baremetal.gpu.gpu_node_facts, the driver plan and the Node as the API server
returns it: whether the node is in a cluster, its RKE2 role, and whether the run would disrupt it (a reboot, an
RKE2 restart, a driver change, a GPU remediation, the uninstall, a resume after a crash), per kind of run
(``node`` for day 1, ``upgrade_node``, ``uninstall_node``, ``remediate_node``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.baremetal.gpu.plugins.module_utils.maintenance_nodes import (
    ACCEPTANCE_LABEL, GPU_RESOURCE, HOST_ROLLOUT_LABEL, REMEDIATION_LABEL, SKIP_LABEL, UNINSTALL_LABEL, node_labels,
    node_name, ours)
from ansible_collections.baremetal.gpu.plugins.module_utils.support import DEVICE_PLUGIN_PAUSE, EXPORTER_PAUSE


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
    node cordoned by a crashed run is checked and uncordoned). Returns {branch, done, reasons, target}:
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
    return {'branch': branches[0] if len(branches) == 1 else '', 'done': not reasons, 'reasons': reasons, 'target': target}


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
    value = node_labels(api_node).get(ACCEPTANCE_LABEL)
    if value is not None:
        return value != 'passed'
    capacity = (api_node.get('status') or {}).get('capacity') or {}
    return not any(GPU_RESOURCE.match(key) and str(count).strip() not in ('', '0') for key, count in capacity.items())


def node(facts, api_node=None, reboot=None, restart=None, label=HOST_ROLLOUT_LABEL, accept_new=False, mig=None):
    """One host of day 1 (or of the uninstall, ``label``): in_cluster, why, role (server, agent or ''), unit,
    reboot and restart reasons, mig (the reasons mig_manager would change the GPUs' MIG layout: a mode change
    resets the GPUs and new instances restart the device plugin, so it is done out of service), resume (the last run
    left the node cordoned, ``label``=upgrading), accept (with ``accept_new``, gpu_health_accept_new_nodes: the reason
    its GPUs are checked before its first uncordon, when acceptance_pending()), accept_label, disruptive (a node to
    accept leaves service too: it is uncordoned only after its GPUs passed)."""
    rke2 = facts.get('rke2') or {}
    unit = rke2.get('unit') or ''
    enabled = unit and unit in (rke2.get('units_enabled') or [])
    role = rke2.get('role') or ''
    if enabled:
        why = '%s is enabled (%s)' % (unit, rke2.get('role_reason') or 'gpu_node_facts')
    elif api_node:
        why = 'the cluster API lists Node %s' % node_name(api_node)
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
              if node_labels(api_node).get(label) == 'upgrading' else [])
    accept = (['a new node: its GPUs are checked before its first uncordon (gpu_health_accept_new_nodes)']
              if accept_new and in_cluster and acceptance_pending(api_node) else [])
    mig = list(mig or [])
    return {'in_cluster': in_cluster, 'why': why, 'role': role if in_cluster else '', 'unit': unit,
            'reboot': reboot, 'restart': restart, 'mig': mig, 'resume': resume, 'accept': accept,
            'accept_label': ACCEPTANCE_LABEL, 'node_name': node_name(api_node),
            'disruptive': in_cluster and bool(reboot or restart or mig or resume or accept)}


def uninstall_node(facts, api_node=None, runtime_present=False, rke2_files=None, pending_restart=None):
    """One host of the uninstall (playbooks/uninstall.yml's host part): what taking the host layer off disrupts.

    Purging the driver takes the userland of running GPU pods away, removing the NVIDIA container runtime breaks
    every container that uses it, and taking RKE2's template off restarts RKE2: on a node of a cluster each is done
    out of service (cordon, GPU pods deleted, drain), in a batch. ``facts``: ansible_facts['gpu_node'] (driver and
    rke2 subsets); ``runtime_present``: the uninstall removes the NVIDIA container runtime (container_toolkit's
    containerd drop-in is there, or a toolkit package it purges); ``rke2_files``: the files of rke2_nvidia_runtime
    found on the node; ``pending_restart``: rke2_nvidia_runtime's record of an RKE2 restart an earlier run recorded
    and did not do (killed between the removal of its files and the restart, or held back), or None. Same shape as
    node(): in_cluster, why, role, unit, reboot (empty: the uninstall never reboots), restart, reasons, resume,
    disruptive."""
    facts = facts or {}
    reasons = []
    versions = list(facts.get('driver_installed_versions') or [])
    if versions:
        reasons.append('driver %s to purge' % ', '.join(versions))
    if runtime_present:
        reasons.append('the NVIDIA container runtime to remove')
    restart = ['%s to remove (RKE2 restarts)' % ', '.join(rke2_files)] if rke2_files else []
    if pending_restart:
        restart.append('a restart recorded by an earlier run that stopped before it (%s)'
                       % (pending_restart.get('recorded') or '?'))
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
    Same shape as node(), plus step and gpus; reasons are the remediation's; exporter_paused: the Node carries a
    label that keeps the dcgm-exporter or the device plugin pods off it (support.EXPORTER_PAUSE, DEVICE_PLUGIN_PAUSE:
    a reset sets them and removes them after; a run killed in between left them, and the node's next remediation
    removes them)."""
    remediation = remediation or {}
    step = remediation.get('step') or 'none'
    reasons = list(remediation.get('reasons') or []) if step != 'none' else []
    base = node(facts or {}, api_node, reasons if step == 'reboot' else [], [], label=REMEDIATION_LABEL)
    base['step'] = step
    base['gpus'] = list(remediation.get('gpus') or []) if step == 'reset_gpu' else []
    base['reasons'] = reasons
    labels = node_labels(api_node)
    base['exporter_paused'] = any(labels.get(pause['label']) == pause['value']
                                  for pause in (EXPORTER_PAUSE, DEVICE_PLUGIN_PAUSE))
    base['disruptive'] = bool(base['in_cluster'] and (step != 'none' or base['resume']))
    return base


def upgrade_node(facts, api_node, status):
    """One host of a driver branch change: in_cluster (a Node maps to it, or its RKE2 unit is enabled), role,
    skip (label baremetal.gpu/driver-upgrade.skip), done and disruptive (not done: host_status()'s answer)."""
    rke2 = (facts or {}).get('rke2') or {}
    unit = rke2.get('unit') or ''
    enabled = bool(unit and unit in (rke2.get('units_enabled') or []))
    in_cluster = bool(api_node) or enabled
    labels = node_labels(api_node)
    skip = str(labels.get(SKIP_LABEL, '')).lower() in ('true', '1', 'yes')
    done = bool((status or {}).get('done'))
    # A Node a stopped run of ours left out of service (labelled upgrading) goes through its batch again even when
    # the host shows the change done (a kill after the done record, before the uncordon): nothing is left to change,
    # and the leave step puts it back in service.
    resume = bool(api_node) and ours(api_node)
    reasons = list((status or {}).get('reasons') or [])
    if (status or {}).get('target'):
        # The first reason says the change (the engine's enter step annotates the Node with the reasons).
        reasons.insert(0, 'to driver branch %s' % status['target'])
    if done and resume:
        reasons = ['a stopped run left the Node out of service (labelled upgrading): back in service']
    return {'in_cluster': in_cluster, 'role': (rke2.get('role') or '') if in_cluster else '', 'unit': unit,
            'node_name': node_name(api_node),
            'why': ('the cluster API lists Node %s' % api_node['metadata']['name']) if api_node else
                   ('%s is enabled' % unit if enabled else 'no Node of the cluster'),
            'skip': skip, 'done': done and not resume, 'resume': resume, 'reasons': reasons,
            'disruptive': not skip and (not done or resume)}
