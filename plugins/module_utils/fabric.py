# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVIDIA Fabric Manager for NVSwitch systems: whether a node needs it, and at which version.

Pure functions (no I/O), used by the filters baremetal.gpu.fabric_manager_decision and
baremetal.gpu.fabric_manager_pins (roles/nvidia_driver/tasks/fabric-manager-*.yml).

On an HGX/DGX board with NVSwitch (gpu_node_facts ``system_kind`` ``hgx_nvswitch``) CUDA does not
initialise (error 802, "system not yet initialized") until ``nv-fabricmanager`` has configured the
switches, and Fabric Manager runs only at exactly the driver's version. Its packages, per NVIDIA's
Fabric Manager guide and the archives: ``nvidia-fabricmanager-<B>`` and ``libnvidia-nscq-<B>``
(Ubuntu multiverse, noble-updates has 550 to 615; NVIDIA's CUDA repository for Ubuntu and Debian up
to branch 580; from 590 the CUDA repository drops the branch suffix and pins with its version-locking
packages, which this release does not drive). The unit is ``nvidia-fabricmanager.service``; NVIDIA's
RHEL packaging starts it from ``nvidia-nvswitch-devices.path`` (seen on an HGX H100 with RHEL AI:
tests/fixtures/lspci/SOURCE.md).

Not managed, and refused when asked: Blackwell HGX (B200/B300), whose NVSwitches are not PCI functions
on the host and whose fabric also needs NVIDIA's NVLink subnet manager (NVLSM); GB200/GB300 NVL72
compute trays, which run IMEX instead of Fabric Manager.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.baremetal.gpu.plugins.module_utils.nvidia_smi import fabric_gpus, fabric_problems
from ansible_collections.baremetal.gpu.plugins.module_utils.support import gpu_generation

VARIABLE = 'nvidia_driver_fabric_manager'
SETTINGS = ('auto', 'true', 'false')
PACKAGES = ('nvidia-fabricmanager-{branch}', 'libnvidia-nscq-{branch}')
SERVICE = 'nvidia-fabricmanager.service'
NVSWITCH_PATH_UNIT = 'nvidia-nvswitch-devices.path'
# The CUDA repository names its packages with the branch only up to 580 (FIELD.md B.3).
LAST_SUFFIXED_CUDA_BRANCH = 580
UPSTREAM = re.compile(r'^(?:[0-9]+:)?([0-9]{3}\.[0-9]+(?:\.[0-9]+)?)')


def setting(value):
    """'auto', 'true' or 'false' from what a user may write (true/false/yes/no/auto, booleans, strings).

    Raises ValueError naming the variable for anything else.
    """
    if isinstance(value, bool):
        return 'true' if value else 'false'
    text = str(value if value is not None else 'auto').strip().lower()
    if text in ('auto', ''):
        return 'auto'
    if text in ('true', 'yes', 'on', '1'):
        return 'true'
    if text in ('false', 'no', 'off', '0'):
        return 'false'
    raise ValueError('%s must be auto, true or false; got %r' % (VARIABLE, value))


def upstream_version(version):
    """'580.178.04' for '580.178.04-0ubuntu0.24.04.1' or '3:580.95.05-1'; '' when not a driver version."""
    match = UPSTREAM.match(version or '')
    return match.group(1) if match else ''


def _generation(gpu):
    if gpu.get('generation'):
        return gpu['generation']
    try:
        return gpu_generation(gpu.get('device_id'))['generation']
    except ValueError:
        return 'unknown'


