# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fabric Manager decision and pins; NVIDIA module parameters.

Node facts come from the real lspci captures (tests/fixtures/lspci) through node_facts.pci. No real
``apt-cache policy`` of the Fabric Manager packages was captured: the policy texts below follow the real
format of tests/fixtures/apt/ubuntu2404-policy.txt with the version FIELD.md C.1 records for
nvidia-fabricmanager-580 in noble-updates on 2026-11-24 (580.178.04-0ubuntu0.24.04.1), and say so. PROC_PARAMS
below is written in the format NVIDIA's
nv-procfs.c prints (nv_procfs_read_params: "%s: %u" for numbers, strings in double quotes; NVIDIA
open-gpu-kernel-modules kernel-open/nvidia/nv-procfs.c at 1739a20efc4acb55fd1dc53dcc66057b70c2613c) with
parameter names from that file's table; a real /proc/driver/nvidia/params of an H100 (tests/fixtures/device)
is read by test_real_proc_params_of_an_h100.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.baremetal.gpu.plugins.module_utils import apt, fabric, modparams, node_facts

LSPCI = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'lspci')


def facts_of(capture, tmp_path):
    with open(os.path.join(LSPCI, capture)) as handle:
        return node_facts.pci(str(tmp_path), handle.read())


HGX = 'hgx-h100-rhel94-lspci-Dnn.txt'
MCP61 = 'mcp61-geforce-g100-lspci-nn.txt'


@pytest.mark.parametrize('value, expected', [
    ('auto', 'auto'), (None, 'auto'), ('', 'auto'), (True, 'true'), (False, 'false'), ('yes', 'true'),
    ('False', 'false'), ('no', 'false'),
])
def test_setting(value, expected):
    assert fabric.setting(value) == expected


def test_setting_refuses_garbage():
    with pytest.raises(ValueError) as err:
        fabric.setting('sometimes')
    assert 'nvidia_driver_fabric_manager must be auto, true or false' in str(err.value)


def test_auto_on_hgx_installs_both_packages(tmp_path):
    got = fabric.decide('auto', facts_of(HGX, tmp_path), '580', 'Debian', 'distro')
    assert got['wanted'] is True and got['errors'] == [] and got['warnings'] == []
    assert got['packages'] == ['nvidia-fabricmanager-580', 'libnvidia-nscq-580']
    assert '4 NVSwitch function(s)' in got['reason']


def test_auto_on_an_nforce_board_installs_nothing(tmp_path):
    # The MCP61 Ethernet controller has class 0x0680 like an NVSwitch: auto must not take it for one.
    got = fabric.decide('auto', facts_of(MCP61, tmp_path), '580', 'Debian', 'distro')
    assert got['wanted'] is False and got['packages'] == [] and 'no NVSwitch' in got['reason']


def test_true_without_nvswitch_warns_and_installs(tmp_path):
    got = fabric.decide(True, facts_of(MCP61, tmp_path), '580', 'Debian', 'distro')
    assert got['wanted'] is True and got['errors'] == []
    assert len(got['warnings']) == 1 and 'nvidia_driver_fabric_manager is true, but no NVSwitch' in got['warnings'][0]


@pytest.mark.parametrize('flavor', ['headless', 'desktop'])
def test_ubuntu_packages_need_the_server_driver(tmp_path, flavor):
    # noble's multiverse: nvidia-fabricmanager-580 Depends: nvidia-kernel-common-580-server-580.178.04 (and so do
    # 595 and 615, and libnvidia-nscq-<B>); apt answered "held broken packages" beside nvidia-headless-no-dkms-580.
    got = fabric.decide('auto', facts_of(HGX, tmp_path), '580', 'Debian', 'distro', 'Ubuntu', flavor)
    assert got['wanted'] is False and got['packages'] == []
    assert 'nvidia-kernel-common-580-server' in got['errors'][0] and 'nvidia_driver_flavor is %s' % flavor in got['errors'][0]
    assert fabric.decide('auto', facts_of(HGX, tmp_path), '580', 'Debian', 'distro', 'Ubuntu', 'server')['wanted']
    # Debian's packages and NVIDIA's CUDA repository have no server variant.
    assert fabric.decide('auto', facts_of(HGX, tmp_path), '580', 'Debian', 'distro', 'Debian', 'desktop')['wanted']
    assert fabric.decide('auto', facts_of(HGX, tmp_path), '580', 'Debian', 'cuda_repo', 'Ubuntu', 'desktop')['wanted']


def test_false_on_hgx_warns(tmp_path):
    got = fabric.decide('false', facts_of(HGX, tmp_path), '580', 'Debian', 'distro')
    assert got['wanted'] is False and 'error 802' in got['warnings'][0]


