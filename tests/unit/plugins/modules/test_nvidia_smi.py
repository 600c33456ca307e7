# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""baremetal.gpu.nvidia_smi main() with the command runner and the binary lookup mocked.

Every reply is a real capture: the XML fixtures, or the failure texts quoted in
tests/fixtures/nvidia-smi-text/FAILURE_MESSAGES.compiled.txt. The exact command run is asserted.
The module run as a process, with stand-in nvidia-smi scripts, is test_nvidia_smi_process.py.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

import pytest

from ansible.module_utils import basic

from ansible_collections.baremetal.gpu.plugins.module_utils import deadline_run
from ansible_collections.baremetal.gpu.plugins.modules import nvidia_smi
from ansible_collections.baremetal.gpu.tests.unit.plugins.modules.utils import (
    AnsibleExitJson,
    AnsibleFailJson,
    set_module_args,
)

HERE = os.path.dirname(__file__)
XML_DIR = os.path.join(HERE, '..', '..', '..', 'fixtures', 'nvidia-smi-xml')
FAILURES = os.path.join(HERE, '..', '..', '..', 'fixtures', 'nvidia-smi-text', 'FAILURE_MESSAGES.compiled.txt')

SMI = '/usr/bin/nvidia-smi'


def xml(name):
    with open(os.path.join(XML_DIR, name)) as handle:
        return handle.read()


def failure_block(number):
    with open(FAILURES) as handle:
        return re.findall(r'----- stdout/stderr -----\n(.*?)----- end -----', handle.read(), re.S)[number - 1]


NO_DRIVER = failure_block(1)
NO_DEVICES = failure_block(2)
NVML_UNKNOWN = failure_block(4)


class Reply(object):
    """What deadline_run.run_with_deadline returns, for a command that finished (or was killed)."""

    def __init__(self, rc, stdout, stderr, timed_out=False, signals=(), still_running=False, state=None):
        self.rc = rc
        self.stdout = stdout.encode('utf-8') if not isinstance(stdout, bytes) else stdout
        self.stderr = stderr.encode('utf-8') if not isinstance(stderr, bytes) else stderr
        self.timed_out = timed_out
        self.signals = list(signals)
        self.still_running = still_running
        self.state = state
        self.pid = 4242
        self.elapsed = 0.4

    def describe_kill(self, kill_grace):
        return deadline_run.RunResult.describe_kill(self, kill_grace)


class Harness(object):
    """Records the commands run and answers them from a queue; owns the binary lookup."""

    def __init__(self, monkeypatch):
        self.calls = []
        self.replies = []
        self.warnings = []
        self.bins = {'nvidia-smi': SMI}
        self.lookups = []
        harness = self

        def run(args, timeout):
            harness.calls.append((args, timeout))
            reply = harness.replies.pop(0)
            return reply if isinstance(reply, Reply) else Reply(*reply)

        def get_bin_path(module, arg, required=False, opt_dirs=None):
            harness.lookups.append((arg, opt_dirs))
            return harness.bins.get(arg)

        def warn(module, warning):
            harness.warnings.append(warning)

        monkeypatch.setattr(nvidia_smi, 'run', run)
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
    assert harness.calls == [([SMI, '-q', '-x'], 60)]
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
    assert result['mig_device_count'] == 4
    assert result['device_plugin_gpus'] == {'none': 1, 'single': 4, 'mixed': 0}
    assert result['rc'] == 0 and result['elapsed'] == 0.4
    assert result['mismatches'] == []
    assert harness.warnings == [
        'nvidia-smi reports attached_gpus=4 but lists 1 <gpu> element(s); gpu_count is the number listed']


