# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the MIG layouts (plugins/module_utils/mig.py): a node's layout, what nvidia-mig-parted's assert said,
what the device plugin advertises once a layout is applied, the mode changes that wait for a boot; documented in the
.yml files beside."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.baremetal.gpu.plugins.plugin_utils.lazy import LazyModule

mig = LazyModule('mig')


def _device_ids(gpus):
    return [g.get('device_id') if isinstance(g, dict) else g for g in gpus or []]


def mig_node_layout(profiles, default_profile, host_profile, layouts, gpus, ours=False):
    return mig.node_plan(profiles, default_profile, host_profile, layouts, _device_ids(gpus), ours)


def mig_node_capacity(layouts, name, strategy, gpus):
    return mig.capacity(layouts, name, strategy, _device_ids(gpus))


def mig_assert_reasons(result, layout, parted='nvidia-mig-parted'):
    try:
        return mig.assert_reasons(result, layout, parted)
    except ValueError as exc:
        raise AnsibleFilterError('baremetal.gpu.mig_assert_reasons: %s' % exc)


def mig_pending_modes(gpus):
    return mig.pending_modes(gpus)


class FilterModule(object):

    def filters(self):
        return {
            'mig_assert_reasons': mig_assert_reasons,
            'mig_node_capacity': mig_node_capacity,
            'mig_node_layout': mig_node_layout,
            'mig_pending_modes': mig_pending_modes,
        }
