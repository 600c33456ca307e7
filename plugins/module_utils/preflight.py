# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The preflight role's findings (once two Jinja templates): what blocks a node from becoming a GPU
node, and what needs attention without blocking, from the node's preflight report (roles/preflight/tasks/probe.yml:
gpu_node_facts, the OS matrix row and nvidia_driver's read-only plan)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.baremetal.gpu.plugins.module_utils import support
from ansible_collections.baremetal.gpu.plugins.module_utils.input_rules import jinja_int


def blockers(report, require_gpu, dkms_min_free_mb, supported_os, architectures):
    """What must change before this node can become a GPU node, in a fixed order."""
    p = report
    out = []
    if not p.get('os_supported'):
        out.append("%s is not in the collection's OS matrix (%s): use one of those" % (p.get('os'), ', '.join(supported_os)))
    if not p.get('architecture_supported'):
        out.append('architecture %s is not supported (%s)' % (p.get('architecture'), ', '.join(architectures)))
    if require_gpu and not p.get('gpus'):
        out.append('no NVIDIA GPU (vendor 0x10de, display class) on the PCI bus (%s): check the card is seated and seen'
                   ' by `lspci -d 10de:`; on a node without a GPU set preflight_require_gpu: false' % p.get('pci_source'))
    if jinja_int(p.get('dkms_disk_free_mb')) < jinja_int(dkms_min_free_mb):
        out.append('only %s MiB free under %s, the driver packages and DKMS build need %s MiB (preflight_dkms_min_free_mb):'
                   ' free some space' % (p.get('dkms_disk_free_mb'), p.get('dkms_disk_path'), dkms_min_free_mb))
    if 'runfile' in (p.get('driver_install_method') or ''):
        out.append("a driver installed by NVIDIA's .run installer is present (/usr/bin/nvidia-uninstall or"
                   " /var/log/nvidia-installer.log): run `nvidia-uninstall` before the nvidia_driver role installs packages")
    for error in (p.get('driver_plan') or {}).get('errors') or []:
        out.append('nvidia_driver would refuse: %s' % error)
    for error in (p.get('mig') or {}).get('errors') or []:
        out.append('the MIG layout of its sharing profile cannot be applied: %s' % error)
    return [line.strip() for line in out]


def warnings(report, require_gpu):
    """Findings that need attention but do not block, in a fixed order."""
    p = report
    plan = p.get('driver_plan') or {}
    rke2 = p.get('rke2') or {}
    out = []
    if p.get('os_supported') and not p.get('os_tested'):
        out.append('%s is supported but not tested on a real node by this collection (see the README support matrix)' % p.get('os'))
    if not require_gpu and not p.get('gpus'):
        out.append('no NVIDIA GPU on the PCI bus (allowed here: preflight_require_gpu is false)')
    if plan.get('branch_warning'):
        out.append(plan['branch_warning'])
    if p.get('nouveau_loaded') == 'unknown':
        out.append('nouveau state unknown: /proc/modules is not readable (a container?)')
    elif p.get('nouveau_loaded'):
        out.append('nouveau is loaded: the nvidia_driver role blacklists it and reboots (nvidia_driver_reboot_enabled)')
    if p.get('secure_boot') == 'enabled' and plan.get('module_build', '') != 'prebuilt':
        out.append('Secure Boot is enabled: unsigned DKMS modules are refused; set nvidia_driver_secure_boot: sign (enroll'
                   ' the MOK key at the console on the next boot), use Ubuntu\'s signed prebuilt modules'
                   ' (nvidia_driver_module_build: prebuilt), or disable Secure Boot in the firmware')
    elif p.get('secure_boot') == 'unknown':
        out.append('Secure Boot state unknown (%s)' % p.get('secure_boot_detail'))
    if not p.get('kernel_headers_for_running') and plan.get('module_build', 'dkms') == 'dkms':
        out.append('no kernel headers for the running kernel %s (headers for: %s): DKMS cannot build for it until they are'
                   ' installed (the nvidia_driver role installs headers for the installed kernels)'
                   % (p.get('kernel_running'), ', '.join(p.get('kernel_headers_versions') or []) or 'none'))
    if p.get('driver_install_method') == 'unknown':
        out.append('an NVIDIA driver is present (%s) but neither from a known package nor from the .run installer'
                   % (p.get('driver_nvidia_smi') or 'module %s' % p.get('nvidia_loaded_version')))
    flavour, wanted = p.get('nvidia_loaded_flavour'), plan.get('kernel_module', '')
    if flavour and wanted and flavour != wanted:
        out.append('the loaded nvidia module is the %s flavour; nvidia_driver will install the %s one (%s) and reboot'
                   % (flavour, wanted, plan.get('kernel_module_reason')))
    if not rke2.get('present'):
        out.append('RKE2 not found: rke2_nvidia_runtime needs rke2-server or rke2-agent installed')
    elif not rke2.get('role'):
        out.append('RKE2 role unclear: %s' % rke2.get('role_reason'))
    mode = rke2.get('kubeconfig_mode')
    if mode and jinja_int(mode[-1]) > 0:
        out.append('/etc/rancher/rke2/rke2.yaml is world-readable (mode %s): set write-kubeconfig-mode: "0600" in'
                   ' /etc/rancher/rke2/config.yaml' % mode)
    return [line.strip() for line in out]


def findings(report, require_gpu, dkms_min_free_mb, supported_os=None, architectures=None):
    """Blockers and warnings; the OS matrix and the architectures are the collection's (support.py) unless given."""
    supported_os = support.supported_os_keys() if supported_os is None else supported_os
    architectures = list(support.ARCHITECTURES) if architectures is None else architectures
    return {'blockers': blockers(report, require_gpu, dkms_min_free_mb, supported_os, architectures),
            'warnings': warnings(report, require_gpu)}