def decide(value, facts, branch, install_family, source, distribution=None, flavor=None):
    """Whether this node gets Fabric Manager, before anything changes.

    ``facts`` is gpu_node_facts' fact (system_kind, nvswitches, gpus); ``branch`` the decided driver
    branch; ``install_family`` Debian or RedHat; ``source`` distro or cuda_repo; ``distribution`` the OS
    (ansible_facts.distribution) and ``flavor`` nvidia_driver_flavor: Ubuntu's Fabric Manager packages depend
    on the server driver (``nvidia-kernel-common-<B>-server-<version>``, every branch of noble's multiverse), so
    on Ubuntu's own packages any other flavour is refused before anything changes.
    Returns a dict: setting, wanted (bool), reason, warnings (list), errors (list, each naming the
    variable), packages (names, without versions), service, path_unit.
    """
    out = {'setting': None, 'wanted': False, 'reason': '', 'warnings': [], 'errors': [], 'packages': [],
           'service': SERVICE, 'path_unit': NVSWITCH_PATH_UNIT}
    try:
        out['setting'] = setting(value)
    except ValueError as exc:
        out['errors'].append('%s. Nothing was changed.' % exc)
        return out
    kind = (facts or {}).get('system_kind') or 'none'
    switches = (facts or {}).get('nvswitches') or []
    blackwell = [g for g in (facts or {}).get('gpus') or [] if _generation(g) == 'blackwell-or-newer']
    if out['setting'] == 'false':
        out['reason'] = '%s is false' % VARIABLE
        if kind == 'hgx_nvswitch':
            out['warnings'].append('%s is false on an NVSwitch system (%d NVSwitch function(s)): CUDA will fail with '
                                   'error 802 until NVIDIA Fabric Manager runs at the driver\'s version'
                                   % (VARIABLE, len(switches)))
        return out
    if out['setting'] == 'true' and blackwell and kind != 'hgx_nvswitch':
        out['errors'].append(
            '%s is true, but this node has Blackwell or newer GPUs (%s): an HGX B200/B300 needs NVIDIA\'s NVLink '
            'subnet manager besides Fabric Manager, and a GB200/GB300 NVL72 tray runs IMEX; this collection manages '
            'neither. Set %s to false (or auto) and follow NVIDIA\'s Fabric Manager guide. Nothing was changed.'
            % (VARIABLE, ', '.join(sorted(set(g.get('name') or g.get('device_id') or '?' for g in blackwell))), VARIABLE))
        return out
    if out['setting'] == 'auto' and kind != 'hgx_nvswitch':
        out['reason'] = 'auto: no NVSwitch function on the PCI bus (%s)' % kind
        return out
    if install_family != 'Debian':
        out['errors'].append('%s: Fabric Manager is installed by this release on Debian and Ubuntu only (apt); on %s '
                             'set %s to false and install nvidia-fabric-manager with the driver yourself. Nothing was '
                             'changed.' % (VARIABLE, install_family, VARIABLE))
        return out
    if source == 'cuda_repo' and int(branch) > LAST_SUFFIXED_CUDA_BRANCH:
        out['errors'].append('%s: NVIDIA\'s CUDA repository names Fabric Manager without a branch from R590 on '
                             '(version-locking packages), which this release does not drive; branch %s cannot get a '
                             'Fabric Manager pinned to its driver here. Use branch %d or lower from the CUDA '
                             'repository, or the distribution\'s packages. Nothing was changed.'
                             % (VARIABLE, branch, LAST_SUFFIXED_CUDA_BRANCH))
        return out
    if distribution == 'Ubuntu' and source == 'distro' and flavor not in (None, 'server'):
        out['errors'].append('%s: Ubuntu\'s %s depend on the server driver (nvidia-kernel-common-%s-server), and '
                             'nvidia_driver_flavor is %s; apt cannot install both. Set nvidia_driver_flavor to server on '
                             'NVSwitch nodes (or %s to false). Nothing was changed.'
                             % (VARIABLE, ' and '.join(p.format(branch=branch) for p in PACKAGES), branch, flavor,
                                VARIABLE))
        return out
    out['wanted'] = True
    out['packages'] = [p.format(branch=branch) for p in PACKAGES]
    if kind == 'hgx_nvswitch':
        out['reason'] = '%s: %d NVSwitch function(s) (%s)' % (
            'auto' if out['setting'] == 'auto' else '%s is true' % VARIABLE, len(switches),
            ', '.join(sorted(set(s.get('model') or '' for s in switches))))
    else:
        out['reason'] = '%s is true' % VARIABLE
        out['warnings'].append('%s is true, but no NVSwitch function is on the PCI bus of this node (system kind %s): '
                               'Fabric Manager is installed and enabled as asked, and will not configure anything '
                               'here; set it to auto to install it only where NVSwitches are' % (VARIABLE, kind))
    return out


