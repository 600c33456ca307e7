#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: nvidia_smi
short_description: Read the NVIDIA driver and GPUs from C(nvidia-smi -q -x) and check expectations
version_added: 0.1.0
description:
  - Runs C(nvidia-smi -q -x) once on the managed node, under a C locale and a time limit that holds
    even when C(nvidia-smi) cannot be killed, and returns the driver version, its branch, the CUDA
    version, one entry per GPU listed and what the NVIDIA device plugin will advertise for them.
  - Optionally checks expectations (driver branch or version, GPU count, product, persistence and
    MIG mode) and fails listing every mismatch at once, each as C(expected X, found Y).
  - Each failure of C(nvidia-smi) has its own message (binary missing, driver not communicating,
    NVML not initialising, no devices, unparseable output, timeout) that includes the command, rc,
    stdout and stderr.
  - Output that is not UTF-8 (a corrupted or localized C(nvidia-smi)) does not fail the module. The
    XML is read with those bytes replaced by U+FFFD and a warning names the offset and the bytes;
    messages show such bytes as C(\\xNN).
  - With O(allow_no_gpu=true) the driver-side failures (no driver communication, NVML init failure,
    no devices) are returned as data instead (RV(driver_communicating), RV(status), RV(reason)), so
    a role can report "driver installed, module built, no GPU visible" on a machine without a GPU.
  - Never reports C(changed). The parser is C(plugins/module_utils/nvidia_smi.py).
author:
  - baremetal.gpu maintainers (@baremetal-gpu)
requirements:
  - C(nvidia-smi) from the NVIDIA driver on the managed node.
extends_documentation_fragment:
  - baremetal.gpu.attributes
attributes:
  check_mode:
    details: Read-only; the command runs in check mode too.
options:
  binary_path:
    description:
      - Path of the C(nvidia-smi) binary.
      - When unset, the module searches E(PATH) and then C(/usr/bin), C(/usr/local/bin),
        C(/usr/local/nvidia/bin), C(/run/nvidia/driver/usr/bin) (GPU Operator driver container)
        and C(/opt/nvidia/bin).
    type: path
  timeout:
    description:
      - Seconds C(nvidia-smi -q -x) may run. A hung GPU or driver makes C(nvidia-smi) block, often in
        the kernel where no signal reaches it.
      - At the limit the module sends SIGTERM to C(nvidia-smi)'s process group, SIGKILL 5 s later, and
        2 s after that stops waiting; it then fails with RV(status=timeout) naming the limit, the
        signals sent and, when the process is still there, its pid and kernel state (C(D) is
        uninterruptible sleep). So the task ends within O(timeout) + 7 s in every case. The limit is
        kept by the module itself, not by coreutils C(timeout).
      - At least 1.
    type: int
    default: 60
  allow_no_gpu:
    description:
      - "When V(true), these failures of C(nvidia-smi) do not fail the task: it cannot communicate with the
        driver (exit 9); NVML cannot initialise (for example C(Failed to initialize NVML: Unknown Error),
        exit 255); no devices were found."
      - The module then returns RV(driver_communicating=false) (V(true) for no devices), RV(status) and
        RV(reason), with RV(gpu_count=0) and RV(gpus=[]); expectations are not checked.
      - A missing binary, unparseable output and a timeout still fail.
    type: bool
    default: false
  driver_branch:
    description:
      - Expected driver branch (the major version), for example V(580).
    type: str
  driver_version:
    description:
      - Expected driver version, exact (V(535.54.03)) or a prefix ending at a dot (V(535.54) matches
        V(535.54.03); V(535.5) does not).
    type: str
  gpu_count:
    description:
      - Expected number of GPUs listed by C(nvidia-smi), exactly.
    type: int
  min_gpu_count:
    description:
      - Expected minimum number of GPUs listed by C(nvidia-smi).
    type: int
  product:
    description:
      - Regular expression (Python C(re.search)) every GPU's product name must match,
        for example V(H100|H200).
    type: str
  persistence_mode:
    description:
      - Expected current persistence mode of every GPU.
    type: str
    choices: [Enabled, Disabled]
  mig_mode:
    description:
      - Expected current MIG mode of every GPU. GPUs without MIG report N/A and never match.
    type: str
    choices: [Enabled, Disabled]
  fabric_complete:
    description:
      - On an NVSwitch system (HGX/DGX), expect every Hopper or newer GPU's NVLink fabric (the C(<fabric>)
        element) to be in state V(Completed) with status V(Success), which it reaches once NVIDIA Fabric
        Manager has configured the switches. GPUs before Hopper report N/A on every system and are not checked.
      - Leave it V(false) on PCIe systems, where every GPU reports N/A.
    type: bool
    default: false
    version_added: 0.3.0
