# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""baremetal.gpu.gpu_health main() with the command runner, the binary lookup and the PCI reader mocked.

Replies are real captures: the nvidia-smi XMLs, the failure texts of FAILURE_MESSAGES.compiled.txt and the
kernel-log lines of tests/fixtures/kernel-log. The exact commands run are asserted.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible.module_utils import basic

from ansible_collections.baremetal.gpu.plugins.modules import gpu_health
from ansible_collections.baremetal.gpu.tests.unit.plugins.modules.test_nvidia_smi import Reply, failure_block, xml
from ansible_collections.baremetal.gpu.tests.unit.plugins.modules.utils import (
    AnsibleExitJson,
    AnsibleFailJson,
    set_module_args,
)

KLOG = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'kernel-log')
SMI = '/usr/bin/nvidia-smi'
JOURNALCTL = '/usr/bin/journalctl'
DMESG = '/usr/bin/dmesg'
DCGMI = '/usr/bin/dcgmi'
H100 = 'device__h100-80gb-hbm3__580.159.04.xml'
# the H100 of that capture, as sysfs showed it on that machine (tests/fixtures/node-trees/SOURCE.md)
H100_PCI = [{'address': '0000:00:06.0', 'device_id': '0x2330', 'driver': 'nvidia'}]
JOURNAL_CMD = [JOURNALCTL, '-k', '-o', 'short-iso', '--no-pager']


def klog(name):
    with open(os.path.join(KLOG, name)) as handle:
        return handle.read()


class Harness(object):
    def __init__(self, monkeypatch):
        self.calls = []
        self.replies = {}
        self.bins = {'nvidia-smi': SMI, 'journalctl': JOURNALCTL, 'dmesg': DMESG}
        self.pci = list(H100_PCI)
        self.warnings = []
        harness = self

        def run(args, timeout):
            harness.calls.append((args, timeout))
            reply = harness.replies[args[0]].pop(0)
            return reply if isinstance(reply, Reply) else Reply(*reply)

        def get_bin_path(module, arg, required=False, opt_dirs=None):
            return harness.bins.get(arg)

        def warn(module, warning):
            harness.warnings.append(warning)

        monkeypatch.setattr(basic.AnsibleModule, 'get_bin_path', get_bin_path)
        monkeypatch.setattr(basic.AnsibleModule, 'warn', warn)
        monkeypatch.setattr(gpu_health, 'run', run)
        monkeypatch.setattr(gpu_health, 'read_pci_gpus', lambda root='/': harness.pci)

    def reply(self, binary, *replies):
        self.replies.setdefault(binary, []).extend(replies)

    def run(self, args, expect=AnsibleExitJson):
        with set_module_args(args):
            with pytest.raises(expect) as err:
                gpu_health.main()
        return err.value.result


@pytest.fixture
def harness(monkeypatch):
    return Harness(monkeypatch)


def brief(result):
    return [(f['gpu'], f['check'], f['severity'], f['action']) for f in result['findings']]


def test_healthy_h100_and_the_exact_commands(harness):
    harness.reply(SMI, (0, xml(H100), ''))
    harness.reply(JOURNALCTL, (0, '-- No entries --\n', ''))
    result = harness.run({})
    assert harness.calls == [([SMI, '-q', '-x'], 60), (JOURNAL_CMD, 60)]
    assert result['commands'] == [[SMI, '-q', '-x'], JOURNAL_CMD]
    assert result['changed'] is False
    assert result['verdict'] == 'healthy'
    assert result['findings'] == []
    assert result['sources'] == {'nvidia_smi': 'ok', 'kernel_log': 'journalctl', 'dcgm_diag': 'skipped'}
    assert (result['gpu_count'], result['pci_gpu_count'], result['driver_version']) == (1, 1, '580.159.04')
    assert result['gpus'] == [{'index': 0, 'pci_bus_id': '00000000:00:06.0', 'name': 'NVIDIA H100 80GB HBM3',
                               'uuid': 'GPU-00000000-0000-0000-0000-000000000000', 'processes': 0,
                               'verdict': 'healthy', 'findings': 0}]
    assert result['xid_catalog']['date'] == '2026-11-24'


def test_xids_in_the_journal_make_the_node_unhealthy(harness):
    harness.reply(SMI, (0, xml(H100), ''))
    harness.reply(JOURNALCTL, (0, klog('gpud-pr46__dmesg-ctime__xid13-xid109.txt'), ''))
    result = harness.run({'kernel_log_since': '2026-11-24 10:00:00', 'timeout': 20})
    assert harness.calls[1] == (JOURNAL_CMD + ['--since', '2026-11-24 10:00:00'], 20)
    assert brief(result) == [(None, 'xid', 'warning', 'RESTART_APP'), (None, 'xid', 'critical', 'RESET_GPU')]
    assert result['findings'][1]['source'] == 'journalctl -k'
    assert (result['verdict'], result['reason']) == ('unhealthy', 'xid')
    assert result['counts'] == {'info': 0, 'warning': 1, 'critical': 1}


