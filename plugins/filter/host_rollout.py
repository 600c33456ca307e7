# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for day 1 in batches (plugins/module_utils/host_rollout.py); documented in the .yml files beside."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.baremetal.gpu.plugins.module_utils import host_rollout


def host_rollout_node(facts, api_node=None, generated_config='', runtime_binary_present=True,
                      driver_plan=None, apt=None, generated_path='config.toml', run_tags=None, skip_tags=None):
    facts = dict(facts or {})
    reboot = (host_rollout.reboot_reasons(facts, driver_plan or None, apt or None)
              if host_rollout.role_runs('nvidia_driver', run_tags, skip_tags) else [])
    restart = (host_rollout.restart_reasons(generated_config, bool(runtime_binary_present), generated_path)
               if host_rollout.role_runs('rke2_nvidia_runtime', run_tags, skip_tags) else [])
    return host_rollout.node(facts, api_node or None, reboot, restart)


def host_rollout_plan(hosts, batch_size, max_unavailable, nodes, api_nodes=None):
    try:
        return host_rollout.plan(batch_size, max_unavailable, list(hosts), dict(nodes or {}), dict(api_nodes or {}))
    except ValueError as exc:
        raise AnsibleFilterError(str(exc))


class FilterModule(object):

    def filters(self):
        return {'host_rollout_node': host_rollout_node, 'host_rollout_plan': host_rollout_plan}
