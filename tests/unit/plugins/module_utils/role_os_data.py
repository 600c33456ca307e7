# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nvidia_driver role's per-OS data, __nvidia_driver_os, as the role builds it: host_common's os_vars ladder
(vars/<os_family>-family.yml, <distribution>.yml, <distribution>-<major>.yml; each optional), merged as the
role's vars/main.yml merges it (ansible.builtin.combine, recursive: dicts merge, lists and scalars replace). The module
utils' unit tests may not import ansible-core's controller code, so the merge is written here;
tests/unit/plugins/filter/test_role_os_data.py checks it against combine itself."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import yaml

VARS = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', 'roles', 'nvidia_driver', 'vars')
# The tests' names of a node: (os_family, distribution, major).
NODES = {'Debian-12': ('Debian', 'Debian', '12'), 'Debian-13': ('Debian', 'Debian', '13'),
         'Ubuntu': ('Debian', 'Ubuntu', '24'), 'RedHat': ('RedHat', 'Rocky', '9')}


def _level(file_name, variable):
    path = os.path.join(VARS, file_name + '.yml')
    if not os.path.exists(path):
        return {}
    with open(path, encoding='utf-8') as handle:
        return yaml.safe_load(handle)[variable]


def merge(*layers):
    """Recursive merge, later levels win: what combine(recursive=True) does with list_merge 'replace'."""
    out = {}
    for level in layers:
        for key, value in level.items():
            if isinstance(value, dict) and isinstance(out.get(key), dict):
                out[key] = merge(out[key], value)
            else:
                out[key] = value
    return out


def levels(name):
    """The three levels of the ladder for a node, as host_common's os_vars loads them."""
    family, distribution, major = NODES[name]
    return (_level(family + '-family', '__nvidia_driver_os_family'),
            _level(distribution, '__nvidia_driver_os_distribution'),
            _level('%s-%s' % (distribution, major), '__nvidia_driver_os_release'))


def os_data(name):
    return merge(*levels(name))