def test_timeout_option_and_binary_path(harness, tmp_path):
    binary = tmp_path / 'nvidia-smi'
    binary.write_text(u'#!/bin/sh\n')
    binary.chmod(0o755)
    result = harness.run({'binary_path': str(binary), 'timeout': 7}, (0, xml('telegraf__tesla-t4.xml'), ''))
    assert harness.calls == [([str(binary), '-q', '-x'], 7)]
    assert harness.lookups == []
    assert result['binary'] == str(binary)
    assert result['device_plugin_gpus'] == {'none': 1, 'single': 1, 'mixed': 1}


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
    assert 'command: %s -q -x; rc: 9; stdout: NVIDIA-SMI has failed' % SMI in msg
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
    assert 'command: %s -q -x; rc: 0; stdout: (empty)' % SMI in result['msg']
    assert result['status'] == 'unparseable_output' and result['driver_communicating'] is None


def test_timeout_killed(harness):
    reply = Reply(-15, '', '', timed_out=True, signals=['SIGTERM'])
    result = harness.run({'allow_no_gpu': True, 'timeout': 3}, reply, AnsibleFailJson)
    assert result['msg'].startswith('nvidia-smi -q -x did not finish within the timeout of 3 s: sent SIGTERM; '
                                    'it ended on signal SIGTERM. A hung GPU or driver blocks nvidia-smi')
    assert 'command: %s -q -x; rc: -15' % SMI in result['msg']
    assert result['status'] == 'timeout' and result['driver_communicating'] is None
    assert result['rc'] == -15


def test_timeout_process_stuck_in_the_kernel(harness):
    reply = Reply(None, '', '', timed_out=True, signals=['SIGTERM', 'SIGKILL'], still_running=True, state='D')
    result = harness.run({'timeout': 60}, reply, AnsibleFailJson)
    assert result['msg'].startswith(
        'nvidia-smi -q -x did not finish within the timeout of 60 s: sent SIGTERM, then SIGKILL after 5 s; it is '
        'still running (pid 4242, state D: uninterruptible sleep in the kernel) and cannot be killed from user '
        'space. ')
    assert result['status'] == 'timeout' and result['rc'] is None


def test_command_cannot_start(harness, monkeypatch):
    def refuse(args, timeout):
        raise OSError(8, 'Exec format error')
    monkeypatch.setattr(nvidia_smi, 'run', refuse)
    result = harness.run({}, expect=AnsibleFailJson)
    assert result['msg'] == 'cannot run %s -q -x: [Errno 8] Exec format error' % SMI
    assert result['status'] == 'command_failed'


def test_other_failure_names_command(harness):
    result = harness.run({}, (2, '', 'Invalid combination of input arguments.\n'), AnsibleFailJson)
    assert result['msg'] == ('nvidia-smi failed (rc 2). command: %s -q -x; rc: 2; stdout: (empty); '
                             'stderr: Invalid combination of input arguments.' % SMI)
    assert result['status'] == 'command_failed'


def test_bad_timeout(harness):
    result = harness.run({'timeout': 0}, expect=AnsibleFailJson)
    assert result['msg'] == 'timeout must be at least 1 second, got 0'


def test_fabric_complete_fails_on_a_hopper_gpu_whose_fabric_is_not_up(harness):
    # The real H100 capture (no NVSwitch): asked for a complete fabric, the module fails saying what it found.
    result = harness.run({'fabric_complete': True}, (0, xml('device__h100-80gb-hbm3__580.159.04.xml'), ''),
                         AnsibleFailJson)
    assert result['mismatches'] == [
        "GPU 0 (00000000:00:06.0, NVIDIA H100 80GB HBM3): fabric state N/A, status N/A (expected Completed, "
        "Success: is nvidia-fabricmanager running at the driver's version?)"]
    assert result['gpus'][0]['architecture'] == 'Hopper'


def test_fabric_complete_ignores_pre_hopper_and_is_off_by_default(harness):
    assert harness.run({'fabric_complete': True}, (0, xml('telegraf__a100-sxm4-v12.xml'), ''))['mismatches'] == []
    assert harness.run({}, (0, xml('device__h100-80gb-hbm3__580.159.04.xml'), ''))['mismatches'] == []
