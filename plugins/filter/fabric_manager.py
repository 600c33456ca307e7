# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of NVIDIA Fabric Manager on NVSwitch systems (plugins/module_utils/fabric.py); documented in the .yml
files beside."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.baremetal.gpu.plugins.plugin_utils.lazy import LazyModule

apt = LazyModule('apt')
fabric = LazyModule('fabric')


def fabric_manager_decision(facts, value, branch, install_family, source, distribution=None, flavor=None):
    if not isinstance(facts, dict):
        raise AnsibleFilterError('baremetal.gpu.fabric_manager_decision: the node facts must be a dict, got %s'
                                 % type(facts).__name__)
    return fabric.decide(value, facts, str(branch), install_family, source, distribution, flavor)


def fabric_manager_pins(decision, policy_text, simulated_version, candidates=None):
    policy = apt.parse_policy(policy_text or '')
    return fabric.pins(decision or {}, policy, fabric.driver_version(simulated_version, policy, candidates or []))


def fabric_report(smi, system_kind):
    return fabric.report(system_kind or '', smi)


class FilterModule(object):

    def filters(self):
        return {
            'fabric_manager_decision': fabric_manager_decision,
            'fabric_manager_pins': fabric_manager_pins,
            'fabric_report': fabric_report,
        }
