# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the cluster components: charts, values, CRDs, releases, the RuntimeClass, the device plugin's sharing
(plugins/module_utils/cluster_addons.py); documented in the .yml files beside."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.baremetal.gpu.plugins.plugin_utils.lazy import LazyModule

cluster_addons = LazyModule('cluster_addons')


def external_nfd(daemonsets, namespace, release):
    return cluster_addons.external_nfd(daemonsets, namespace, release)


def paused_affinity(affinity, pause):
    try:
        return cluster_addons.paused_affinity(affinity, pause)
    except (KeyError, TypeError, AttributeError) as exc:
        raise AnsibleFilterError('baremetal.gpu.paused_affinity: %s' % exc)


def gpu_class(products, geforce_regex):
    try:
        return cluster_addons.gpu_class(products, geforce_regex)
    except Exception as exc:  # re.error
        raise AnsibleFilterError('baremetal.gpu.gpu_class: %s' % exc)


def counters_fields(csv_text):
    return cluster_addons.counters_fields(csv_text)


def dcgm_counters(gpu_class, base_text, ecc_metrics=None, health_metrics=None, custom_metrics=None,
                  ecc_enabled=True, health_enabled=True):
    try:
        return cluster_addons.dcgm_counters(gpu_class or '', base_text, ecc_metrics, health_metrics, custom_metrics,
                                            boolean(ecc_enabled, strict=True), boolean(health_enabled, strict=True))
    except (AttributeError, TypeError, ValueError) as exc:
        raise AnsibleFilterError('baremetal.gpu.dcgm_counters: %s' % exc)


def dcgm_dashboard(dashboard, exported=None, profiling=True):
    return cluster_addons.dcgm_dashboard(dashboard, exported, profiling)


def device_list_strategy(requested, hostvars=None, hosts=None):
    try:
        return cluster_addons.device_list_strategy(requested, hostvars, hosts)
    except ValueError as exc:
        raise AnsibleFilterError('baremetal.gpu.device_list_strategy: %s' % exc)


def device_plugin_sharing(profiles, default_profile, mig_strategy, gfd_enabled, hostvars=None, hosts=None,
                          time_slicing_enabled=False, mig_layouts=None):
    return cluster_addons.sharing_plan(profiles, default_profile, mig_strategy, gfd_enabled, hostvars, hosts,
                                       time_slicing_enabled, mig_layouts)


def device_plugin_sharing_labels(nodes, labels, hostvars=None, hosts=None):
    return cluster_addons.sharing_label_changes(nodes, labels or {}, hostvars, hosts)


def device_plugin_sharing_unlabels(nodes):
    return cluster_addons.sharing_label_removals(nodes)


def crds_served(crd_names, api_versions):
    return cluster_addons.crds_served(crd_names, api_versions)


def crd_api_versions(crds):
    return cluster_addons.crd_api_versions(crds)


def runtime_class_decision(existing, name, handler):
    return cluster_addons.runtime_class_decision(existing, name, handler)


def release_marked(values):
    try:
        return cluster_addons.release_marked(values)
    except ValueError as exc:
        raise AnsibleFilterError('baremetal.gpu.release_marked: %s' % exc)


def release_ownership(status, release, namespace, adopt=False, adopt_var='', purpose='install'):
    try:
        return cluster_addons.release_ownership(status, release, namespace, adopt, adopt_var, purpose)
    except ValueError as exc:
        raise AnsibleFilterError('baremetal.gpu.release_ownership: %s' % exc)


class FilterModule(object):

    def filters(self):
        return {
            'counters_fields': counters_fields,
            'dcgm_counters': dcgm_counters,
            'crd_api_versions': crd_api_versions,
            'crds_served': crds_served,
            'dcgm_dashboard': dcgm_dashboard,
            'device_list_strategy': device_list_strategy,
            'device_plugin_sharing': device_plugin_sharing,
            'device_plugin_sharing_labels': device_plugin_sharing_labels,
            'device_plugin_sharing_unlabels': device_plugin_sharing_unlabels,
            'gpu_class': gpu_class,
            'external_nfd': external_nfd,
            'paused_affinity': paused_affinity,
            'release_marked': release_marked,
            'release_ownership': release_ownership,
            'runtime_class_decision': runtime_class_decision,
        }