def test_dmesg_when_journalctl_fails(harness):
    harness.reply(SMI, (0, xml(H100), ''))
    harness.reply(JOURNALCTL, (1, '', 'No journal files were found.\n'))
    harness.reply(DMESG, (0, klog('nvtrust-124__dmesg__sxid-22013-nonfatal.txt'), ''))
    result = harness.run({'kernel_log_since': '-2h'})
    assert [c[0] for c in harness.calls] == [[SMI, '-q', '-x'], JOURNAL_CMD + ['--since', '-2h'], [DMESG]]
    assert result['sources']['kernel_log'] == 'dmesg'
    assert brief(result) == [(None, 'sxid', 'warning', 'IGNORE')]
    assert result['verdict'] == 'degraded'
    assert harness.warnings == ['kernel_log_since=-2h is ignored: the kernel log came from dmesg, which cannot '
                                'filter by time; the whole boot was read']


def test_unreadable_kernel_log_is_a_finding(harness):
    harness.reply(SMI, (0, xml(H100), ''))
    harness.bins.pop('journalctl')
    harness.reply(DMESG, (1, '', 'dmesg: read kernel buffer failed: Operation not permitted\n'))
    result = harness.run({})
    assert brief(result) == [(None, 'kernel_log', 'warning', 'RERUN')]
    assert 'Operation not permitted' in result['findings'][0]['detail']
    assert result['verdict'] == 'degraded'


def test_gpu_fallen_off_the_bus(harness):
    # NVSentinel the driver's probe failed for the GPU at 0000:b3:00.0 (10de:26b5); nvidia-smi then
    # answers "No devices were found" (the real text, FAILURE_MESSAGES.compiled.txt block 2)
    harness.pci = [{'address': '0000:b3:00.0', 'device_id': '0x26b5', 'driver': None}]
    harness.reply(SMI, (6, failure_block(2), ''))
    harness.reply(JOURNALCTL, (0, klog('nvsentinel-155__dmesg__fallen-off-the-bus-no-xid.txt'), ''))
    result = harness.run({'expected_gpu_count': 1})
    assert brief(result) == [(None, 'nvidia_smi', 'critical', 'RESTART_BM'),
                             (None, 'gpu_count', 'critical', 'RESTART_BM'),
                             (None, 'fallen_off_bus', 'critical', 'RESTART_BM')]
    assert result['sources']['nvidia_smi'] == 'no_devices'
    assert (result['verdict'], result['gpu_count'], result['pci_gpu_count']) == ('unhealthy', 0, 1)


def test_driver_not_loaded(harness):
    harness.reply(SMI, (9, failure_block(1), ''))
    harness.reply(JOURNALCTL, (0, '', ''))
    result = harness.run({})
    assert brief(result) == [(None, 'nvidia_smi', 'critical', 'CHECK_DRIVER')]


def test_hung_nvidia_smi_is_cut_and_critical(harness):
    harness.reply(SMI, Reply(None, '', '', timed_out=True, signals=['SIGTERM', 'SIGKILL'], still_running=True,
                             state='D'))
    harness.reply(JOURNALCTL, (0, '', ''))
    result = harness.run({'timeout': 5})
    assert harness.calls[0] == ([SMI, '-q', '-x'], 5)
    assert brief(result) == [(None, 'nvidia_smi', 'critical', 'RESTART_BM')]
    assert 'state D' in result['findings'][0]['detail']
    assert result['sources']['nvidia_smi'] == 'timeout'


def test_garbage_from_nvidia_smi_is_a_finding_not_a_traceback(harness):
    harness.reply(SMI, (0, b'\x00\xff<nvidia_smi_log><gpu>', ''))
    harness.reply(JOURNALCTL, (0, '', ''))
    result = harness.run({})
    assert brief(result) == [(None, 'nvidia_smi', 'warning', 'RERUN')]
    assert result['sources']['nvidia_smi'] == 'unparseable_output'


def test_dcgm_diag_asked_for_but_not_installed(harness):
    harness.reply(SMI, (0, xml(H100), ''))
    harness.reply(JOURNALCTL, (0, '', ''))
    result = harness.run({'dcgm_diag_level': 1})
    assert brief(result) == [(None, 'dcgm_diag', 'warning', 'RERUN')]
    assert result['sources']['dcgm_diag'] == 'not installed'


def test_dcgm_diag_command(harness):
    harness.bins['dcgmi'] = DCGMI
    harness.reply(SMI, (0, xml(H100), ''))
    harness.reply(JOURNALCTL, (0, '', ''))
    harness.reply(DCGMI, (226, 'Error: unable to establish a connection to the specified host: localhost\n', ''))
    result = harness.run({'dcgm_diag_level': 3, 'dcgm_diag_timeout': 900})
    assert harness.calls[2] == ([DCGMI, 'diag', '-r', '3', '-j'], 900)
    assert brief(result) == [(None, 'dcgm_diag', 'warning', 'RERUN')]


