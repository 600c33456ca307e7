# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""baremetal.gpu.nvidia_smi main() with run_command and the binary lookup mocked.

Every reply is a real capture: the XML fixtures, or the failure texts quoted in
tests/fixtures/nvidia-smi-text/FAILURE_MESSAGES.compiled.txt. The exact command run is asserted.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

import pytest

from ansible.module_utils import basic

from ansible_collections.baremetal.gpu.plugins.modules import nvidia_smi
from ansible_collections.baremetal.gpu.tests.unit.plugins.modules.utils import (
    AnsibleExitJson,
    AnsibleFailJson,
    exit_json,
    fail_json,
    set_module_args,
)

HERE = os.path.dirname(__file__)
XML_DIR = os.path.join(HERE, '..', '..', '..', 'fixtures', 'nvidia-smi-xml')
FAILURES = os.path.join(HERE, '..', '..', '..', 'fixtures', 'nvidia-smi-text', 'FAILURE_MESSAGES.compiled.txt')

SMI = '/usr/bin/nvidia-smi'
TIMEOUT = '/usr/bin/timeout'
ENV = {'LC_ALL': 'C', 'LANG': 'C'}


def xml(name):
    with open(os.path.join(XML_DIR, name)) as handle:
        return handle.read()


def failure_block(number):
    with open(FAILURES) as handle:
        return re.findall(r'----- stdout/stderr -----\n(.*?)----- end -----', handle.read(), re.S)[number - 1]


NO_DRIVER = failure_block(1)
NO_DEVICES = failure_block(2)
NVML_UNKNOWN = failure_block(4)


class Harness(object):
    """Records run_command calls and answers them from a queue; owns the binary lookup."""

    def __init__(self, monkeypatch):
        self.calls = []
        self.replies = []
        self.warnings = []
        self.bins = {'nvidia-smi': SMI, 'timeout': TIMEOUT}
        self.lookups = []
        harness = self

        def run_command(module, args, **kwargs):
            harness.calls.append((args, kwargs))
            return harness.replies.pop(0)

        def get_bin_path(module, arg, required=False, opt_dirs=None):
            harness.lookups.append((arg, opt_dirs))
            return harness.bins.get(arg)

        def warn(module, warning):
            harness.warnings.append(warning)

        monkeypatch.setattr(basic.AnsibleModule, 'exit_json', exit_json)
        monkeypatch.setattr(basic.AnsibleModule, 'fail_json', fail_json)
        monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)
        monkeypatch.setattr(basic.AnsibleModule, 'get_bin_path', get_bin_path)
        monkeypatch.setattr(basic.AnsibleModule, 'warn', warn)

    def run(self, args, reply=None, expect=AnsibleExitJson):
        if reply is not None:
            self.replies.append(reply)
        with set_module_args(args):
            with pytest.raises(expect) as err:
                nvidia_smi.main()
        return err.value.result


@pytest.fixture
def harness(monkeypatch):
    return Harness(monkeypatch)


def test_reads_a100_and_asserts_exact_command(harness):
    result = harness.run({}, (0, xml('telegraf__a100-sxm4-v12.xml'), ''))
    assert harness.calls == [([TIMEOUT, '-k', '5', '60', SMI, '-q', '-x'], {'environ_update': ENV})]
    assert harness.lookups[0] == ('nvidia-smi', nvidia_smi.SEARCH_DIRS)
    assert result['changed'] is False
    assert result['status'] == 'ok'
    assert result['driver_communicating'] is True
    assert result['reason'] == ''
    assert result['binary'] == SMI
    assert result['driver_version'] == '535.54.03'
    assert result['driver_branch'] == '535'
    assert result['cuda_version'] == '12.2'
    assert result['gpu_count'] == 1
    assert result['attached_gpus'] == 4
    assert result['gpus'][0]['mig_devices'] == 4
    assert result['gpus'][0]['mig_mode'] == 'Enabled'
    assert result['mismatches'] == []
    assert harness.warnings == [
        'nvidia-smi reports attached_gpus=4 but lists 1 <gpu> element(s); gpu_count is the number listed']


