# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host-extras filters: thin wrappers over module_utils.fabric and module_utils.modparams."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.baremetal.gpu.plugins.filter import host_extras

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures')


def test_filters_are_registered():
    assert sorted(host_extras.FilterModule().filters()) == [
        'apt_known_packages', 'dkms_autoinstall_problems', 'fabric_manager_decision', 'fabric_manager_pins',
        'fabric_report', 'headers_flavour_packages', 'kernel_module_guard', 'nvidia_module_params',
        'nvidia_params_mismatches', 'prebuilt_flavour_packages']


def test_decision_refuses_non_dict_facts():
    with pytest.raises(AnsibleFilterError):
        host_extras.fabric_manager_decision('nope', 'auto', '580', 'Debian', 'distro')


def test_pins_take_the_installed_driver_from_the_real_policy_capture():
    with open(os.path.join(FIXTURES, 'apt', 'ubuntu2404-policy.txt')) as handle:
        policy = handle.read()
    decision = {'wanted': True, 'packages': ['nvidia-utils-580']}
    # The real capture has nvidia-utils-580 installed at the driver's version: "pinned" to itself, no change.
    got = host_extras.fabric_manager_pins(decision, policy, '', ['nvidia-utils-580'])
    assert got == {'install': ['nvidia-utils-580=580.178.04-0ubuntu0.24.04.1'], 'version': '580.178.04',
                   'changes': False, 'errors': []}


def test_module_params_filter():
    got = host_extras.nvidia_module_params({'NVreg_EnableMSI': 0})
    assert got == {'params': {'NVreg_EnableMSI': '0'}, 'line': 'options nvidia NVreg_EnableMSI=0', 'errors': []}
    assert host_extras.nvidia_module_params(None)['line'] == ''
    assert host_extras.nvidia_params_mismatches('EnableMSI: 1\n', {'NVreg_EnableMSI': '0'})[0].startswith(
        'NVreg_EnableMSI: asked 0')


def test_apt_known_packages_on_the_real_policy_capture():
    with open(os.path.join(FIXTURES, 'apt', 'ubuntu2404-policy.txt')) as handle:
        policy = handle.read()
    # The capture asks for linux-modules-nvidia-580-open-6.8.0-999-generic, which apt does not know.
    assert host_extras.apt_known_packages(policy, ['nvidia-utils-580', 'linux-modules-nvidia-580-open-6.8.0-999-generic']) \
        == ['nvidia-utils-580']


def test_guard_and_flavour_filters():
    assert host_extras.prebuilt_flavour_packages(['generic'], 580, False, True) == ['linux-modules-nvidia-580-open-generic']
    assert host_extras.headers_flavour_packages(None) == []
    got = host_extras.kernel_module_guard([], ['6.8.0-151-generic'], '6.8.0-151-generic', 'nvidia')
    assert got['next_boot_ok'] is False
    assert host_extras.dkms_autoinstall_problems('AUTOINSTALL=yes', True) == []
