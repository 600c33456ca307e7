# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for the bare-metal host extras of nvidia_driver (Fabric Manager, module parameters); documented
in the .yml files beside."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.baremetal.gpu.plugins.plugin_utils.lazy import LazyModule

apt = LazyModule('apt')
fabric = LazyModule('fabric')
kernel_guard = LazyModule('kernel_guard')
modparams = LazyModule('modparams')
smi = LazyModule('nvidia_smi')


def fabric_manager_decision(facts, value, branch, install_family, source, distribution=None, flavor=None):
    if not isinstance(facts, dict):
        raise AnsibleFilterError('baremetal.gpu.fabric_manager_decision: the node facts must be a dict, got %s'
                                 % type(facts).__name__)
    return fabric.decide(value, facts, str(branch), install_family, source, distribution, flavor)


def fabric_report(smi, system_kind):
    return fabric.report(system_kind or '', smi)


def fabric_manager_pins(decision, policy_text, simulated_version, candidates=None):
    policy = apt.parse_policy(policy_text or '')
    return fabric.pins(decision or {}, policy, fabric.driver_version(simulated_version, policy, candidates or []))


def apt_known_packages(policy_text, names=None):
    known = [name for name, row in apt.parse_policy(policy_text or '').items() if row['versions']]
    return [n for n in (names if names is not None else sorted(known)) if n in known]


def nvidia_module_params(value):
    params, errors = modparams.check(value)
    return {'params': params, 'line': modparams.options_line(params), 'errors': errors}


def nvidia_params_mismatches(proc_text, requested):
    return modparams.mismatches(requested or {}, proc_text or '')


def nvidia_smi_mismatches(result, expect=None):
    try:
        return smi.result_mismatches(result, expect or {})
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError('baremetal.gpu.nvidia_smi_mismatches: %s' % exc)


def gpu_device_nodes(result, present):
    try:
        return smi.device_nodes(result, present or [])
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError('baremetal.gpu.gpu_device_nodes: %s' % exc)


def kernel_module_guard(results, kernels, next_boot, kmod):
    return kernel_guard.guard(results or [], kernels or [], next_boot or '', kmod or 'nvidia')


def prebuilt_flavour_packages(flavours, branch, server=False, open_modules=False):
    return kernel_guard.flavour_packages(flavours or [], str(branch), bool(server), bool(open_modules))


def headers_flavour_packages(flavours):
    return kernel_guard.headers_flavour_packages(flavours or [])


def dkms_autoinstall_problems(dkms_conf_text, hook_present):
    return kernel_guard.dkms_autoinstall(bool(hook_present), dkms_conf_text)


class FilterModule(object):

    def filters(self):
        return {
            'fabric_manager_decision': fabric_manager_decision,
            'fabric_manager_pins': fabric_manager_pins,
            'fabric_report': fabric_report,
            'apt_known_packages': apt_known_packages,
            'nvidia_module_params': nvidia_module_params,
            'nvidia_params_mismatches': nvidia_params_mismatches,
            'nvidia_smi_mismatches': nvidia_smi_mismatches,
            'gpu_device_nodes': gpu_device_nodes,
            'kernel_module_guard': kernel_module_guard,
            'prebuilt_flavour_packages': prebuilt_flavour_packages,
            'headers_flavour_packages': headers_flavour_packages,
            'dkms_autoinstall_problems': dkms_autoinstall_problems,
        }
