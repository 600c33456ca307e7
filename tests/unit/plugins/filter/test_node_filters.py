# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node-side filters over module_utils.fabric, modparams, kernel_guard and nvidia_smi (in the filter files
driver, fabric_manager and verify)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.baremetal.gpu.plugins.filter import driver, fabric_manager, verify

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures')


def test_decision_refuses_non_dict_facts():
    with pytest.raises(AnsibleFilterError):
        fabric_manager.fabric_manager_decision('nope', 'auto', '580', 'Debian', 'distro')


def test_pins_take_the_installed_driver_from_the_real_policy_capture():
    with open(os.path.join(FIXTURES, 'apt', 'ubuntu2404-policy.txt')) as handle:
        policy = handle.read()
    decision = {'wanted': True, 'packages': ['nvidia-utils-580']}
    # The real capture has nvidia-utils-580 installed at the driver's version: "pinned" to itself, no change.
    got = fabric_manager.fabric_manager_pins(decision, policy, '', ['nvidia-utils-580'])
    assert got == {'install': ['nvidia-utils-580=580.178.04-0ubuntu0.24.04.1'], 'version': '580.178.04',
                   'changes': False, 'errors': []}


def test_module_params_filter():
    got = driver.nvidia_module_params({'NVreg_EnableMSI': 0})
    assert got == {'params': {'NVreg_EnableMSI': '0'}, 'line': 'options nvidia NVreg_EnableMSI=0', 'errors': []}
    assert driver.nvidia_module_params(None)['line'] == ''
    assert driver.nvidia_params_mismatches('EnableMSI: 1\n', {'NVreg_EnableMSI': '0'})[0].startswith(
        'NVreg_EnableMSI: asked 0')


def test_apt_known_packages_on_the_real_policy_capture():
    with open(os.path.join(FIXTURES, 'apt', 'ubuntu2404-policy.txt')) as handle:
        policy = handle.read()
    # The capture asks for linux-modules-nvidia-580-open-6.8.0-999-generic, which apt does not know.
    assert driver.apt_known_packages(policy, ['nvidia-utils-580', 'linux-modules-nvidia-580-open-6.8.0-999-generic']) \
        == ['nvidia-utils-580']


def test_guard_and_flavour_filters():
    assert driver.prebuilt_flavour_packages(['generic'], 580, False, True) == ['linux-modules-nvidia-580-open-generic']
    assert driver.headers_flavour_packages(None) == []
    got = driver.kernel_module_guard([], ['6.8.0-151-generic'], '6.8.0-151-generic', 'nvidia')
    assert got['next_boot_ok'] is False
    assert driver.dkms_autoinstall_problems('AUTOINSTALL=yes', True) == []


def _smi_result(name):
    # What baremetal.gpu.nvidia_smi returns (the fact nvidia_smi) around a real capture's parsed facts.
    from ansible_collections.baremetal.gpu.plugins.module_utils import nvidia_smi as smi
    with open(os.path.join(FIXTURES, 'nvidia-smi-xml', name), 'rb') as handle:
        return dict(smi.parse_nvidia_smi_xml(handle.read()), status='ok', reason='', driver_communicating=True)


def test_nvidia_smi_mismatches_check_a_reading_as_the_module_does():
    """Read once: the driver role's one reading, checked by the verify role, the host-extras check and
    the upgrade check. The real H100 capture: driver 580.159.04, one GPU, persistence mode Enabled."""
    h100 = _smi_result('device__h100-80gb-hbm3__580.159.04.xml')
    assert verify.nvidia_smi_mismatches(h100, {'driver_branch': '580', 'gpu_count': 1,
                                               'persistence_mode': 'Enabled', 'fabric_complete': False}) == []
    # This H100 has no NVSwitch fabric (N/A): asked for (the role asks only on an NVSwitch system), it is named.
    assert verify.nvidia_smi_mismatches(h100, {'fabric_complete': True}) == [
        "GPU 0 (00000000:00:06.0, NVIDIA H100 80GB HBM3): fabric state N/A, status N/A (expected Completed, Success:"
        " is nvidia-fabricmanager running at the driver's version?)"]
    # Types as the module's options take them: -e gives strings.
    assert verify.nvidia_smi_mismatches(h100, {'driver_branch': 580, 'gpu_count': '1',
                                               'fabric_complete': 'false'}) == []
    assert verify.nvidia_smi_mismatches(h100, {'driver_branch': '595', 'gpu_count': '8'}) == [
        'driver_branch: expected 595, found 580', 'gpu_count: expected 8, found 1']
    # None and '' are "not checked" (verify_driver_branch: '', verify_gpu_count unset).
    assert verify.nvidia_smi_mismatches(h100, {'driver_branch': '', 'gpu_count': None}) == []
    # The real A100 SXM4 capture runs with persistence mode Disabled.
    a100 = _smi_result('telegraf__a100-sxm4-v12.xml')
    assert verify.nvidia_smi_mismatches(a100, {'persistence_mode': 'Enabled'})[0].endswith(
        'persistence_mode: expected Enabled, found Disabled')


def test_nvidia_smi_mismatches_leave_no_gpu_states_to_the_caller_and_refuse_unknown_keys():
    no_driver = {'status': 'no_driver_communication', 'gpus': [], 'gpu_count': 0, 'driver_branch': None}
    assert verify.nvidia_smi_mismatches(no_driver, {'driver_branch': '580', 'gpu_count': 8}) == []
    with pytest.raises(AnsibleFilterError, match='unknown expectation.*gpu_cnt'):
        verify.nvidia_smi_mismatches(no_driver, {'gpu_cnt': 8})
    with pytest.raises(AnsibleFilterError, match='must be a dict'):
        verify.nvidia_smi_mismatches('ok', {})
    with pytest.raises(AnsibleFilterError):
        verify.nvidia_smi_mismatches(_smi_result('device__h100-80gb-hbm3__580.159.04.xml'), {'gpu_count': 'eight'})
