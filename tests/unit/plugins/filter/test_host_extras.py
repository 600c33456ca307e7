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
        'fabric_report', 'gpu_device_nodes', 'headers_flavour_packages', 'kernel_module_guard', 'nvidia_module_params',
        'nvidia_params_mismatches', 'nvidia_smi_mismatches', 'prebuilt_flavour_packages']


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


def _smi_result(name):
    # What baremetal.gpu.nvidia_smi returns (the fact nvidia_smi) around a real capture's parsed facts.
    from ansible_collections.baremetal.gpu.plugins.module_utils import nvidia_smi as smi
    with open(os.path.join(FIXTURES, 'nvidia-smi-xml', name), 'rb') as handle:
        return dict(smi.parse_nvidia_smi_xml(handle.read()), status='ok', reason='', driver_communicating=True)


def test_nvidia_smi_mismatches_check_a_reading_as_the_module_does():
    """Read once: the driver role's one reading, checked by the verify role, the host-extras check and
    the upgrade check. The real H100 capture: driver 580.159.04, one GPU, persistence mode Enabled."""
    h100 = _smi_result('device__h100-80gb-hbm3__580.159.04.xml')
    assert host_extras.nvidia_smi_mismatches(h100, {'driver_branch': '580', 'gpu_count': 1,
                                                    'persistence_mode': 'Enabled', 'fabric_complete': False}) == []
    # This H100 has no NVSwitch fabric (N/A): asked for (the role asks only on an NVSwitch system), it is named.
    assert host_extras.nvidia_smi_mismatches(h100, {'fabric_complete': True}) == [
        "GPU 0 (00000000:00:06.0, NVIDIA H100 80GB HBM3): fabric state N/A, status N/A (expected Completed, Success:"
        " is nvidia-fabricmanager running at the driver's version?)"]
    # Types as the module's options take them: -e gives strings.
    assert host_extras.nvidia_smi_mismatches(h100, {'driver_branch': 580, 'gpu_count': '1',
                                                    'fabric_complete': 'false'}) == []
    assert host_extras.nvidia_smi_mismatches(h100, {'driver_branch': '595', 'gpu_count': '8'}) == [
        'driver_branch: expected 595, found 580', 'gpu_count: expected 8, found 1']
    # None and '' are "not checked" (verify_driver_branch: '', verify_gpu_count unset).
    assert host_extras.nvidia_smi_mismatches(h100, {'driver_branch': '', 'gpu_count': None}) == []
    # The real A100 SXM4 capture runs with persistence mode Disabled.
    a100 = _smi_result('telegraf__a100-sxm4-v12.xml')
    assert host_extras.nvidia_smi_mismatches(a100, {'persistence_mode': 'Enabled'})[0].endswith(
        'persistence_mode: expected Enabled, found Disabled')


def test_nvidia_smi_mismatches_leave_no_gpu_states_to_the_caller_and_refuse_unknown_keys():
    no_driver = {'status': 'no_driver_communication', 'gpus': [], 'gpu_count': 0, 'driver_branch': None}
    assert host_extras.nvidia_smi_mismatches(no_driver, {'driver_branch': '580', 'gpu_count': 8}) == []
    with pytest.raises(AnsibleFilterError, match='unknown expectation.*gpu_cnt'):
        host_extras.nvidia_smi_mismatches(no_driver, {'gpu_cnt': 8})
    with pytest.raises(AnsibleFilterError, match='must be a dict'):
        host_extras.nvidia_smi_mismatches('ok', {})
    with pytest.raises(AnsibleFilterError):
        host_extras.nvidia_smi_mismatches(_smi_result('device__h100-80gb-hbm3__580.159.04.xml'), {'gpu_count': 'eight'})
