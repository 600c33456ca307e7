#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: gpu_node_facts
short_description: Read a GPU node's state (PCI GPUs, nouveau, Secure Boot, kernels, driver, runtimes, RKE2)
version_added: 0.2.0
description:
  - Reads the state a GPU node's setup depends on, from C(/sys), C(/proc), C(/boot), the package database and
    a few read-only commands, and returns it as the fact C(gpu_node) (C(ansible_facts['gpu_node'])).
  - The one source of node facts for the collection's roles (C(preflight), C(nvidia_driver),
    C(rke2_nvidia_runtime)); nothing on the node changes. Runs in check mode too.
  - A value the node hides is reported as C(unknown), never guessed. Containers, for example, hide
    C(/proc/modules) and C(/sys/firmware).
author:
  - baremetal.gpu maintainers (@baremetal-gpu)
requirements:
  - Linux. C(lspci) (pciutils), C(mokutil), C(dpkg-query) or C(rpm), and C(systemctl) are used when present.
extends_documentation_fragment:
  - baremetal.gpu.attributes
  - baremetal.gpu.attributes.facts
options:
  gather_subset:
    description:
      - What to read. V(all) reads everything.
      - V(pci), the NVIDIA PCI functions and the GPUs among them (PCI class 0x03), each with its generation
        (L(baremetal.gpu.gpu_generation,https://github.com/NVIDIA/open-gpu-kernel-modules#compatible-gpus)),
        the NVSwitches and the system kind (PCIe, or HGX with NVSwitch).
      - V(modules), nouveau and the loaded NVIDIA driver (version, open or proprietary).
      - V(secure_boot), from the C(SecureBoot) EFI variable first and C(mokutil --sb-state) second.
      - V(kernels), the installed kernels (an image in C(/boot) and a modules directory) and their headers, the kernel
        metapackages with their flavours, and the kernel the node boots next (also read with V(driver)).
      - V(driver), the driver packages, DKMS builds, C(nvidia-smi) and a C(.run) installer's traces.
      - V(runtimes), the container runtimes on E(PATH) and RKE2's embedded containerd, with their versions.
      - V(rke2), the RKE2 binary, version, units and this node's role (server or agent).
      - V(disk), the free space for the driver packages and the DKMS build.
    type: list
    elements: str
    choices: [all, pci, modules, secure_boot, kernels, driver, runtimes, rke2, disk]
    default: [all]
  runtime_paths:
    description:
      - With V(runtimes), also these absolute paths, each listed when it is an executable file (a runtime installed
        where E(PATH) may not lead; container_toolkit passes its C(container_toolkit_runtime_binary)).
    type: list
    elements: path
    default: []
  set_fact:
    description:
      - Publish the result as the fact C(gpu_node). V(false) returns it as C(gpu_node) in the result only, so that a
        later reading of a few subsets does not replace the whole fact an earlier one set (a role re-reading one
        subset after it changed the node, such as container_toolkit's C(detect)).
    type: bool
    default: true
  fingerprint:
    description:
      - Read no facts; return C(fingerprint), a digest of what the subsets in O(gather_subset) read (V(pci),
        V(modules), V(secure_boot), V(kernels), V(driver); V(all) is not accepted) and of O(fingerprint_paths).
        Stats and a few small files only, no command. A later call that finds the same inputs returns the same
        value, so a role can tell whether a decision taken earlier in the run on these facts still holds
        (nvidia_driver reuses the plan play's decision this way).
      - What stands for what, and its limits, is in the notes.
    type: bool
    default: false
  with_fingerprint:
    description:
      - Read the facts and also return C(fingerprint), as O(fingerprint) would, taken before the facts are read (so a
        change while they are read shows in a later fingerprint). For the first decision of a run, which has no earlier
        one to compare with, this is one module run instead of two.
      - The subsets are named as for O(fingerprint).
    type: bool
    default: false
  fingerprint_paths:
    description:
      - With O(fingerprint) or O(with_fingerprint), also these absolute paths, each by its identity (type, size, modification time, inode;
        a directory with the identity of each entry one level down; an absent path counts too).
    type: list
    elements: path
    default: []
  records_dir:
    description:
      - Also return C(records), the JSON files (C(*.json)) of this directory, one level, each parsed, by its name
        without C(.json); and C(records_dir_exists). A role reads its own records on the node this way, in the same run
        of the module as its facts. A file that is not JSON fails the module, naming the file.
      - Not with O(fingerprint).
    type: path
  dpkg_journal:
    description:
      - Also return C(dpkg_journal), the entries of dpkg's journal (C(/var/lib/dpkg/updates)), there only while a dpkg
        run is in progress or after one was interrupted, when apt refuses every change until C(dpkg --configure -a).
      - Not with O(fingerprint).
    type: bool
    default: false
  stat_paths:
    description:
      - Also return C(paths), for each of these absolute paths whether it exists, whether it is a directory, and its
        modification time (C(lstat)).
      - Not with O(fingerprint).
    type: list
    elements: path
    default: []
seealso:
  - module: baremetal.gpu.nvidia_smi
  - plugin: baremetal.gpu.kernel_module_flavour
    plugin_type: filter
notes:
  - "The RKE2 role is decided from what is installed, then what systemd has enabled, then what the node has done
    or is configured to do (the server's state directory C(<data-dir>/server/db) or C(server/token), server-only keys
    in C(/etc/rancher/rke2/config.yaml)). It is left empty, with the reason, when that does not decide it (both
    units enabled, or both installed and neither enabled with nothing to tell them apart). Whether a unit is
    active is not used: just after a reboot an agent is not active yet."
  - "O(fingerprint): the package database's identity (C(/var/lib/dpkg/status), rewritten by dpkg on every change, or
    rpm's database) stands for the answers of C(dpkg-query) and C(rpm); the boot ID stands for what only a boot
    changes (the PCI functions besides their addresses, Secure Boot's state from C(mokutil)); C(/proc/modules) and
    the loaded driver's version files are read whole. A change that keeps a file's size, modification time and
    inode is not seen (a tool that resets the time on purpose); the roles read the facts again whenever the
    digest differs."
"""

EXAMPLES = r"""
- name: Read the node
  baremetal.gpu.gpu_node_facts:

- name: Show the GPUs and their generation
  ansible.builtin.debug:
    msg: "{{ ansible_facts['gpu_node']['gpus'] | map(attribute='family') | list }}"

- name: Only what the driver role needs
  baremetal.gpu.gpu_node_facts:
    gather_subset: [pci, modules, secure_boot, kernels]

- name: Is the NVIDIA container runtime installed now (the fact gpu_node stays as it was)
  baremetal.gpu.gpu_node_facts:
    gather_subset: [runtimes]
    runtime_paths: [/usr/bin/nvidia-container-runtime]
    set_fact: false
  register: runtimes

- name: Read the node, the role's records and dpkg's journal in one run (nvidia_driver's decide)
  baremetal.gpu.gpu_node_facts:
    gather_subset: [pci, modules, secure_boot, kernels, driver]
    records_dir: /var/lib/baremetal-gpu/nvidia_driver
    dpkg_journal: true
    stat_paths: [/etc/modprobe.d/nvidia-baremetal-gpu.conf]
  register: read

- name: Has anything the driver decision read changed since it was taken?
  baremetal.gpu.gpu_node_facts:
    gather_subset: [pci, modules, secure_boot, kernels, driver]
    fingerprint: true
    fingerprint_paths: [/var/lib/dpkg/updates, /etc/apt/sources.list.d]
  register: now
"""

RETURN = r"""
fingerprint:
  description:
    - C(digest), a SHA-256 of every input; C(inputs), each input's label (C(<kind>:<path>), for example
      C(path:/var/lib/dpkg/status)) with the SHA-256 of its state.
  returned: when O(fingerprint=true) or O(with_fingerprint=true)
  type: dict
  sample:
    digest: 5e1f0c3a9b0d4f7e8a6c2b1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f
    inputs:
      "content:/proc/modules": 0d6b2c1a9e8f7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a1f0e9d8c7b6a5f4e3d2c
gpu_node:
  description: The same dict as the fact C(gpu_node), returned instead of it with O(set_fact=false).
  returned: when O(set_fact=false)
  type: dict
records:
  description: With O(records_dir), each JSON file there, parsed, by its name without C(.json); empty when there is none.
  returned: when O(records_dir) is set
  type: dict
  sample: {"holds": {"held": ["nvidia-driver-580-open"]}}
records_dir_exists:
  description: With O(records_dir), whether that directory exists.
  returned: when O(records_dir) is set
  type: bool
dpkg_journal:
  description: With O(dpkg_journal), the names of the entries of C(/var/lib/dpkg/updates); empty when dpkg is idle.
  returned: when O(dpkg_journal=true)
  type: list
  elements: str
  sample: ["0000", "0001"]
paths:
  description: With O(stat_paths), each path with C(exists), C(isdir) and C(mtime) (seconds; V(null) when absent).
  returned: when O(stat_paths) is set
  type: dict
  sample: {"/etc/modprobe.d/nvidia-baremetal-gpu.conf": {"exists": true, "isdir": false, "mtime": 1796112111.65}}
ansible_facts:
  description: The fact C(gpu_node); only the keys of the gathered subsets are set.
  returned: when O(set_fact=true)
  type: dict
  contains:
    gpu_node:
      description: The node's state.
      type: dict
      contains:
        container:
          description: True inside a container, whose kernel is the host's.
          type: bool
          sample: false
        gpus:
          description: NVIDIA display controllers (PCI class 0x03xx), each classified by its device ID.
          type: list
          elements: dict
          sample:
            - address: "0000:00:06.0"
              device_id: "0x2330"
              class: "0x030200"
              name: "NVIDIA Corporation GH100 [H100 SXM5 80GB]"
              generation: turing-to-ada
              family: Hopper
              open_supported: true
              open_required: false
              proprietary_supported: true
        nvidia_pci_devices:
          description: Addresses of every NVIDIA PCI function (GPUs, their audio and USB functions, NVSwitches).
          type: list
          elements: str
          sample: ["0000:00:06.0"]
        pci_source:
          description: Where the PCI data came from, V(sysfs), V(lspci) or V(none).
          type: str
          sample: sysfs
        nvswitches:
          description:
            - The NVSwitch functions (HGX/DGX baseboards), told by device ID (C(0x22a3) H100, C(0x1af1) A100,
              C(0x1ac2) HGX-2) or by the name lspci gives (C(... NVSwitch)); never by PCI class 0x0680 alone,
              which NVIDIA's nForce chipset Ethernet controllers carry too.
            - HGX B200/B300 NVSwitches are not PCI functions on the host and are not listed.
          type: list
          elements: dict
          sample: [{"address": "0000:07:00.0", "device": "0x22a3", "class": "0x0680",
                    "name": "NVIDIA Corporation GH100 [H100 NVSwitch]", "model": "H100 NVSwitch (HGX H100/H200)"}]
        nvidia_other_bridges:
          description: NVIDIA functions of PCI class 0x0680 that are not known NVSwitches (nForce Ethernet, for example).
          type: list
          elements: dict
          sample: [{"address": "00:07.0", "device": "0x03ef", "class": "0x0680",
                    "name": "NVIDIA Corporation MCP61 Ethernet"}]
        system_kind:
          description: V(hgx_nvswitch) (NVSwitch functions on the PCI bus), V(pcie) (GPUs, no NVSwitch) or V(none).
          type: str
          sample: hgx_nvswitch
        system_kind_note:
          description: Why; for Blackwell or newer GPUs, that an HGX B200/B300 or GB200 cannot be told from PCI.
          type: str
        nouveau_loaded:
          description: V(true), V(false), or V(unknown) when C(/proc/modules) cannot be read.
          type: raw
          sample: false
        nvidia_loaded_version:
          description: Version of the loaded nvidia module, empty when none is loaded.
          type: str
          sample: "580.159.04"
        nvidia_loaded_flavour:
          description: V(open) or V(proprietary), from C(/proc/driver/nvidia/version); empty when unknown.
          type: str
          sample: open
        secure_boot:
          description: V(enabled), V(disabled), V(not_uefi) or V(unknown).
          type: str
          sample: disabled
        secure_boot_source:
          description: V(efivars), V(mokutil) or V(none).
          type: str
          sample: efivars
        secure_boot_detail:
          description: What the decision was read from.
          type: str
          sample: EFI variable SecureBoot = 0
        kernel_running:
          description: The running kernel (the host's, in a container).
          type: str
          sample: 6.8.0-149-generic
        kernels:
          description: Installed kernels, with whether their headers are installed.
          type: list
          elements: dict
          sample: [{"version": "6.8.0-149-generic", "headers": true}]
        installed_kernels:
          description: The versions of RV(ansible_facts.gpu_node.kernels).
          type: list
          elements: str
          sample: ["6.8.0-149-generic"]
        kernel_headers_versions:
          description: Kernels whose headers are installed (C(/lib/modules/<version>/build) exists).
          type: list
          elements: str
        kernel_headers_for_running:
          description: Whether the running kernel has headers.
          type: bool
        running_kernel_is_host:
          description: True in a container, where the running kernel belongs to the host.
          type: bool
        driver_install_method:
          description: V(none), V(package), V(runfile), V(package+runfile) or V(unknown).
          type: str
          sample: package
        driver_packages:
          description: Installed driver packages as C(name version).
          type: list
          elements: str
          sample: ["nvidia-dkms-580-open 580.178.04-0ubuntu0.24.04.1"]
        driver_installed_versions:
          description: Driver versions the installed packages carry (not the kernel versions of prebuilt module packages).
          type: list
          elements: str
          sample: ["580.178.04"]
        driver_installed_branches:
          description: The branches of RV(ansible_facts.gpu_node.driver_installed_versions).
          type: list
          elements: str
          sample: ["580"]
        driver_stack_packages:
          description:
            - Names of the installed packages of the NVIDIA driver stack of any branch, held or not (C(nvidia-*),
              C(libnvidia-*), C(linux-modules-nvidia-*) and the like; dpkg only, empty elsewhere).
          type: list
          elements: str
          sample: ["libnvidia-compute-595", "nvidia-headless-595-open", "nvidia-utils-595"]
        driver_held_packages:
          description: Those of RV(ansible_facts.gpu_node.driver_stack_packages) whose dpkg selection is C(hold).
          type: list
          elements: str
          sample: ["nvidia-headless-595-open", "nvidia-utils-595"]
        driver_dkms_modules:
          description: DKMS builds of NVIDIA modules (module, version, kernel, arch).
          type: list
          elements: dict
        driver_nvidia_smi:
          description: Path of C(nvidia-smi), empty when there is none.
          type: str
        container_runtimes:
          description: Container runtimes found, with C(name), C(path), C(version_line) and C(version) (x.y.z).
          type: list
          elements: dict
          sample: [{"name": "containerd", "path": "/usr/bin/containerd", "version": "2.2.1",
                    "version_line": "containerd github.com/containerd/containerd/v2 2.2.1"}]
        rke2:
          description:
            - C(present), C(binary), C(version) (C(v1.31.6+rke2r1)), C(version_plain) (C(1.31.6)),
              C(units_installed), C(units_enabled), C(unit_states), C(role) (V(server), V(agent), or empty when
              unclear), C(role_reason), C(unit) (C(rke2-<role>)), C(data_dir), C(config_file), C(kubeconfig_mode).
          type: dict
        dkms_disk_path:
          description: Where the free space was measured.
          type: str
          sample: /var/lib/dkms
        dkms_disk_free_mb:
          description: Free MiB there.
          type: int
          sample: 20480
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.baremetal.gpu.plugins.module_utils import node_facts

EXTRA_PATHS = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin', '/opt/rke2/bin']


def main():
    module = AnsibleModule(
        argument_spec=dict(
            gather_subset=dict(type='list', elements='str', default=['all'],
                               choices=['all'] + list(node_facts.SECTIONS)),
            runtime_paths=dict(type='list', elements='path', default=[]),
            set_fact=dict(type='bool', default=True),
            fingerprint=dict(type='bool', default=False),
            with_fingerprint=dict(type='bool', default=False),
            fingerprint_paths=dict(type='list', elements='path', default=[]),
            records_dir=dict(type='path'),
            dpkg_journal=dict(type='bool', default=False),
            stat_paths=dict(type='list', elements='path', default=[]),
        ),
        supports_check_mode=True,
    )
    subset = module.params['gather_subset']
    sections = node_facts.SECTIONS if 'all' in subset else tuple(subset)

    def which(name):
        return module.get_bin_path(name, required=False, opt_dirs=EXTRA_PATHS)

    def run(argv):
        binary = argv[0] if os.path.isabs(argv[0]) else which(argv[0])
        if not binary:
            return None, '', '%s not found' % argv[0]
        return module.run_command([binary] + list(argv[1:]), environ_update={'LC_ALL': 'C', 'LANG': 'C'})

    extra = {}
    if module.params['fingerprint'] or module.params['with_fingerprint']:
        if 'all' in subset:
            module.fail_json(msg='gather_subset with fingerprint must name the subsets (%s), not all'
                             % ', '.join(sorted(node_facts.FINGERPRINT_INPUTS)))
        try:
            extra['fingerprint'] = node_facts.fingerprint('/', sections, module.params['fingerprint_paths'], which)
        except ValueError as exc:
            module.fail_json(msg='gather_subset with fingerprint: %s' % exc)
        if module.params['fingerprint']:
            module.exit_json(changed=False, **extra)

    lspci_text = None
    if 'pci' in sections:
        rc, out, _err = run(['lspci', '-Dnn', '-d', '10de:'])
        lspci_text = out if rc == 0 else None
    facts = node_facts.gather('/', run, which, os.uname()[2], sections, lspci_text, module.params['runtime_paths'])
    if module.params['records_dir']:
        try:
            extra['records_dir_exists'], extra['records'] = node_facts.records('/', module.params['records_dir'])
        except ValueError as exc:
            module.fail_json(msg=str(exc))
    if module.params['dpkg_journal']:
        extra['dpkg_journal'] = node_facts.dpkg_journal('/')
    if module.params['stat_paths']:
        extra['paths'] = node_facts.path_stats('/', module.params['stat_paths'])
    if module.params['set_fact']:
        module.exit_json(changed=False, ansible_facts={'gpu_node': facts}, **extra)
    module.exit_json(changed=False, gpu_node=facts, **extra)


if __name__ == '__main__':
    main()
