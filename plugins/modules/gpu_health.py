#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: gpu_health
short_description: Check a GPU node's health from nvidia-smi, the kernel log and DCGM, and give a verdict
version_added: 0.4.0
description:
  - Reads a GPU node's health and returns one finding per problem, each with a severity, the action NVIDIA's
    Xid catalog (or this collection) gives for it, and where it was read, plus a node verdict
    V(healthy), V(degraded) (a warning) or V(unhealthy) (a critical finding).
  - From C(nvidia-smi -q -x), through the parser of M(baremetal.gpu.nvidia_smi) - volatile and aggregate
    uncorrectable ECC errors, SRAM threshold and unrepairable memory, retired pages (pending, count near
    O(retired_pages_limit)), row remapping (pending, failure), the clock event reasons that say the hardware
    slowed the GPU (HW slowdown, HW thermal slowdown, HW power brake), a PCIe link below its maximum
    generation or width while the GPU is busy, the NVLink fabric registration state on NVSwitch systems, and a
    partial output (fewer GPUs listed than attached).
  - From C(/sys/bus/pci/devices) - NVIDIA GPUs the PCI bus has that nvidia-smi does not list (fallen off the bus,
    or not bound by the driver; GPUs bound to C(vfio-pci) are left out), and a GPU count below
    O(expected_gpu_count).
  - "From the kernel log of the current boot (C(journalctl -k -o short-iso), else C(dmesg)) - C(NVRM: Xid) lines,
    each classified by NVIDIA's Xid catalog carried in C(plugins/module_utils/xid_catalog.py) (source and date
    in RV(xid_catalog)), NVSwitch C(SXid) lines (fatal or not) and 'fallen off the bus' messages."
  - With O(dcgm_diag_level) set, C(dcgmi diag -r <level> -j) when DCGM is installed; each failed test is a
    finding.
  - Every source may be missing, hang or print garbage; that is a finding saying so (and the verdict is at least
    V(degraded)), never a traceback. Each command runs under O(timeout) (O(dcgm_diag_timeout) for DCGM), kept by
    the module itself even when the command cannot be killed.
  - Never changes anything and never reports C(changed). The decisions are pure functions in
    C(plugins/module_utils/gpu_health.py).
author:
  - baremetal.gpu maintainers (@baremetal-gpu)
requirements:
  - C(nvidia-smi) from the NVIDIA driver. C(journalctl) or C(dmesg) for the kernel log (root, or a user allowed to
    read it). C(dcgmi) from NVIDIA DCGM with a running host engine for O(dcgm_diag_level).
extends_documentation_fragment:
  - baremetal.gpu.attributes