def test_timeout_option_and_binary_path(harness, tmp_path):
    binary = tmp_path / 'nvidia-smi'
    binary.write_text(u'#!/bin/sh\n')
    binary.chmod(0o755)
    result = harness.run({'binary_path': str(binary), 'timeout': 7}, (0, xml('telegraf__tesla-t4.xml'), ''))
    assert harness.calls[0][0] == [TIMEOUT, '-k', '5', '7', str(binary), '-q', '-x']
    assert [name for name, dirs in harness.lookups] == ['timeout']
    assert result['binary'] == str(binary)


def test_without_timeout_binary_warns(harness):
    del harness.bins['timeout']
    harness.run({}, (0, xml('telegraf__tesla-t4.xml'), ''))
    assert harness.calls[0][0] == [SMI, '-q', '-x']
    assert harness.warnings == ['timeout (coreutils) not found; running nvidia-smi without a time limit']


def test_check_mode_runs_the_read(harness):
    result = harness.run({'_ansible_check_mode': True}, (0, xml('telegraf__dual_a5000-v13.xml'), ''))
    assert len(harness.calls) == 1
    assert result['changed'] is False
    assert [g['minor_number'] for g in result['gpus']] == [1, 0]


def test_expectations_met(harness):
    result = harness.run({'driver_branch': '590', 'driver_version': '590.44', 'gpu_count': 2, 'min_gpu_count': 2,
                          'product': 'RTX A5000$', 'persistence_mode': 'Enabled'},
                         (0, xml('telegraf__dual_a5000-v13.xml'), ''))
    assert result['mismatches'] == []


def test_every_mismatch_reported_at_once(harness):
    result = harness.run({'driver_branch': '580', 'gpu_count': 8, 'product': 'H100', 'mig_mode': 'Enabled'},
                         (0, xml('telegraf__tesla-t4.xml'), ''), AnsibleFailJson)
    assert result['mismatches'] == [
        'driver_branch: expected 580, found 515',
        'gpu_count: expected 8, found 1',
        "GPU 0 (00000000:00:1E.0) product: expected to match 'H100', found 'Tesla T4'",
        'GPU 0 (00000000:00:1E.0) mig_mode: expected Enabled, found N/A',
    ]
    assert result['msg'].startswith('nvidia-smi on this node does not meet 4 expectation(s): driver_branch: '
                                    'expected 580, found 515; gpu_count: expected 8, found 1; ')
    assert result['driver_version'] == '515.105.01'
    assert result['status'] == 'ok' and result['driver_communicating'] is True


def test_invalid_product_regex(harness):
    result = harness.run({'product': 'H100('}, expect=AnsibleFailJson)
    assert "product 'H100(' is not a valid regular expression" in result['msg']
    assert harness.calls == []


def test_binary_missing(harness):
    del harness.bins['nvidia-smi']
    result = harness.run({}, expect=AnsibleFailJson)
    assert result['msg'].startswith('nvidia-smi not found in PATH or /usr/bin, ')
    assert result['msg'].endswith('is the driver installed?')
    assert result['status'] == 'binary_missing' and result['driver_communicating'] is False
    assert harness.calls == []


def test_binary_missing_even_with_allow_no_gpu(harness):
    del harness.bins['nvidia-smi']
    result = harness.run({'allow_no_gpu': True}, expect=AnsibleFailJson)
    assert 'is the driver installed?' in result['msg']


def test_binary_path_missing(harness, tmp_path):
    result = harness.run({'binary_path': str(tmp_path / 'nope')}, expect=AnsibleFailJson)
    assert result['msg'] == ('nvidia-smi not found: binary_path %s does not exist or is not executable; '
                             'is the driver installed?' % (tmp_path / 'nope'))


