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


def test_a_chart_roles_release_is_read_from_its_variables():
    """<role>_release: the release cluster_addons takes, from the role's own variables (templated in a play: the
    render and chart tests run the roles with their defaults, which are templates)."""
    variables = {'device_plugin_release_name': 'nvdp', 'device_plugin_namespace': 'gpu',
                 'device_plugin_chart_name': 'nvidia-device-plugin', 'device_plugin_chart_version': '0.20.0',
                 'device_plugin_chart_repo_url': 'https://nvidia.github.io/k8s-device-plugin',
                 'device_plugin_chart_path': '', 'device_plugin_extra_values': {'gfd': {'enabled': True}},
                 'device_plugin_adopt_release': False}
    assert run(variables, 'device_plugin_release') == [{
        'release_name': 'nvdp', 'namespace': 'gpu', 'chart_name': 'nvidia-device-plugin', 'chart_version': '0.20.0',
        'chart_repo_url': 'https://nvidia.github.io/k8s-device-plugin', 'chart_path': '',
        'extra_values': {'gfd': {'enabled': True}}, 'adopt': False}]
    del variables['device_plugin_chart_path']
    with pytest.raises(AnsibleLookupError, match='device_plugin_chart_path is not defined'):
        run(variables, 'device_plugin_release')


def test_every_chart_component_has_a_release_term_and_no_other_role():
    # With no variables, a chart role's term names the first variable it lacks; any other role has no term.
    for row in CLUSTER_COMPONENTS:
        expected = '%s_release_name is not defined' % row['role'] if row['chart'] else 'unknown term'
        with pytest.raises(AnsibleLookupError, match=expected):
            run({}, '%s_release' % row['role'])
