# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""nvidia_driver's per-OS ladder (host_common os_vars): the merge the module_utils tests use is ansible-core's
combine(recursive=True), the role's own merge (roles/nvidia_driver/vars/main.yml); and the ladder host_common loads
is the one the tests read."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest
import yaml
from ansible.plugins.filter.core import combine

from ansible_collections.baremetal.gpu.tests.unit.plugins.module_utils import role_os_data

ROLES = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', 'roles')


@pytest.mark.parametrize('name', sorted(role_os_data.NODES))
def test_the_tests_merge_is_combine(name):
    layers = role_os_data.levels(name)
    assert any(layers)
    assert role_os_data.os_data(name) == combine(*layers, recursive=True)


def test_the_role_merges_the_three_levels_with_combine():
    with open(os.path.join(ROLES, 'nvidia_driver', 'vars', 'main.yml'), encoding='utf-8') as handle:
        merged = yaml.safe_load(handle)['__nvidia_driver_os']
    for level in ('__nvidia_driver_os_family', '__nvidia_driver_os_distribution', '__nvidia_driver_os_release'):
        assert level in merged
    assert 'combine(' in merged and 'recursive=True' in merged


def test_the_ladder_host_common_loads():
    with open(os.path.join(ROLES, 'host_common', 'vars', 'main.yml'), encoding='utf-8') as handle:
        ladder = yaml.safe_load(handle)['__host_common_os_ladder']
    assert ladder == ["{{ ansible_facts['os_family'] }}-family.yml",
                      "{{ ansible_facts['distribution'] }}.yml",
                      "{{ ansible_facts['distribution'] }}-{{ ansible_facts['distribution_major_version'] }}.yml"]


def test_a_debian_release_holds_only_what_differs():
    # Adding a Debian release is one small file: the release level restates nothing of the distribution's.
    family, debian, release = role_os_data.levels('Debian-13')
    assert sorted(release) == ['apt_suite_suffixes', 'cuda_repo', 'default_branch', 'eol_advice', 'name']
    assert sorted(release['cuda_repo']) == ['distro', 'fingerprint', 'key_id']
    assert not set(family) & set(debian)
