# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of GPU health: the Xid catalog, quarantine and remediation (plugins/module_utils/gpu_health.py);
documented in the .yml files beside."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.baremetal.gpu.plugins.plugin_utils.lazy import LazyModule

gpu_health = LazyModule('gpu_health')


def xid_codes(severity):
    try:
        return gpu_health.xids_by_code_alone(severity)
    except ValueError as exc:
        raise AnsibleFilterError('baremetal.gpu.xid_codes: %s' % exc)


def gpu_health_quarantine(cluster_nodes, results, max_quarantined, run_id='', now='', release_only=False):
    try:
        return gpu_health.quarantine_patches(cluster_nodes, results, int(max_quarantined), run_id or '', now or '',
                                             boolean(release_only, strict=True))
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError('baremetal.gpu.gpu_health_quarantine: %s' % exc)


def gpu_health_remediation(result):
    if not isinstance(result, dict):
        raise AnsibleFilterError('baremetal.gpu.gpu_health_remediation: expects a gpu_health result (a dict), got %s'
                                 % type(result).__name__)
    return gpu_health.remediation_plan(result)


def gpu_health_reset_failures(results, timeout):
    if not isinstance(results, list):
        raise AnsibleFilterError('baremetal.gpu.gpu_health_reset_failures: expects the results of a registered loop '
                                 '(a list), got %s' % type(results).__name__)
    return gpu_health.reset_failures(results, timeout)


class FilterModule(object):

    def filters(self):
        return {
            'xid_codes': xid_codes,
            'gpu_health_quarantine': gpu_health_quarantine,
            'gpu_health_remediation': gpu_health_remediation,
            'gpu_health_reset_failures': gpu_health_reset_failures,
        }
