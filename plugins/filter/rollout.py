# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for rolling GPU node maintenance (plugins/module_utils/rollout.py); documented in the .yml files beside."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.baremetal.gpu.plugins.module_utils import rollout


def rollout_plan(hosts, batch_size, max_unavailable, nodes, installed, target):
    try:
        return rollout.plan(batch_size, max_unavailable, list(hosts), dict(nodes or {}), dict(installed or {}), target)
    except ValueError as exc:
        raise AnsibleFilterError(str(exc))


def upgrade_host_status(facts, record, target, hold=True):
    return rollout.host_status(facts, record, target, hold)


def gpu_pods(pods, selector_labels=None):
    return rollout.gpu_pods(pods, selector_labels)


class FilterModule(object):

    def filters(self):
        return {'rollout_plan': rollout_plan, 'gpu_pods': gpu_pods, 'upgrade_host_status': upgrade_host_status}