notes:
  - Runs C(nvidia-smi -q -x) with E(LC_ALL=C) and E(LANG=C) in its own session, through
    C(plugins/module_utils/deadline_run.py) rather than C(run_command), which has no time limit;
    earlier releases wrapped it in coreutils C(timeout), which does not return while its child is
    stuck in the kernel, and ran it without a limit when C(timeout) was missing.
  - O(gpu_count) counts the C(<gpu>) elements printed. When C(attached_gpus) disagrees with that number
    (a trimmed or partial output) the module warns.
  - C(index) is the position in C(nvidia-smi)'s output (its own index order), which need not follow
    the Linux minor number; both are returned.
  - Tested with unit tests that feed 21 real C(nvidia-smi -q -x) captures (DTD v10 to v13 and no
    DOCTYPE, several driver branches, MIG, vGPU guest) through the parser and drive the module with
    mocked command replies, including the real failure messages; and with stand-in C(nvidia-smi)
    scripts run for real (output not UTF-8, a hang that ignores SIGTERM, a hang that survives
    SIGKILL, no coreutils C(timeout)). It has not been run against a GPU by this project's CI,
    which has none.
seealso:
  - module: baremetal.gpu.gpu_node_capacity
  - name: nvidia-smi documentation
    description: NVIDIA System Management Interface, including its exit codes.
    link: https://docs.nvidia.com/deploy/nvidia-smi/index.html
"""

EXAMPLES = r"""
- name: Read the GPUs and require the 580 branch with eight H100s
  baremetal.gpu.nvidia_smi:
    driver_branch: "580"
    gpu_count: 8
    product: "H100"
    persistence_mode: Enabled
  register: smi

- name: Show the GPUs
  ansible.builtin.debug:
    msg: "{{ smi.gpus | map(attribute='name') | list }}"

- name: After installing the driver on a node that may have no GPU, report instead of failing
  baremetal.gpu.nvidia_smi:
    allow_no_gpu: true
  register: smi_probe

- name: Say what was found
  ansible.builtin.debug:
    msg: >-
      {{ 'driver ' ~ smi_probe.driver_version ~ ' with ' ~ smi_probe.gpu_count ~ ' GPU(s)'
         if smi_probe.status == 'ok'
         else 'driver installed, no GPU visible: ' ~ smi_probe.reason }}

- name: Use the driver shipped by the GPU Operator
  baremetal.gpu.nvidia_smi:
    binary_path: /run/nvidia/driver/usr/bin/nvidia-smi
    timeout: 30
"""

RETURN = r"""
status:
  description:
    - V(ok) when the XML was read (the task still fails when RV(mismatches) is not empty).
    - V(no_driver_communication) (exit 9, "couldn't communicate with the NVIDIA driver"),
      V(nvml_init_failed) ("Failed to initialize NVML", for example exit 255) or
      V(no_devices) ("No devices were found"); the task succeeds with these only when O(allow_no_gpu=true).
    - V(binary_missing), V(timeout), V(unparseable_output) or V(command_failed) (any other non-zero
      exit); the task always fails with these.
  returned: always
  type: str
  sample: ok