def test_kernel_log_off_and_skip_checks(harness):
    harness.reply(SMI, (0, xml('telegraf__tesla-t4.xml'), ''))
    harness.pci = [{'address': '0000:00:1e.0', 'device_id': '0x1eb8', 'driver': 'nvidia'}]
    result = harness.run({'kernel_log': False, 'skip_checks': ['pcie_link_width']})
    assert harness.calls == [([SMI, '-q', '-x'], 60)]
    assert result['verdict'] == 'healthy'
    assert result['sources']['kernel_log'] == 'skipped'


@pytest.mark.parametrize('args, message', [
    ({'timeout': 0}, 'timeout must be at least 1 second, got 0'),
    ({'dcgm_diag_timeout': 0}, 'dcgm_diag_timeout must be at least 1 second, got 0'),
    ({'expected_gpu_count': 0}, 'expected_gpu_count must be at least 1, got 0'),
    ({'retired_pages_limit': -1}, 'retired_pages_limit must be 0 or more, got -1'),
    ({'fabric_wait': -1}, 'fabric_wait must be 0 or more seconds, got -1'),
])
def test_bad_options(harness, args, message):
    result = harness.run(args, expect=AnsibleFailJson)
    assert result['msg'] == message
    assert harness.calls == []


def test_dcgm_level_outside_the_choices(harness):
    result = harness.run({'dcgm_diag_level': 5}, expect=AnsibleFailJson)
    assert 'dcgm_diag_level' in result['msg']


# The NVLink fabric of an NVSwitch system: the real H100 capture (a PCIe card, fabric N/A) with its fabric state and
# status changed by the test to what nvidia-smi prints while Fabric Manager registers the GPUs, and after.
FABRIC = '\t\t\t<state>N/A</state>\n\t\t\t<status>N/A</status>'


def fabric_xml(state, status):
    text = xml(H100)
    assert text.count(FABRIC) == 1
    return text.replace(FABRIC, '\t\t\t<state>%s</state>\n\t\t\t<status>%s</status>' % (state, status))


@pytest.fixture
def clock(monkeypatch):
    """A clock that the module's wait advances (no real sleep)."""
    now = [1000.0]
    slept = []

    def sleep(seconds):
        slept.append(seconds)
        now[0] += seconds

    monkeypatch.setattr(gpu_health, '_clock', lambda: now[0])
    monkeypatch.setattr(gpu_health, '_sleep', sleep)
    return slept


def test_a_fabric_registration_in_progress_is_waited_for_and_then_healthy(harness, clock):
    harness.reply(SMI, (0, fabric_xml('In Progress', 'N/A'), ''), (0, fabric_xml('Completed', 'Success'), ''))
    harness.reply(JOURNALCTL, (0, '-- No entries --\n', ''))
    result = harness.run({'fabric_wait': 60})
    assert result['verdict'] == 'healthy' and result['findings'] == [], result['findings']
    assert clock == [5] and result['fabric_waited'] == 5
    assert [args for args, _t in harness.calls] == [[SMI, '-q', '-x'], [SMI, '-q', '-x'], JOURNAL_CMD]


def test_a_fabric_still_in_progress_after_the_wait_is_critical(harness, clock):
    harness.reply(SMI, *[(0, fabric_xml('In Progress', 'N/A'), '')] * 4)
    harness.reply(JOURNALCTL, (0, '-- No entries --\n', ''))
    result = harness.run({'fabric_wait': 12})
    assert clock == [5, 5, 2] and result['fabric_waited'] == 12
    assert brief(result) == [(0, 'fabric', 'critical', 'CHECK_FABRIC_MANAGER')]
    assert 'state In Progress, status N/A (still in progress after a wait of 12 s)' in result['findings'][0]['detail']
    assert result['verdict'] == 'unhealthy'


def test_a_fabric_in_progress_without_a_wait_and_a_failed_one_are_critical_at_once(harness, clock):
    # fabric_wait 0 (the default): no wait, as before; a registration that failed is never waited for.
    harness.reply(SMI, (0, fabric_xml('In Progress', 'N/A'), ''), (0, fabric_xml('Completed', 'Failure'), ''))
    harness.reply(JOURNALCTL, (0, '-- No entries --\n', ''), (0, '-- No entries --\n', ''))
    result = harness.run({})
    assert clock == [] and result['fabric_waited'] == 0 and brief(result) == [(0, 'fabric', 'critical', 'CHECK_FABRIC_MANAGER')]
    assert 'still in progress' not in result['findings'][0]['detail']
    result = harness.run({'fabric_wait': 60})
    assert clock == [] and result['fabric_waited'] == 0
    assert 'state Completed, status Failure (expected' in result['findings'][0]['detail']
