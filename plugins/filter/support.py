# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters over the support data (plugins/module_utils/support.py); documented in the .yml files beside."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.baremetal.gpu.plugins.plugin_utils.lazy import LazyModule

preflight = LazyModule('preflight')
support = LazyModule('support')


def driver_branch_status(branch, today=None):
    try:
        return support.driver_branch_status(branch, today)
    except ValueError as exc:
        raise AnsibleFilterError('baremetal.gpu.driver_branch_status: %s' % exc)


def gpu_generation(device_id):
    try:
        return support.gpu_generation(device_id)
    except ValueError as exc:
        raise AnsibleFilterError('baremetal.gpu.gpu_generation: %s' % exc)


def kernel_module_flavour(gpus, requested, branch):
    try:
        return support.kernel_module_flavour(requested, branch, gpus)
    except ValueError as exc:
        raise AnsibleFilterError('baremetal.gpu.kernel_module_flavour: %s' % exc)


def preflight_findings(report, require_gpu=True, dkms_min_free_mb=2048):
    return preflight.findings(dict(report or {}), boolean(require_gpu, strict=False), dkms_min_free_mb)


class FilterModule(object):

    def filters(self):
        return {
            'driver_branch_status': driver_branch_status,
            'preflight_findings': preflight_findings,
            'gpu_generation': gpu_generation,
            'kernel_module_flavour': kernel_module_flavour,
        }