driver_communicating:
  description:
    - V(true) when C(nvidia-smi) talked to the kernel driver (RV(status) V(ok) or V(no_devices)),
      V(false) for V(no_driver_communication), V(nvml_init_failed) and V(binary_missing),
      V(null) when unknown (V(timeout), V(unparseable_output), V(command_failed)).
  returned: always
  type: bool
  sample: true
reason:
  description: Why no GPU data was read (the full message with likely causes); empty when RV(status=ok).
  returned: always
  type: str
  sample: ""
binary:
  description: Path of the C(nvidia-smi) that ran.
  returned: always
  type: str
  sample: /usr/bin/nvidia-smi
cmd:
  description: The command that ran, as a list.
  returned: always
  type: list
  elements: str
  sample: [/usr/bin/nvidia-smi, -q, -x]
rc:
  description:
    - Exit status of the command; a negative number is the signal that ended it (V(-9) after SIGKILL);
      V(null) when it could not be ended (RV(status=timeout) with the process still running).
  returned: always
  type: int
  sample: 0
stderr:
  description: Standard error of the command; bytes that are not UTF-8 are shown as C(\\xNN).
  returned: always
  type: str
  sample: ""
elapsed:
  description: Seconds the command ran (or was waited for).
  returned: always
  type: float
  sample: 0.4
driver_version:
  description: Driver version; V(null) when not read.
  returned: always
  type: str
  sample: 535.54.03
driver_branch:
  description: Driver branch, the major version; V(null) when not read.
  returned: always
  type: str
  sample: "535"
cuda_version:
  description: Highest CUDA version the driver supports; V(null) when not read.
  returned: always
  type: str
  sample: "12.2"
attached_gpus:
  description: The C(attached_gpus) value as printed; V(null) when absent.
  returned: always
  type: int
  sample: 4
gpu_count:
  description: Number of GPUs listed (C(<gpu>) elements); V(0) when not read.
  returned: always
  type: int
  sample: 1
dtd_version:
  description: Version of the C(nvsmi_device_vN.dtd) named in the DOCTYPE; V(null) when there is none.
  returned: always
  type: int
  sample: 12
gpus:
  description: One entry per GPU in C(nvidia-smi)'s order. Values C(nvidia-smi) prints as N/A are V(null).
  returned: always
  type: list
  elements: dict
  contains:
    index:
      description: Position in C(nvidia-smi)'s output, starting at 0.
      type: int
    name:
      description: Product name.
      type: str
    uuid:
      description: GPU UUID.
      type: str
    pci_bus_id:
      description: PCI bus id.
      type: str
    pci_device_id:
      description: PCI device and vendor ID as nvidia-smi prints it, for example V(233010DE) (an H100 SXM5).
      type: str
    minor_number:
      description: Linux minor number (C(/dev/nvidiaN)).
      type: int
    memory_total_mib:
      description: Total framebuffer memory in MiB.
      type: int
    persistence_mode:
      description: V(Enabled) or V(Disabled).
      type: str
    mig_mode:
      description: Current MIG mode, V(Enabled) or V(Disabled); V(null) on GPUs without MIG.
      type: str
    mig_mode_pending:
      description:
        - The MIG mode the GPU takes at its next reset or boot, V(Enabled) or V(Disabled); V(null) on GPUs without MIG.
        - It differs from RV(gpus[].mig_mode) after a mode change the GPU could not be reset for.
      type: str
      version_added: 0.4.0
    ecc_mode:
      description: Current ECC mode.
      type: str
    compute_mode:
      description: Compute mode, for example V(Default).
      type: str
    virtualization_mode:
      description: For example V(None), V(Pass-Through) or V(VGPU).
      type: str
    mig_devices:
      description: Number of MIG devices listed.
      type: int
    architecture:
      description: C(<product_architecture>), for example V(Hopper); V(null) where nvidia-smi does not print it.
      type: str
    fabric_state:
      description: NVLink fabric state (V(Completed), V(In Progress), V(Not Started)); V(null) for N/A.
      type: str
    fabric_status:
      description: NVLink fabric status (V(Success) once complete); V(null) for N/A.
      type: str
    fabric_clique_id:
      description: NVLink clique ID (multi-node NVLink); V(null) for N/A.
      type: str
    fabric_cluster_uuid:
      description: NVLink cluster UUID (multi-node NVLink); V(null) for N/A.
      type: str
  sample:
    - index: 0
      name: NVIDIA A100-SXM4-80GB
      uuid: GPU-513536b6-7d19-9063-b049-1e69664bb298
      pci_bus_id: "00000000:01:00.0"
      minor_number: 1
      memory_total_mib: 81920
      persistence_mode: Disabled
      mig_mode: Enabled
      mig_mode_pending: Enabled
      ecc_mode: Enabled
      compute_mode: Default
      virtualization_mode: None
      mig_devices: 4
