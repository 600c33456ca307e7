# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Generic filters over the play's hosts; documented in the .yml files beside."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections.abc import Mapping


def host_values(hosts, hostvars, path, default=None):
    """Host -> the value at ``path`` (dotted: ``__upgrade_map.name``) in that host's variables, or ``default`` where
    a step of the path is missing or None. For facts the play set on some hosts only, which ``extract`` cannot read
    without failing on the others."""
    out = {}
    for host in hosts or []:
        value = hostvars[host]
        for key in path.split('.'):
            if not isinstance(value, Mapping) or key not in value:
                value = None
                break
            value = value[key]
        out[host] = default if value is None else value
    return out


class FilterModule(object):

    def filters(self):
        return {
            'host_values': host_values,
        }