options:
  binary_path:
    description:
      - Path of C(nvidia-smi). When unset, E(PATH) and then the directories M(baremetal.gpu.nvidia_smi) searches.
    type: path
  timeout:
    description:
      - Seconds each of C(nvidia-smi -q -x), C(journalctl) and C(dmesg) may run; at least 1. At the limit the
        command gets SIGTERM, SIGKILL 5 s later, and 2 s after that the module stops waiting (a hung
        C(nvidia-smi) is a critical finding, action V(RESTART_BM)).
    type: int
    default: 60
  expected_gpu_count:
    description:
      - The number of GPUs this node should have; fewer listed by C(nvidia-smi) is a critical finding.
      - At least 1. Unset, the GPUs on the PCI bus are the expectation (each one nvidia-smi lacks is a finding).
    type: int
  kernel_log:
    description:
      - Read the kernel log for Xid, SXid and fallen-off-the-bus messages.
    type: bool
    default: true
  kernel_log_since:
    description:
      - Only read kernel messages since this time, passed to C(journalctl --since) (for example
        V(2026-11-24 10:00:00) or V(-2h)), so that Xids cleared by a GPU reset are not counted again.
      - C(dmesg) cannot filter; when the log comes from C(dmesg) the module warns that it read the whole boot.
    type: str
  dcgm_diag_level:
    description:
      - Run C(dcgmi diag -r <level> -j) (1 quick, 2 medium about 2 min, 3 long about 15 min, 4 extended). V(0),
        the default, does not run it. Levels 2 to 4 load the GPUs heavily; run them on a drained node.
      - With a level set and C(dcgmi) missing, a warning finding says so.
    type: int
    choices: [0, 1, 2, 3, 4]
    default: 0
  dcgmi_path:
    description:
      - Path of C(dcgmi). When unset, E(PATH) and C(/usr/bin), C(/usr/local/bin).
    type: path
  dcgm_diag_timeout:
    description:
      - Seconds C(dcgmi diag) may run; at least 1.
    type: int
    default: 1800
  retired_pages_limit:
    description:
      - Retired pages (single and double bit together) at which a GPU is critical (action V(CONTACT_SUPPORT));
        80 % of it is a warning. V(0) turns the count check off.
      - The default 60 is the retired page count NVIDIA's dynamic page retirement documentation gives as an RMA
        criterion for its data center GPUs as far as this project knows; set your vendor's number.
    type: int
    default: 60
  fabric_wait:
    description:
      - Seconds to wait while a GPU's NVLink fabric registration is V(In Progress) (Fabric Manager registers the
        GPUs of an NVSwitch system for a while after a boot or its start), reading C(nvidia-smi -q -x) again every
        5 seconds. Still in progress after the wait, it is a critical finding (action V(CHECK_FABRIC_MANAGER)), as
        any state other than V(Completed) is. V(0), the default, does not wait. RV(fabric_waited) says how long it
        waited.
    type: int
    default: 0
  skip_checks:
    description:
      - Checks whose findings are dropped, for example V(pcie_link_width) on a board whose slots are wired x8.
    type: list
    elements: str
    default: []
    choices: [nvidia_smi, partial_output, gpu_count, gpu_not_visible, ecc_volatile_uncorrectable,
              ecc_aggregate_uncorrectable, sram_threshold, unrepairable_memory, retired_pages_pending,
              retired_pages_count, row_remap_pending, row_remap_failure, clocks_event, pcie_link_gen,
              pcie_link_width, fabric, xid, sxid, fallen_off_bus, kernel_log, dcgm_diag]
notes:
  - A PCIe link below its maximum is a warning only when the GPU is busy (performance state P0 and not idle);
    idle GPUs lower their link to save power, which is reported as V(info).
  - Xids are counted since boot (or since O(kernel_log_since)); an Xid that a GPU reset already cleared keeps
    the node V(unhealthy) until the next boot unless O(kernel_log_since) is later than the reset.
  - Tested with unit tests on real captures (21 C(nvidia-smi -q -x) outputs, kernel-log lines quoted in public
    issue threads; see C(tests/fixtures/kernel-log/SOURCE.md)) and module tests that drive C(main()) with mocked
    command replies. No real C(dcgmi diag -j) capture was found; the DCGM parser is tested against the layout
    documented in DCGM's source. Not run against a GPU by this project's CI, which has none.
seealso:
  - module: baremetal.gpu.nvidia_smi
  - module: baremetal.gpu.gpu_node_facts
  - name: NVIDIA Xid catalog
    description: Each Xid's resolution bucket (immediate action).
    link: https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html
  - name: DCGM diagnostics
    description: dcgmi diag levels and JSON output.
    link: https://docs.nvidia.com/datacenter/dcgm/latest/user-guide/dcgm-diagnostics.html
"""

EXAMPLES = r"""
- name: Check the node's GPUs
  baremetal.gpu.gpu_health:
  register: health

- name: Stop when a GPU is unhealthy, naming the findings
  ansible.builtin.assert:
    that: health.verdict != 'unhealthy'
    fail_msg: "{{ health.findings | selectattr('severity', 'equalto', 'critical') | map(attribute='detail') | list }}"

