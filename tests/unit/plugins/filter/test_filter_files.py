# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a reader looks for a filter: each documented filter (plugins/filter/<name>.yml) is registered by exactly one
filter file, and that file is named by the job of its filters (the table below); a filter moved or added elsewhere
fails here."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib
import os

FILTER_DIR = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', 'plugins', 'filter')
HOMES = {
    'cluster_addons': ('counters_fields', 'crd_api_versions', 'crds_served', 'dcgm_counters', 'dcgm_dashboard',
                       'device_list_strategy', 'device_plugin_sharing', 'device_plugin_sharing_labels', 'device_plugin_sharing_unlabels', 'external_nfd',
                       'gpu_class', 'paused_affinity', 'release_marked', 'release_ownership', 'runtime_class_decision'),
    'driver': ('apt_branch_family', 'apt_default_branch', 'apt_known_packages', 'apt_real_branches', 'apt_simulation',
               'dkms_autoinstall_problems', 'dkms_build_error', 'dkms_status', 'driver_desired_branch', 'driver_modules',
               'driver_plan', 'driver_upgrade_target',
               'fingerprint_changes', 'gpg_primary_fingerprints', 'headers_flavour_packages', 'initramfs_contains',
               'initramfs_stale', 'initramfs_verified', 'kernel_module_guard', 'modinfo', 'nvidia_module_params',
               'nvidia_params_mismatches', 'nvidia_reboot_decision', 'nvidia_reboot_record_after',
               'prebuilt_flavour_packages'),
    'fabric_manager': ('fabric_manager_decision', 'fabric_manager_pins', 'fabric_report'),
    'gpu_health': ('gpu_health_quarantine', 'gpu_health_remediation', 'gpu_health_reset_failures', 'xid_codes'),
    'hostvars': ('host_values',),
    'mig': ('mig_assert_reasons', 'mig_node_capacity', 'mig_node_layout', 'mig_pending_modes'),
    'mirror': ('host_mirror_list', 'image_mirror', 'image_mirror_list', 'image_mirror_list_text', 'image_mirror_values',
               'image_pull_secret_refs', 'image_registry_errors'),
    'maintenance': ('gpu_pods', 'maintenance_gate', 'maintenance_lease', 'maintenance_lease_object',
                    'maintenance_mapping_errors', 'maintenance_node', 'maintenance_node_name', 'maintenance_plan',
                    'maintenance_remediate_node', 'maintenance_uninstall_node', 'maintenance_upgrade_node',
                    'upgrade_host_status'),
    'runtime': ('containerd_dump_problems', 'containerd_file_version', 'containerd_reads_cdi',
                'containerd_runtime_binary', 'docker_cdi', 'files_by_marker', 'runtime_version',
                'service_restart_reason', 'systemd_not_enabled', 'systemd_timestamp'),
    'services': ('running_services',),
    'support': ('driver_branch_status', 'gpu_generation', 'kernel_module_flavour', 'preflight_findings'),
    'uninstall': ('apt_history_installed', 'containerd_config_restore', 'dkms_builds_to_remove',
                  'docker_daemon_restore', 'dpkg_not_purged', 'toolkit_packages_to_purge'),
    'verify': ('gpu_device_nodes', 'gpu_node_products', 'nvidia_smi_mismatches', 'promql_value_in',
               'verify_expected_capacity'),
}


def registered():
    """Filter file -> the filters its FilterModule registers."""
    out = {}
    for name in sorted(os.listdir(FILTER_DIR)):
        if name.endswith('.py'):
            module = importlib.import_module('ansible_collections.baremetal.gpu.plugins.filter.' + name[:-3])
            out[name[:-3]] = tuple(sorted(module.FilterModule().filters()))
    return out


def test_each_filter_file_holds_the_filters_of_its_job():
    assert registered() == HOMES


def test_each_documented_filter_is_registered_once():
    documented = sorted(name[:-4] for name in os.listdir(FILTER_DIR) if name.endswith('.yml'))
    names = sorted(f for filters in registered().values() for f in filters)
    assert names == documented