@pytest.mark.parametrize('value, facts, family, source, branch, words', [
    ('true', {'system_kind': 'pcie', 'gpus': [{'generation': 'blackwell-or-newer', 'name': 'NVIDIA B200'}]},
     'Debian', 'distro', '580', ['NVLink subnet manager', 'IMEX', 'NVIDIA B200']),
    ('auto', {'system_kind': 'hgx_nvswitch', 'nvswitches': [{'model': 'x'}], 'gpus': []}, 'RedHat', 'cuda_repo', '580',
     ['Debian and Ubuntu only']),
    ('auto', {'system_kind': 'hgx_nvswitch', 'nvswitches': [{'model': 'x'}], 'gpus': []}, 'Debian', 'cuda_repo', '595',
     ['without a branch from R590']),
    ('maybe', {}, 'Debian', 'distro', '580', ['must be auto, true or false']),
])
def test_refusals_name_the_variable(value, facts, family, source, branch, words):
    got = fabric.decide(value, facts, branch, family, source)
    assert got['wanted'] is False and len(got['errors']) == 1
    assert got['errors'][0].startswith('nvidia_driver_fabric_manager') and 'Nothing was changed' in got['errors'][0]
    for word in words:
        assert word in got['errors'][0]


# Format of tests/fixtures/apt/ubuntu2404-policy.txt; versions: see the module docstring.
POLICY = """nvidia-fabricmanager-580:
  Installed: (none)
  Candidate: 580.178.04-0ubuntu0.24.04.1
  Version table:
     580.178.04-0ubuntu0.24.04.1 500
        500 http://archive.ubuntu.com/ubuntu noble-updates/multiverse amd64 Packages
     580.95.05-0ubuntu0.24.04.2 500
        500 http://archive.ubuntu.com/ubuntu noble-security/multiverse amd64 Packages
libnvidia-nscq-580:
  Installed: (none)
  Candidate: 580.178.04-0ubuntu0.24.04.1
  Version table:
     580.178.04-0ubuntu0.24.04.1 500
        500 http://archive.ubuntu.com/ubuntu noble-updates/multiverse amd64 Packages
"""


def test_pins_at_exactly_the_driver_version(tmp_path):
    decision = fabric.decide('auto', facts_of(HGX, tmp_path), '580', 'Debian', 'distro')
    got = fabric.pins(decision, apt.parse_policy(POLICY), '580.178.04-0ubuntu0.24.04.1')
    assert got['errors'] == [] and got['changes'] is True and got['version'] == '580.178.04'
    assert got['install'] == ['nvidia-fabricmanager-580=580.178.04-0ubuntu0.24.04.1',
                              'libnvidia-nscq-580=580.178.04-0ubuntu0.24.04.1']
    # An older driver: the older Fabric Manager of the same upstream version.
    got = fabric.pins(dict(decision, packages=['nvidia-fabricmanager-580']), apt.parse_policy(POLICY), '580.95.05-0ubuntu0.24.04.2')
    assert got['install'] == ['nvidia-fabricmanager-580=580.95.05-0ubuntu0.24.04.2']


def test_pins_refuse_a_version_that_cannot_match(tmp_path):
    decision = fabric.decide('auto', facts_of(HGX, tmp_path), '580', 'Debian', 'distro')
    got = fabric.pins(decision, apt.parse_policy(POLICY), '580.159.04-0ubuntu1')
    assert got['install'] == [] and len(got['errors']) == 2
    assert got['errors'][0] == ("nvidia_driver_fabric_manager: nvidia-fabricmanager-580 has no version 580.159.04, the "
                                "driver's (apt offers 580.178.04-0ubuntu0.24.04.1, 580.95.05-0ubuntu0.24.04.2); Fabric "
                                "Manager must run at exactly the driver's version. Pin nvidia_driver_version to a "
                                "version both have. Nothing was changed.")
    got = fabric.pins(decision, {}, '580.178.04-0ubuntu0.24.04.1')
    assert 'not known to apt' in got['errors'][0]


def test_pins_when_installed_change_nothing(tmp_path):
    decision = fabric.decide('auto', facts_of(HGX, tmp_path), '580', 'Debian', 'distro')
    policy = apt.parse_policy(POLICY.replace('Installed: (none)', 'Installed: 580.178.04-0ubuntu0.24.04.1'))
    assert fabric.pins(decision, policy, '580.178.04-0ubuntu0.24.04.1')['changes'] is False
    assert fabric.pins({'wanted': False}, policy, '')['install'] == []


# ---- module parameters --------------------------------------------------------------------------

def test_params_line_sorted_with_bools_as_numbers():
    params, errors = modparams.check({'NVreg_RegistryDwords': 'RMUseSwI2c=0x01', 'NVreg_EnableStreamMemOPs': 1,
                                      'NVreg_PreserveVideoMemoryAllocations': True})
    assert errors == []
    assert modparams.options_line(params) == ('options nvidia NVreg_EnableStreamMemOPs=1 '
                                              'NVreg_PreserveVideoMemoryAllocations=1 NVreg_RegistryDwords=RMUseSwI2c=0x01')
    assert modparams.options_line({}) == ''