def test_exit_9_no_driver(harness):
    result = harness.run({}, (9, NO_DRIVER, ''), AnsibleFailJson)
    msg = result['msg']
    assert msg.startswith("nvidia-smi couldn't communicate with the NVIDIA driver (rc 9). Likely causes: ")
    for cause in ('kernel module is not loaded', 'nouveau', 'reboot is pending', 'Secure Boot refused'):
        assert cause in msg
    assert 'command: %s -k 5 60 %s -q -x; rc: 9; stdout: NVIDIA-SMI has failed' % (TIMEOUT, SMI) in msg
    assert result['rc'] == 9
    assert result['status'] == 'no_driver_communication' and result['driver_communicating'] is False


def test_exit_9_allowed(harness):
    result = harness.run({'allow_no_gpu': True, 'gpu_count': 8}, (9, NO_DRIVER, ''))
    assert result['status'] == 'no_driver_communication'
    assert result['failed'] is False and result['rc'] == 9
    assert result['driver_communicating'] is False
    assert result['reason'].startswith("nvidia-smi couldn't communicate with the NVIDIA driver (rc 9).")
    assert result['gpu_count'] == 0 and result['gpus'] == [] and result['driver_version'] is None
    assert result['mismatches'] == []
    assert result['changed'] is False


def test_exit_255_nvml_unknown_error(harness):
    result = harness.run({}, (255, NVML_UNKNOWN, ''), AnsibleFailJson)
    assert result['msg'].startswith('nvidia-smi: Failed to initialize NVML: Unknown Error (rc 255). ')
    assert '/dev/nvidiactl exists but no nvidia kernel module is loaded' in result['msg']
    assert 'rc: 255; stdout: Failed to initialize NVML: Unknown Error; stderr: (empty)' in result['msg']


def test_exit_255_allowed(harness):
    result = harness.run({'allow_no_gpu': True}, (255, NVML_UNKNOWN, ''))
    assert result['status'] == 'nvml_init_failed'
    assert result['failed'] is False
    assert result['driver_communicating'] is False


def test_no_devices(harness):
    result = harness.run({}, (6, NO_DEVICES, ''), AnsibleFailJson)
    assert result['msg'].startswith('nvidia-smi: No devices were found (rc 6). ')


def test_no_devices_allowed(harness):
    result = harness.run({'allow_no_gpu': True}, (6, NO_DEVICES, ''))
    assert result['status'] == 'no_devices'
    assert result['failed'] is False
    assert result['driver_communicating'] is True


def test_unparseable_output(harness):
    result = harness.run({'allow_no_gpu': True}, (0, 'Segmentation fault (core dumped)\n', ''), AnsibleFailJson)
    assert result['msg'].startswith('cannot parse nvidia-smi -q -x output as XML (')
    assert "it starts with: 'Segmentation fault (core dumped)\\n'" in result['msg']
    assert 'command: %s -k 5 60 %s -q -x' % (TIMEOUT, SMI) in result['msg']
    assert result['status'] == 'unparseable_output' and result['driver_communicating'] is None


@pytest.mark.parametrize('rc', [124, 137])
def test_timeout(harness, rc):
    result = harness.run({'allow_no_gpu': True, 'timeout': 3}, (rc, '', ''), AnsibleFailJson)
    assert result['msg'].startswith('nvidia-smi -q -x did not finish within 3 s and was killed (timeout)')
    assert 'rc: %d' % rc in result['msg']
    assert result['status'] == 'timeout' and result['driver_communicating'] is None


def test_other_failure_names_command(harness):
    result = harness.run({}, (2, '', 'Invalid combination of input arguments.\n'), AnsibleFailJson)
    assert result['msg'] == ('nvidia-smi failed (rc 2). command: %s -k 5 60 %s -q -x; rc: 2; stdout: (empty); '
                             'stderr: Invalid combination of input arguments.' % (TIMEOUT, SMI))
    assert result['status'] == 'command_failed'


def test_bad_timeout(harness):
    result = harness.run({'timeout': 0}, expect=AnsibleFailJson)
    assert result['msg'] == 'timeout must be at least 1 second, got 0'
