# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kept: the example inventory sets only what differs from the defaults; the rest are commented
lines. A value equal to its default is a copy that goes stale when the default changes. One exception, on purpose:
cluster_kubeconfig (set, it tells the maintenance engine that there is a cluster: inventory/example/group_vars/all.yml)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import os

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
# playbooks/vars/cluster.yml writes this default; setting it is meaningful (see the module docstring).
SET_ON_PURPOSE = {'cluster_kubeconfig'}


def role_defaults():
    defaults = {}
    for path in glob.glob(os.path.join(ROOT, 'roles', '*', 'defaults', 'main.yml')):
        with open(path, encoding='utf-8') as handle:
            defaults.update(yaml.safe_load(handle) or {})
    return defaults


def inventory_values():
    values = {}
    for path in sorted(glob.glob(os.path.join(ROOT, 'inventory', 'example', 'group_vars', '*.yml'))):
        with open(path, encoding='utf-8') as handle:
            for name, value in (yaml.safe_load(handle) or {}).items():
                values['%s: %s' % (os.path.basename(path), name)] = (name, value)
    return values


def copies_of_defaults(values, defaults):
    """Where the inventory sets a role variable to its default (SET_ON_PURPOSE left out)."""
    return sorted(where for where, (name, value) in values.items()
                  if name not in SET_ON_PURPOSE and name in defaults and defaults[name] == value)


def test_the_example_inventory_sets_only_what_differs_from_the_defaults():
    defaults = role_defaults()
    assert 'nvidia_driver_flavor' in defaults and 'cluster_addons_render_dir' in defaults
    assert copies_of_defaults(inventory_values(), defaults) == [], 'set to their role default: comment them out'


def test_the_check_finds_a_copy_of_a_default():
    defaults = {'cluster_addons_render_dir': '', 'nvidia_driver_flavor': 'headless', 'cluster_kubeconfig': '/k'}
    values = {'all.yml: cluster_addons_render_dir': ('cluster_addons_render_dir', ''),
              'gpu_nodes.yml: nvidia_driver_flavor': ('nvidia_driver_flavor', 'server'),
              'all.yml: cluster_kubeconfig': ('cluster_kubeconfig', '/k')}
    assert copies_of_defaults(values, defaults) == ['all.yml: cluster_addons_render_dir']