@pytest.mark.parametrize('params, words', [
    ({'EnableStreamMemOPs': 1}, ["'EnableStreamMemOPs' is not an NVIDIA module parameter name"]),
    ({'nvreg_x': 1}, ['is not an NVIDIA module parameter name']),
    ({'NVreg_TemporaryFilePath': '/var/tmp x'}, ['NVreg_TemporaryFilePath must be one word']),
    ({'NVreg_RmMsg': 'a\nb'}, ['NVreg_RmMsg must be one word']),
    ({'NVreg_RmMsg': ''}, ['NVreg_RmMsg must be one word']),
    ({'NVreg_RmMsg': 'x"y'}, ['NVreg_RmMsg must be one word']),
    ({'NVreg_RmMsg': None}, ['NVreg_RmMsg must be a number or a word']),
    ('NVreg_X=1', ['must be a dictionary']),
])
def test_params_refusals_name_the_variable(params, words):
    _params, errors = modparams.check(params)
    assert errors and all(e.startswith('nvidia_driver_module_params') for e in errors)
    for word in words:
        assert any(word in e for e in errors), errors


PROC_PARAMS = '''ResmanDebugLevel: 4294967295
RmLogonRC: 1
ModifyDeviceFiles: 1
EnableMSI: 1
EnableStreamMemOPs: 0
NvLinkDisable: 0
RegistryDwords: ""
TemporaryFilePath: "/var/tmp"
'''


def test_proc_params_parsed():
    got = modparams.parse_proc_params(PROC_PARAMS)
    assert got['EnableStreamMemOPs'] == '0' and got['TemporaryFilePath'] == '/var/tmp' and got['RegistryDwords'] == ''


def test_params_mismatches():
    assert modparams.mismatches({'NVreg_EnableMSI': '1', 'NVreg_TemporaryFilePath': '/var/tmp'}, PROC_PARAMS) == []
    assert modparams.mismatches({'NVreg_EnableMSI': '0x1'}, PROC_PARAMS) == []
    assert modparams.mismatches({'NVreg_EnableStreamMemOPs': '1', 'NVreg_NoSuchThing': '1'}, PROC_PARAMS) == [
        'NVreg_EnableStreamMemOPs: asked 1, the loaded module runs with 0 (applied at the next module load: reboot)',
        'NVreg_NoSuchThing: the loaded nvidia module has no parameter NoSuchThing (/proc/driver/nvidia/params)']


# The real file, read on a lent H100 machine with the open module 580.159.04 loaded (2026-11-26,
# tests/fixtures/device/SOURCE.md): 42 parameters, strings in double quotes, empty ones as "".
REAL_PARAMS = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'device', 'h100-vm-2026-11-26',
                           'proc-driver-nvidia-params.txt')


def test_real_proc_params_of_an_h100():
    with open(REAL_PARAMS) as handle:
        text = handle.read()
    got = modparams.parse_proc_params(text)
    assert len(got) == len(text.splitlines()) == 42
    assert got['NvLinkDisable'] == '1' and got['EnableGpuFirmware'] == '18' and got['DeviceFileMode'] == '438'
    assert got['RegistryDwords'] == '' and got['CoherentGPUMemoryMode'] == ''
    # What nvidia_driver_module_params would ask, compared with that machine's module. The kernel reads a leading
    # 0 as octal and /proc prints decimal: 0666 is the 438 there (it was reported as a mismatch before this capture).
    assert modparams.mismatches({'NVreg_DeviceFileMode': '0666', 'NVreg_EnableMSI': 1, 'NVreg_EnableGpuFirmware': '0x12'},
                                text) == []
    assert modparams.mismatches({'NVreg_DeviceFileMode': '0660'}, text) == [
        'NVreg_DeviceFileMode: asked 0660, the loaded module runs with 438 (applied at the next module load: reboot)']
    assert modparams.mismatches({'NVreg_EnableStreamMemOPs': 1, 'NVreg_NvLinkDisable': 0}, text) == [
        'NVreg_EnableStreamMemOPs: asked 1, the loaded module runs with 0 (applied at the next module load: reboot)',
        'NVreg_NvLinkDisable: asked 0, the loaded module runs with 1 (applied at the next module load: reboot)']


def test_driver_version_from_the_simulation_else_the_installed_package():
    policy = apt.parse_policy(open(os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'apt',
                                                'ubuntu2404-policy.txt')).read())
    # Real capture: nvidia-utils-580 installed at 580.178.04-0ubuntu0.24.04.1; nvidia-driver-580 not installed.
    assert fabric.driver_version('', policy, ['nvidia-driver-580', 'nvidia-utils-580']) == '580.178.04-0ubuntu0.24.04.1'
    assert fabric.driver_version('580.95.05-0ubuntu1', policy, ['nvidia-utils-580']) == '580.95.05-0ubuntu1'
    assert fabric.driver_version('', policy, ['nvidia-driver-580']) == ''