def driver_version(simulated, policy, candidates):
    """The apt version of the driver the transaction leaves: ``simulated`` (what the simulation installs) or,
    when it installs nothing, the installed version of the first of ``candidates`` (package names whose version
    is the driver's) that ``policy`` (apt.parse_policy) shows installed; '' when neither."""
    if simulated:
        return simulated
    for name in candidates or []:
        installed = ((policy or {}).get(name) or {}).get('installed')
        if installed:
            return installed
    return ''


def pins(decision, policy, driver_version):
    """Pin each Fabric Manager package to exactly the driver's version.

    ``policy`` is apt.parse_policy() of the Fabric Manager packages; ``driver_version`` the apt version
    of the driver the transaction leaves installed (the simulated new one, or the installed one).
    Returns a dict: install (['name=version', ...], empty when nothing is wanted), version (the upstream
    driver version), changes (True when a package is missing or at another version), errors (each
    naming the variable and what apt offers).
    """
    out = {'install': [], 'version': upstream_version(driver_version), 'changes': False, 'errors': []}
    if not decision.get('wanted'):
        return out
    if not out['version']:
        out['errors'].append('%s: the driver version cannot be read (apt gave %r), so Fabric Manager cannot be pinned '
                             'to it. Nothing was changed.' % (VARIABLE, driver_version))
        return out
    for name in decision['packages']:
        row = (policy or {}).get(name)
        if row is None:
            out['errors'].append('%s: the package %s is not known to apt on this node (multiverse on Ubuntu, NVIDIA\'s '
                                 'CUDA repository elsewhere). Nothing was changed.' % (VARIABLE, name))
            continue
        match = [v for v in row['versions'] if upstream_version(v) == out['version']]
        if not match:
            out['errors'].append('%s: %s has no version %s, the driver\'s (apt offers %s); Fabric Manager must run at '
                                 'exactly the driver\'s version. Pin nvidia_driver_version to a version both have. '
                                 'Nothing was changed.' % (VARIABLE, name, out['version'],
                                                           ', '.join(row['versions']) or 'none'))
            continue
        out['install'].append('%s=%s' % (name, match[0]))
        if row.get('installed') != match[0]:
            out['changes'] = True
    return out


def report(system_kind, smi):
    """What preflight's report says of the NVLink fabric ("preflight's report shows ... the fabric state").

    ``system_kind``: gpu_node_facts' ``system_kind`` (``hgx_nvswitch``, ``pcie``, ``none``). ``smi``: the result of
    baremetal.gpu.nvidia_smi with allow_no_gpu (``status``, ``reason``, ``gpus``), or None / a skipped result when the
    node has no nvidia-smi. Returns ``{'read': bool, 'gpus': [{index, name, state, status}], 'judged': bool,
    'problems': [...], 'summary': str}``; ``judged`` only on an NVSwitch system with Hopper-or-newer GPUs read.
    """
    smi = smi if isinstance(smi, dict) else {}
    nvswitch = system_kind == 'hgx_nvswitch'
    out = {'read': False, 'gpus': [], 'judged': False, 'problems': [], 'summary': ''}
    if smi.get('skipped') or not smi:
        out['summary'] = 'not read: no nvidia-smi on the node (the driver is not installed)'
    elif smi.get('status') != 'ok':
        out['summary'] = 'not read: %s' % (smi.get('reason') or smi.get('msg') or 'nvidia-smi failed')
    else:
        out['read'] = True
        out['gpus'] = [{'index': gpu.get('index'), 'name': gpu.get('name'), 'state': gpu.get('fabric_state') or 'N/A',
                        'status': gpu.get('fabric_status') or 'N/A'} for gpu in smi.get('gpus') or []]
        fabric = fabric_gpus(smi)
        if nvswitch and fabric:
            out['judged'] = True
            out['problems'] = fabric_problems(smi)
            out['summary'] = ('; '.join(out['problems']) if out['problems']
                              else 'Completed, Success on all %d Hopper-or-newer GPUs' % len(fabric))
        elif nvswitch:
            out['summary'] = 'not judged: no Hopper-or-newer GPU (an A100 HGX reports N/A on every system)'
        else:
            out['summary'] = 'not applicable: no NVSwitch on the PCI bus (%s)' % (system_kind or 'unknown')
    if not out['read'] and not nvswitch:
        out['summary'] += '; not needed: no NVSwitch on the PCI bus (%s)' % (system_kind or 'unknown')
    return out
