# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the maintenance engine (plugins/module_utils/maintenance_*.py); documented in the .yml files beside."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.baremetal.gpu.plugins.plugin_utils.lazy import LazyModule

engine_nodes = LazyModule('maintenance_nodes')
engine_mapping = LazyModule('maintenance_mapping')
engine_reasons = LazyModule('maintenance_reasons')
engine_lease = LazyModule('maintenance_lease')
engine_plan = LazyModule('maintenance_plan')


def maintenance_node(facts, api_node=None, generated_config='', runtime_binary_present=True,
                     driver_plan=None, apt=None, generated_path='config.toml', run_tags=None, skip_tags=None,
                     label=None, pending_restart=None, accept_new=False, mig=None):
    if label is None:
        label = engine_nodes.HOST_ROLLOUT_LABEL
    facts = dict(facts or {})
    reboot = (engine_reasons.reboot_reasons(facts, driver_plan or None, apt or None)
              if engine_reasons.role_runs('nvidia_driver', run_tags, skip_tags) else [])
    restart = (engine_reasons.restart_reasons(generated_config, bool(runtime_binary_present), generated_path,
                                              pending_restart or None)
               if engine_reasons.role_runs('rke2_nvidia_runtime', run_tags, skip_tags) else [])
    mig = list(mig or []) if engine_reasons.role_runs('mig_manager', run_tags, skip_tags) else []
    return engine_reasons.node(facts, api_node or None, reboot, restart, label, bool(accept_new), mig)


def maintenance_upgrade_node(facts, api_node=None, status=None):
    return engine_reasons.upgrade_node(dict(facts or {}), api_node or None, dict(status or {}))


def maintenance_uninstall_node(facts, api_node=None, runtime_present=False, rke2_files=None, pending_restart=None):
    return engine_reasons.uninstall_node(dict(facts or {}), api_node or None, bool(runtime_present), list(rke2_files or []),
                                         dict(pending_restart) if pending_restart else None)


def maintenance_remediate_node(facts, api_node=None, remediation=None):
    return engine_reasons.remediate_node(dict(facts or {}), api_node or None, dict(remediation or {}))


def maintenance_plan(hosts, batch_size, max_unavailable, nodes, cluster_nodes=None, what='changed',
                     count_all_nodes=False):
    try:
        return engine_plan.plan(batch_size, max_unavailable, list(hosts), dict(nodes or {}),
                                list(cluster_nodes) if cluster_nodes is not None else None, what=what,
                                count_all_nodes=bool(count_all_nodes))
    except ValueError as exc:
        raise AnsibleFilterError(str(exc))


def maintenance_gate(batch, host_nodes, disruptive, cluster_nodes, limit, scope=None):
    return engine_plan.batch_gate(list(batch), dict(host_nodes or {}), dict(disruptive or {}),
                                  list(cluster_nodes or []), int(limit), None if scope is None else list(scope))


def maintenance_node_name(cluster_nodes, host, names, addresses=None):
    return engine_mapping.map_node(host, list(names or []), list(addresses or []), list(cluster_nodes or []))


def maintenance_mapping_errors(hosts, in_cluster, mapped, kubeconfig_found, kubeconfig_named=False,
                               allow_without_api=False):
    return engine_mapping.mapping_errors(list(hosts), dict(in_cluster or {}), dict(mapped or {}), bool(kubeconfig_found),
                                         bool(kubeconfig_named), boolean(allow_without_api, strict=False))


def maintenance_lease(current, identity, now):
    return engine_lease.lease_decision(current or None, identity, now)


def maintenance_lease_object(identity, now, duration, current=None, namespace=None):
    if namespace is None:
        namespace = engine_lease.LEASE_NAMESPACE
    return engine_lease.lease_object(identity, now, duration, namespace=namespace, current=current or None)


def upgrade_host_status(facts, record, target, hold=True):
    return engine_reasons.host_status(facts, record, target, hold)


def gpu_pods(pods, selector_labels=None):
    return engine_nodes.gpu_pods(pods, selector_labels)


class FilterModule(object):

    def filters(self):
        return {
            'maintenance_node': maintenance_node,
            'maintenance_upgrade_node': maintenance_upgrade_node,
            'maintenance_uninstall_node': maintenance_uninstall_node,
            'maintenance_remediate_node': maintenance_remediate_node,
            'maintenance_plan': maintenance_plan,
            'maintenance_gate': maintenance_gate,
            'maintenance_node_name': maintenance_node_name,
            'maintenance_mapping_errors': maintenance_mapping_errors,
            'maintenance_lease': maintenance_lease,
            'maintenance_lease_object': maintenance_lease_object,
            'upgrade_host_status': upgrade_host_status,
            'gpu_pods': gpu_pods,
        }