mig_device_count:
  description: MIG devices listed on all GPUs together.
  returned: always
  type: int
  sample: 4
device_plugin_gpus:
  description:
    - How many C(nvidia.com/gpu) the NVIDIA device plugin advertises for the GPUs listed, for each of its
      MIG strategies, before time-slicing replicas (the plugin's rules, C(internal/rm/device_map.go)).
    - V(none), every GPU; V(single), every MIG device when every GPU has MIG on and every GPU when none
      has, V(null) when MIG is on for only some GPUs or a GPU has MIG on without MIG devices (the plugin
      refuses such a node); V(mixed), the GPUs with MIG off (MIG devices become
      C(nvidia.com/mig-<profile>)), V(null) when a GPU has MIG on without MIG devices.
    - All V(0) when no GPU was read.
  returned: always
  type: dict
  sample: {none: 1, single: 4, mixed: 0}
mismatches:
  description: Every expectation not met, each as C(expected X, found Y); the task fails when not empty.
  returned: always
  type: list
  elements: str
  sample: ["driver_branch: expected 580, found 535"]
"""


import os
import re

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.baremetal.gpu.plugins.module_utils import deadline_run
from ansible_collections.baremetal.gpu.plugins.module_utils.nvidia_smi import (
    NvidiaSmiError,
    NvidiaSmiParseError,
    STATUS_OK,
    STATUS_NO_DEVICES,
    SMI_SEARCH_DIRS,
    EXPECTATION_TYPES,
    check_expectations,
    count_warnings,
    describe_run,
    device_plugin_gpus,
    interpret_run,
    to_text,
    utf8_problem,
)

SEARCH_DIRS = SMI_SEARCH_DIRS
C_LOCALE = {'LC_ALL': 'C', 'LANG': 'C'}
# statuses of failures that always fail the task (the others are in module_utils.nvidia_smi)
STATUS_BINARY_MISSING = 'binary_missing'
STATUS_TIMEOUT = 'timeout'
STATUS_UNPARSEABLE = 'unparseable_output'
STATUS_FAILED = 'command_failed'
EXPECTATIONS = tuple(key for key, kind in EXPECTATION_TYPES)


def empty_result():
    return dict(changed=False, status=None, driver_communicating=None, reason='', binary=None,
                cmd=[], rc=None, stderr='', elapsed=0.0, driver_version=None, driver_branch=None,
                cuda_version=None, attached_gpus=None, gpu_count=0, dtd_version=None, gpus=[],
                mig_device_count=0, device_plugin_gpus={'none': 0, 'single': 0, 'mixed': 0},
                mismatches=[])


def missing_result():
    result = empty_result()
    result.update(status=STATUS_BINARY_MISSING, driver_communicating=False)
    return result


def find_binary(module):
    path = module.params['binary_path']
    if path:
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            module.fail_json(msg='nvidia-smi not found: binary_path %s does not exist or is not executable; '
                                 'is the driver installed?' % path, **missing_result())
        return path
    path = module.get_bin_path('nvidia-smi', required=False, opt_dirs=SEARCH_DIRS)
    if not path:
        module.fail_json(msg='nvidia-smi not found in PATH or %s; is the driver installed?'
                             % ', '.join(SEARCH_DIRS), **missing_result())
    return path


def run(cmd, timeout):
    """Run ``cmd`` under the deadline; the one place the command is executed (mocked in tests)."""
    env = dict(os.environ)
    env.update(C_LOCALE)
    return deadline_run.run_with_deadline(cmd, timeout, env=env)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            binary_path=dict(type='path'),
            timeout=dict(type='int', default=60),
            allow_no_gpu=dict(type='bool', default=False),
            driver_branch=dict(type='str'),
            driver_version=dict(type='str'),
            gpu_count=dict(type='int'),
            min_gpu_count=dict(type='int'),
            product=dict(type='str'),
            persistence_mode=dict(type='str', choices=['Enabled', 'Disabled']),
            mig_mode=dict(type='str', choices=['Enabled', 'Disabled']),
            fabric_complete=dict(type='bool', default=False),
        ),
        supports_check_mode=True,
    )
    result = empty_result()
    timeout = module.params['timeout']
    if timeout < 1:
        module.fail_json(msg='timeout must be at least 1 second, got %s' % timeout, **result)
    if module.params['product'] is not None:
        try:
            re.compile(module.params['product'])
        except re.error as exc:
            module.fail_json(msg='product %r is not a valid regular expression: %s'
                                 % (module.params['product'], exc), **result)

    binary = find_binary(module)
    cmd = [binary, '-q', '-x']
    result.update(binary=binary, cmd=cmd)

    try:
        ran = run(cmd, timeout)
    except OSError as exc:
        result['status'] = STATUS_FAILED
        module.fail_json(msg='cannot run %s: %s' % (' '.join(cmd), exc), **result)
    result.update(rc=ran.rc, stderr=to_text(ran.stderr), elapsed=round(ran.elapsed, 1))

    if ran.timed_out or ran.still_running:
        result['status'] = STATUS_TIMEOUT
        module.fail_json(msg='nvidia-smi -q -x did not finish within the timeout of %s s: %s. A hung GPU or '
                             'driver blocks nvidia-smi; check dmesg for Xid errors and the GPU with lspci; a GPU '
                             'in this state usually needs a reset or a reboot. %s'
                             % (timeout, ran.describe_kill(deadline_run.KILL_GRACE),
                                describe_run(cmd, ran.rc, ran.stdout, ran.stderr)), **result)

    for name, data in (('output', ran.stdout), ('standard error', ran.stderr)):
        problem = utf8_problem(data)
        if problem:
            module.warn('nvidia-smi -q -x printed %s on its %s (a corrupted or localized nvidia-smi?); '
                        'the XML is read with them replaced by U+FFFD, and messages show them as \\xNN'
                        % (problem, name))

    try:
        facts = interpret_run(cmd, ran.rc, ran.stdout, ran.stderr)
    except NvidiaSmiParseError as exc:
        result['status'] = STATUS_UNPARSEABLE
        module.fail_json(msg=exc.message, **result)
    except NvidiaSmiError as exc:
        if not exc.status:
            result['status'] = STATUS_FAILED
            module.fail_json(msg=exc.message, **result)
        result.update(status=exc.status, reason=exc.message,
                      driver_communicating=exc.status == STATUS_NO_DEVICES)
        if module.params['allow_no_gpu']:
            # Say so explicitly: Ansible otherwise marks a result with a non-zero rc as failed.
            module.exit_json(failed=False, **result)
        module.fail_json(msg=exc.message, **result)

    result.update(facts, status=STATUS_OK, driver_communicating=True,
                  mig_device_count=sum(gpu['mig_devices'] for gpu in facts['gpus']),
                  device_plugin_gpus=device_plugin_gpus(facts['gpus']))
    for warning in count_warnings(facts):
        module.warn(warning)

    expect = dict((key, module.params[key]) for key in EXPECTATIONS)
    result['mismatches'] = check_expectations(facts, expect)
    if result['mismatches']:
        module.fail_json(msg='nvidia-smi on this node does not meet %d expectation(s): %s'
                             % (len(result['mismatches']), '; '.join(result['mismatches'])), **result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
