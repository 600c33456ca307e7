# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the verification: what nvidia-smi, the device nodes, the cluster and Prometheus show against what was
expected (plugins/module_utils/{nvidia_smi,cluster_addons}.py); documented in the .yml files beside."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.baremetal.gpu.plugins.plugin_utils.lazy import LazyModule

cluster_addons = LazyModule('cluster_addons')
smi = LazyModule('nvidia_smi')


def gpu_node_products(hostvars, hosts, fact='nvidia_smi'):
    return cluster_addons.gpu_node_products(hostvars, hosts, fact)


def verify_expected_capacity(hostvars, hosts, mig_strategy, replicas, resource='nvidia.com/gpu', sharing=None):
    try:
        return cluster_addons.expected_capacity(hostvars, hosts, mig_strategy, replicas, resource,
                                                cluster_addons.sharing_capacity(sharing, hosts))
    except (KeyError, TypeError, ValueError) as exc:
        raise AnsibleFilterError('baremetal.gpu.verify_expected_capacity: %s' % exc)


def promql_value_in(selector, values):
    try:
        return cluster_addons.promql_value_in(selector, values)
    except ValueError as exc:
        raise AnsibleFilterError('baremetal.gpu.promql_value_in: %s' % exc)


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


class FilterModule(object):

    def filters(self):
        return {
            'gpu_node_products': gpu_node_products,
            'verify_expected_capacity': verify_expected_capacity,
            'promql_value_in': promql_value_in,
            'nvidia_smi_mismatches': nvidia_smi_mismatches,
            'gpu_device_nodes': gpu_device_nodes,
        }
