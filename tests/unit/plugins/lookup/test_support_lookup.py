# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""lookup baremetal.gpu.support: term cluster_components (the switches as the inventory or -e gives them) and
gpu_holder_services (the one list the upgrade and the GPU reset stop)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from ansible.errors import AnsibleLookupError
from ansible.template import Templar
from ansible.parsing.dataloader import DataLoader

from ansible_collections.baremetal.gpu.plugins.lookup.support import LookupModule
from ansible_collections.baremetal.gpu.plugins.module_utils.support import CLUSTER_COMPONENTS


def run(variables, term='cluster_components'):
    lookup = LookupModule(loader=DataLoader(), templar=Templar(loader=DataLoader()))
    # The name the plugin loader would give it (ansible-core 2.17's set_options reads it).
    lookup._load_name = 'baremetal.gpu.support'
    return lookup.run([term], variables=variables)


def test_every_component_is_on_unless_switched_off():
    rows = run({})
    assert [row['role'] for row in rows] == [row['role'] for row in CLUSTER_COMPONENTS]
    assert all(row['enabled'] for row in rows)


@pytest.mark.parametrize('value', [False, 'false', 'no', '0', 'False'])
def test_a_switch_given_as_a_string_is_read_as_a_boolean(value):
    rows = run({'cluster_addons_dcgm_exporter_enabled': value})
    assert [row['role'] for row in rows if not row['enabled']] == ['dcgm_exporter']


def test_a_switch_that_is_no_boolean_is_refused_naming_it():
    with pytest.raises(AnsibleLookupError, match='cluster_addons_device_plugin_enabled must be a boolean'):
        run({'cluster_addons_device_plugin_enabled': 'maybe'})


def test_the_gpu_holder_services_are_one_list():
    assert run({}, 'gpu_holder_services') == ['nvidia-dcgm', 'dcgm', 'nvidia-persistenced', 'nvidia-fabricmanager']