- name: An 8-GPU HGX node, with DCGM's quick diagnostic, ignoring Xids older than the last GPU reset
  baremetal.gpu.gpu_health:
    expected_gpu_count: 8
    dcgm_diag_level: 1
    kernel_log_since: "2026-11-24 10:00:00"
  register: health

- name: A workstation board with x8 slots
  baremetal.gpu.gpu_health:
    skip_checks: [pcie_link_width]
"""

RETURN = r"""
fabric_waited:
  description: Seconds the module waited for an NVLink fabric registration in progress (O(fabric_wait)); V(0) when it
    did not wait.
  returned: always
  type: int
  sample: 0
verdict:
  description: V(healthy), V(degraded) (a warning finding) or V(unhealthy) (a critical finding).
  returned: always
  type: str
  sample: unhealthy
reason:
  description: The check of the first critical finding (else of the first warning); empty when healthy.
  returned: always
  type: str
  sample: row_remap_pending
findings:
  description: Every finding, in the order the sources were read (nvidia-smi, PCI bus, kernel log, DCGM).
  returned: always
  type: list
  elements: dict
  contains:
    gpu:
      description: nvidia-smi's index of the GPU; V(null) for a node-wide finding or a device nvidia-smi does not list.
      type: int
    pci_bus_id:
      description: PCI address of the GPU or NVSwitch, as the source printed it; V(null) for a node-wide finding.
      type: str
    check:
      description: What was checked (the names O(skip_checks) takes).
      type: str
    severity:
      description: V(info), V(warning) or V(critical).
      type: str
    action:
      description:
        - The immediate action. NVIDIA's catalog buckets (V(RESTART_APP), V(RESET_GPU), V(RESTART_BM),
          V(CONTACT_SUPPORT), V(IGNORE), V(WORKFLOW_XID_48), ...) or this collection's V(NONE),
          V(CHECK_MECHANICALS), V(CHECK_DRIVER), V(CHECK_FABRIC_MANAGER), V(RERUN).
      type: str
    detail:
      description: What was found, with the numbers and the first log line.
      type: str
    source:
      description: Where it was read (C(nvidia-smi -q -x), C(journalctl -k), C(dmesg), C(sysfs ...), C(dcgmi diag -j)).
      type: str
  sample:
    - gpu: 0
      pci_bus_id: "00000000:CB:00.0"
      check: xid
      severity: critical
      action: RESET_GPU
      detail: "Xid 109 ROBUST_CHANNEL_CTXSW_TIMEOUT_ERROR: 1 line(s); first: ..."
      source: journalctl -k
counts:
  description: Number of findings per severity.
  returned: always
  type: dict
  sample: {info: 1, warning: 0, critical: 1}
gpus:
  description: One entry per GPU nvidia-smi listed, with its own verdict.
  returned: always
  type: list
  elements: dict
  sample:
    - {index: 0, pci_bus_id: "00000000:CB:00.0", name: NVIDIA H100 80GB HBM3, uuid: GPU-..., processes: 0,
       verdict: unhealthy, findings: 1}
gpu_count:
  description: GPUs listed by nvidia-smi (V(0) when it gave nothing).
  returned: always
  type: int
  sample: 8
pci_gpu_count:
  description: NVIDIA GPUs on the PCI bus (not bound to vfio-pci).
  returned: always
  type: int
  sample: 8
driver_version:
  description: Driver version nvidia-smi reports; V(null) when not read.
  returned: always
  type: str
  sample: 580.159.04
sources:
  description: What each source gave - V(ok), V(skipped), or why not (for example V(timeout), V(not installed)).
  returned: always
  type: dict
  sample: {nvidia_smi: ok, kernel_log: journalctl, dcgm_diag: skipped}
commands:
  description: The commands run, each as a list.
  returned: always
  type: list
  elements: list
  sample: [[/usr/bin/nvidia-smi, -q, -x], [/usr/bin/journalctl, -k, -o, short-iso, --no-pager]]
