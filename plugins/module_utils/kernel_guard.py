# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every installed kernel, with or without an NVIDIA module; the kernel the node boots next must have one.

Pure functions (no I/O), used by the filters baremetal.gpu.kernel_module_guard and
baremetal.gpu.prebuilt_flavour_packages (roles/nvidia_driver/tasks/kernels-guard.yml, preflight).

A kernel installed after the driver (unattended-upgrades bringing the next kernel through the kernel
metapackage) has a module only when something brings it: DKMS's kernel postinst hook
(/etc/kernel/postinst.d/dkms, with AUTOINSTALL for the module), or, for Canonical's prebuilt modules,
the flavour metapackage linux-modules-nvidia-<B>[-server][-open]-<flavour> that moves with the kernel
metapackage (linux-generic -> linux-modules-nvidia-580-open-generic). ``modinfo -k <kernel> <module>``
says which kernels have one (the module is ``nvidia`` on Ubuntu and from NVIDIA's packages,
``nvidia-current`` in Debian's packages).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.baremetal.gpu.plugins.module_utils import dkms as dkmslib

# Flavours Ubuntu builds prebuilt NVIDIA modules for are named like the kernel metapackage's flavour
# (generic, generic-hwe-24.04, lowlatency, ...); Debian's flavours (amd64, cloud-amd64) have none.
PREBUILT_TEMPLATE = 'linux-modules-nvidia-{branch}{server}{open}-{flavour}'
# DKMS builds for a kernel whose headers are installed: the headers metapackage of each flavour
# (linux-headers-amd64 beside linux-image-amd64, linux-headers-generic, linux-headers-virtual) moves with the kernel
# metapackage, so the next kernel's headers come in the same upgrade and DKMS's hook builds the module for it.
HEADERS_TEMPLATE = 'linux-headers-{flavour}'


def flavour_packages(flavours, branch, server, open_modules):
    """The prebuilt module metapackage of each kernel flavour: linux-modules-nvidia-<B>[-server][-open]-<flavour>."""
    return [PREBUILT_TEMPLATE.format(branch=branch, server='-server' if server else '', open='-open' if open_modules else '',
                                     flavour=f) for f in flavours or []]


def headers_flavour_packages(flavours):
    """The headers metapackage of each kernel flavour (DKMS path): linux-headers-<flavour>."""
    return [HEADERS_TEMPLATE.format(flavour=f) for f in flavours or []]


def guard(results, kernels, next_boot, kmod):
    """Which kernels have the NVIDIA module, from ``modinfo -k <kernel> <kmod>`` results (item, rc, stdout, stderr).

    Returns a dict: rows ([{kernel, module (bool), version, filename, signer}] in the order of ``kernels``),
    with (kernels that have one), without (kernels that have none), next_boot, next_boot_ok (False only when
    the next-boot kernel is known and has no module), message (one sentence naming the kernels).
    """
    by_kernel = {}
    asked = {}
    for result in results or []:
        # An item is the kernel, or [kernel, module name] when several names were asked (playbooks/verify.yml asks
        # for nvidia and Debian's nvidia-current): the one modinfo found wins.
        item = result.get('item')
        kernel, name = (item[0], item[1]) if isinstance(item, (list, tuple)) else (item, kmod)
        if name not in asked.setdefault(kernel, []):
            asked[kernel].append(name)
        if kernel not in by_kernel or (result.get('rc') == 0 and by_kernel[kernel][0].get('rc') != 0):
            by_kernel[kernel] = (result, name)
    rows = []
    for kernel in kernels or []:
        result, name = by_kernel.get(kernel) or ({}, kmod)
        row = {'kernel': kernel, 'module': False, 'kmod': name, 'version': '', 'filename': '', 'signer': ''}
        if result.get('rc') == 0:
            fields = dkmslib.parse_modinfo(result.get('stdout'))
            row.update(module=True, version=fields.get('version') or '', filename=fields.get('filename') or '',
                       signer=fields.get('signer') or '')
        rows.append(row)
    have = [r['kernel'] for r in rows if r['module']]
    lack = [r['kernel'] for r in rows if not r['module']]
    ok = not next_boot or next_boot in have
    # A kernel without the module is named with every name asked for it ("NO nvidia or nvidia-current module").
    parts = ['%s: %s' % (r['kernel'], ('%s %s' % (r['kmod'], r['version'])) if r['module']
                         else 'NO %s module' % ' or '.join(asked.get(r['kernel']) or [kmod]))
             for r in rows]
    message = '; '.join(parts) or 'no installed kernel'
    if next_boot:
        message += '. Next boot: %s (%s)' % (next_boot, 'has the module' if ok else 'WITHOUT the module: the node '
                                             'would boot without its GPU driver')
    return {'rows': rows, 'with': have, 'without': lack, 'next_boot': next_boot or '', 'next_boot_ok': ok,
            'message': message}


def dkms_autoinstall(hook_present, dkms_conf_text):
    """Problems (list) with DKMS building the module for a kernel installed later: the kernel postinst hook
    (/etc/kernel/postinst.d/dkms) missing, or AUTOINSTALL not "yes" in the module's dkms.conf."""
    problems = []
    if not hook_present:
        problems.append('the DKMS kernel postinst hook /etc/kernel/postinst.d/dkms is missing: a kernel installed later '
                        'gets no NVIDIA module (reinstall the dkms package)')
    autoinstall = ''
    for line in (dkms_conf_text or '').splitlines():
        name, sep, value = line.strip().partition('=')
        if sep and name.strip() == 'AUTOINSTALL':
            autoinstall = value.strip().strip('"\'')
    if dkms_conf_text is not None and autoinstall.lower() != 'yes':
        problems.append('the module\'s dkms.conf does not set AUTOINSTALL="yes" (found %r): DKMS will not build it for a '
                        'kernel installed later' % (autoinstall or 'nothing'))
    return problems
