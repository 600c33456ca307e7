# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters over a node's services (ansible.builtin.service_facts); documented in the .yml files beside."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections.abc import Mapping


def _unit(name):
    name = str(name)
    return name[:-len('.service')] if name.endswith('.service') else name


def running_services(services, wanted):
    """The names of ``wanted`` (with or without ``.service``) that run according to ``services`` (service_facts'
    ``ansible_facts['services']``), in the order of ``wanted``, without ``.service``."""
    running = set(_unit(name) for name, state in (services or {}).items()
                  if isinstance(state, Mapping) and state.get('state') == 'running')
    out = []
    for name in wanted or []:
        unit = _unit(name)
        if unit in running and unit not in out:
            out.append(unit)
    return out


class FilterModule(object):

    def filters(self):
        return {
            'running_services': running_services,
        }