xid_catalog:
  description: Where the Xid catalog carried comes from and when it was read.
  returned: always
  type: dict
  sample: {source: "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html; ...", date: "2026-11-24"}
"""

import math
import os
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.baremetal.gpu.plugins.module_utils import deadline_run
from ansible_collections.baremetal.gpu.plugins.module_utils import gpu_health as gh
from ansible_collections.baremetal.gpu.plugins.module_utils import node_facts
from ansible_collections.baremetal.gpu.plugins.module_utils.nvidia_smi import (
    NvidiaSmiError,
    NvidiaSmiParseError,
    SMI_SEARCH_DIRS,
    interpret_run,
    to_text,
)
from ansible_collections.baremetal.gpu.plugins.module_utils.xid_catalog import CATALOG_DATE, CATALOG_SOURCE

# How often nvidia-smi is read again while an NVLink fabric registration is in progress (fabric_wait).
FABRIC_POLL = 5
# The clock and the sleep of that wait (the unit tests replace them).
_clock = time.monotonic
_sleep = time.sleep

C_LOCALE = {'LC_ALL': 'C', 'LANG': 'C'}
TOOL_DIRS = ['/usr/bin', '/bin', '/usr/sbin', '/sbin', '/usr/local/bin']


def run(cmd, timeout):
    """Run ``cmd`` under the deadline; the one place a command is executed (mocked in tests)."""
    env = dict(os.environ)
    env.update(C_LOCALE)
    return deadline_run.run_with_deadline(cmd, timeout, env=env)


def read_pci_gpus(root='/'):
    """NVIDIA GPUs on the PCI bus (sysfs), each with the kernel driver bound to it (mocked in tests)."""
    gpus = node_facts.pci(root)['gpus']
    for gpu in gpus:
        link = os.path.join(root, node_facts.PCI_DIR, gpu['address'], 'driver')
        gpu['driver'] = os.path.basename(os.readlink(link)) if os.path.islink(link) else None
    return gpus


def _tail(ran):
    return ('%s %s' % (to_text(ran.stdout), to_text(ran.stderr))).strip()[:400] or '(no output)'


def check_smi(module, timeout, pci_gpus, commands, sources):
    """(facts or None, findings) from nvidia-smi -q -x."""
    path = module.params['binary_path']
    if path and not (os.path.isfile(path) and os.access(path, os.X_OK)):
        path = None
        message = 'binary_path %s does not exist or is not executable' % module.params['binary_path']
    elif not path:
        path = module.get_bin_path('nvidia-smi', required=False, opt_dirs=SMI_SEARCH_DIRS)
        message = 'nvidia-smi not found in PATH or %s' % ', '.join(SMI_SEARCH_DIRS)
    if not path:
        sources['nvidia_smi'] = 'binary_missing'
        return None, [gh.smi_failure_finding('binary_missing', message + '; is the driver installed?', pci_gpus)]
    cmd = [path, '-q', '-x']
    commands.append(cmd)
    try:
        ran = run(cmd, timeout)
    except OSError as exc:
        sources['nvidia_smi'] = 'command_failed'
        return None, [gh.smi_failure_finding('command_failed', 'cannot run %s: %s' % (' '.join(cmd), exc), pci_gpus)]
    if ran.timed_out or ran.still_running:
        sources['nvidia_smi'] = 'timeout'
        return None, [gh.smi_failure_finding(
            'timeout', 'no answer within %s s; %s' % (timeout, ran.describe_kill(deadline_run.KILL_GRACE)), pci_gpus)]
    try:
        facts = interpret_run(cmd, ran.rc, ran.stdout, ran.stderr, health=True)
    except NvidiaSmiParseError as exc:
        sources['nvidia_smi'] = 'unparseable_output'
        return None, [gh.smi_failure_finding('unparseable_output', exc.message, pci_gpus)]
    except NvidiaSmiError as exc:
        sources['nvidia_smi'] = exc.status or 'command_failed'
        return None, [gh.smi_failure_finding(exc.status or 'command_failed', exc.message, pci_gpus)]
    sources['nvidia_smi'] = 'ok'
    return facts, gh.smi_findings(facts, module.params['retired_pages_limit'])


def read_kernel_log(module, timeout, commands, sources):
    """(text, source) of the kernel log of this boot; (None, why) when it cannot be read."""
    since = module.params['kernel_log_since']
    problems = []
    journalctl = module.get_bin_path('journalctl', required=False, opt_dirs=TOOL_DIRS)
    if journalctl:
        cmd = [journalctl, '-k', '-o', 'short-iso', '--no-pager'] + (['--since', since] if since else [])
        commands.append(cmd)
        ran = run(cmd, timeout)
        if not (ran.timed_out or ran.still_running) and ran.rc == 0:
            sources['kernel_log'] = 'journalctl'
            return to_text(ran.stdout), 'journalctl -k'
        problems.append('%s: %s' % (' '.join(cmd), 'no answer within %s s' % timeout
                                    if ran.timed_out or ran.still_running else 'rc %s, %s' % (ran.rc, _tail(ran))))
    dmesg = module.get_bin_path('dmesg', required=False, opt_dirs=TOOL_DIRS)
    if dmesg:
        cmd = [dmesg]
        commands.append(cmd)
        ran = run(cmd, timeout)
        if not (ran.timed_out or ran.still_running) and ran.rc == 0:
            sources['kernel_log'] = 'dmesg'
            if since:
                module.warn('kernel_log_since=%s is ignored: the kernel log came from dmesg, which cannot filter by '
                            'time; the whole boot was read' % since)
            return to_text(ran.stdout), 'dmesg'
        problems.append('%s: %s' % (' '.join(cmd), 'no answer within %s s' % timeout
                                    if ran.timed_out or ran.still_running else 'rc %s, %s' % (ran.rc, _tail(ran))))
    if not journalctl and not dmesg:
        problems.append('neither journalctl nor dmesg found')
    sources['kernel_log'] = 'unread'
    return None, '; '.join(problems)


def check_dcgm(module, facts_gpus, commands, sources):
    level = module.params['dcgm_diag_level']
    path = module.params['dcgmi_path'] or module.get_bin_path('dcgmi', required=False, opt_dirs=TOOL_DIRS)
    if not path or not os.access(path, os.X_OK) and module.params['dcgmi_path']:
        sources['dcgm_diag'] = 'not installed'
        return [gh.finding('dcgm_diag', gh.WARNING, 'RERUN',
                           'dcgm_diag_level=%s was asked for but dcgmi is not installed (%s)'
                           % (level, module.params['dcgmi_path'] or 'not in PATH'), gh.SOURCE_DCGM)]
    cmd = [path, 'diag', '-r', str(level), '-j']
    commands.append(cmd)
    timeout = module.params['dcgm_diag_timeout']
    ran = run(cmd, timeout)
    if ran.timed_out or ran.still_running:
        sources['dcgm_diag'] = 'timeout'
        return [gh.finding('dcgm_diag', gh.WARNING, 'RERUN', 'dcgmi diag -r %s -j did not finish within %s s; %s'
                           % (level, timeout, ran.describe_kill(deadline_run.KILL_GRACE)), gh.SOURCE_DCGM)]
    sources['dcgm_diag'] = 'rc %s' % ran.rc
    return gh.dcgm_findings(level, ran.rc, to_text(ran.stdout), to_text(ran.stderr), facts_gpus)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            binary_path=dict(type='path'),
            timeout=dict(type='int', default=60),
            expected_gpu_count=dict(type='int'),
            kernel_log=dict(type='bool', default=True),
            kernel_log_since=dict(type='str'),
            dcgm_diag_level=dict(type='int', default=0, choices=[0, 1, 2, 3, 4]),
            dcgmi_path=dict(type='path'),
            dcgm_diag_timeout=dict(type='int', default=1800),
            retired_pages_limit=dict(type='int', default=60),
            fabric_wait=dict(type='int', default=0),
            skip_checks=dict(type='list', elements='str', default=[], choices=list(gh.CHECKS)),
        ),
        supports_check_mode=True,
    )
    params = module.params
    result = dict(changed=False, verdict=None, reason='', findings=[], counts={}, gpus=[], gpu_count=0,
                  pci_gpu_count=0, driver_version=None, sources={}, commands=[], fabric_waited=0,
                  xid_catalog={'source': CATALOG_SOURCE, 'date': CATALOG_DATE})
    for name in ('timeout', 'dcgm_diag_timeout'):
        if params[name] < 1:
            module.fail_json(msg='%s must be at least 1 second, got %s' % (name, params[name]), **result)
    if params['expected_gpu_count'] is not None and params['expected_gpu_count'] < 1:
        module.fail_json(msg='expected_gpu_count must be at least 1, got %s' % params['expected_gpu_count'], **result)
    if params['fabric_wait'] < 0:
        module.fail_json(msg='fabric_wait must be 0 or more seconds, got %s' % params['fabric_wait'], **result)
    if params['retired_pages_limit'] < 0:
        module.fail_json(msg='retired_pages_limit must be 0 or more, got %s' % params['retired_pages_limit'], **result)

    sources, commands = result['sources'], result['commands']
    try:
        pci_gpus = read_pci_gpus('/')
    except (IOError, OSError) as exc:
        pci_gpus = []
        module.warn('cannot read the PCI bus from sysfs: %s' % exc)
    host_pci = [g for g in pci_gpus if (g.get('driver') or '') != 'vfio-pci']

    facts, findings = check_smi(module, params['timeout'], pci_gpus, commands, sources)
    # An NVLink fabric registration in progress (right after a boot or a Fabric Manager start) is waited for, up to
    # fabric_wait seconds, nvidia-smi read again every FABRIC_POLL seconds; still in progress then, it is a fault.
    fabric_waited = 0
    started = _clock()
    while params['fabric_wait'] and gh.fabric_pending(facts) and fabric_waited < params['fabric_wait']:
        _sleep(min(FABRIC_POLL, params['fabric_wait'] - fabric_waited))
        facts, findings = check_smi(module, params['timeout'], pci_gpus, commands, sources)
        fabric_waited = int(math.ceil(_clock() - started))
    if fabric_waited and gh.fabric_pending(facts):
        findings = gh.smi_findings(facts, params['retired_pages_limit'], fabric_waited)
    result['fabric_waited'] = fabric_waited
    smi_gpus = facts['gpus'] if facts else None
    findings.extend(gh.pci_findings(pci_gpus, smi_gpus, params['expected_gpu_count']))

    if params['kernel_log']:
        text, source = read_kernel_log(module, params['timeout'], commands, sources)
        if text is None:
            findings.append(gh.finding('kernel_log', gh.WARNING, 'RERUN',
                                       'the kernel log could not be read, so Xids were not checked: %s' % source,
                                       'kernel log'))
        else:
            findings.extend(gh.kernel_log_findings(gh.parse_kernel_log(text), smi_gpus, source))
    else:
        sources['kernel_log'] = 'skipped'

    if params['dcgm_diag_level']:
        findings.extend(check_dcgm(module, smi_gpus, commands, sources))
    else:
        sources['dcgm_diag'] = 'skipped'

    result.update(gh.summarize(findings, smi_gpus, params['skip_checks']))
    result.update(gpu_count=len(smi_gpus) if smi_gpus is not None else 0, pci_gpu_count=len(host_pci),
                  driver_version=facts.get('driver_version') if facts else None)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
