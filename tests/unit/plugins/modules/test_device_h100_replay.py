# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the read-only modules concluded on a real GPU machine, replayed here from what they read there.

On 2026-11-26 `scripts/device-capture.sh` ran on a lent machine with one NVIDIA H100 80GB HBM3 (Ubuntu 24.04 image,
kernel 6.18.44-fc-v657-gpu, open kernel module 580.159.04; tests/fixtures/device/SOURCE.md). It recorded the
inputs (the node tree, `nvidia-smi -q -x`, the kernel log) and what gpu_node_facts, nvidia_smi, gpu_health and
the preflight role returned there. Each test feeds the recorded inputs to the same code here and asserts the
result the machine gave, key by key: a change that would have made the modules say something else on that
machine fails here. The only differences allowed are named in each test (disk free space, which differs
between machines, and the kernel log: the fixture keeps the NVIDIA lines of the boot's 358, see SOURCE.md).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import tarfile

import pytest

from ansible_collections.baremetal.gpu.plugins.module_utils import fabric, kernel_guard, node_facts
from ansible_collections.baremetal.gpu.plugins.modules import gpu_health
from ansible_collections.baremetal.gpu.tests.unit.plugins.module_utils.test_node_facts import Recorded
from ansible_collections.baremetal.gpu.tests.unit.plugins.modules import test_gpu_health, test_nvidia_smi
from ansible_collections.baremetal.gpu.tests.unit.plugins.modules.utils import AnsibleExitJson, AnsibleFailJson

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures')
DEVICE = os.path.join(FIXTURES, 'device', 'h100-vm-2026-11-26')
XML = 'device__h100-80gb-hbm3__580.159.04__vm-2026-11-26.xml'
DMESG = 'device__h100-vm-580.159.04__dmesg-nvidia-lines.txt'
TREE = os.path.join(FIXTURES, 'node-trees', 'device-h100-vm-580.159.04-open.tar')
RUNNING_KERNEL = '6.18.44-fc-v657-gpu'          # uname -r there (the tree's commands/uname-r.out)
# Where the module's get_bin_path found nvidia-smi there (its opt_dirs come before PATH; the capture's
# `command -v` found the /usr/local/nvidia/bin copy first, commands/which.out). No container runtime was found.
WHICH = {'nvidia-smi': '/usr/bin/nvidia-smi'}
# Keys Ansible adds to a registered result, not the module's.
ANSIBLE_KEYS = ('changed', 'failed', 'failed_when_result', 'failed_when_suppressed_exception', 'invocation',
                'stderr_lines', 'stdout_lines')
READ_ORIGINAL_PCI = gpu_health.read_pci_gpus
# The arguments scripts/device-capture.yml gave each module there, as Ansible passed them (templated strings);
# a registered result does not carry them.
ARGS = {
    'nvidia_smi': {},
    'nvidia_smi_met': {'driver_branch': '580', 'gpu_count': '1'},
    'nvidia_smi_unmet': {'gpu_count': '2', 'product': 'A100'},
    'nvidia_smi_extras': {'persistence_mode': 'Enabled', 'mig_mode': 'Disabled', 'fabric_complete': True},
    'gpu_health': {},
    'gpu_health_expect_more': {'expected_gpu_count': '2'},
    'gpu_health_dcgm': {'dcgm_diag_level': 1, 'dcgm_diag_timeout': 120},
}


def seen(name):
    with open(os.path.join(DEVICE, name + '.json')) as handle:
        return json.load(handle)


def module_keys(result, leave_out=()):
    """The module's own keys. ``warnings`` is shown and dropped by Ansible: the machine's log showed none, so
    here it must be empty."""
    assert result.get('warnings', []) == []
    return dict((k, v) for k, v in result.items() if k not in ANSIBLE_KEYS + ('warnings',) + tuple(leave_out))


@pytest.fixture
def tree(tmp_path):
    dest = str(tmp_path / 'tree')
    with tarfile.open(TREE) as archive:
        archive.extractall(dest)
    return dest


# ---- gpu_node_facts ------------------------------------------------------------------------------------

def test_gpu_node_facts_as_on_the_machine(tree):
    there = seen('gpu_node_facts')['ansible_facts']['gpu_node']
    here = node_facts.gather(tree, Recorded(tree), WHICH.get, RUNNING_KERNEL)
    # Free disk space is this machine's (statvfs of the extracted tree), not the device's.
    for key in ('dkms_disk_free_mb', 'dkms_disk_path'):
        here.pop(key)
        there.pop(key)
    assert here == there
    # What the machine showed, written down from the capture (not from the result above).
    assert there['gpus'][0]['address'] == '0000:00:06.0' and there['gpus'][0]['device_id'] == '0x2330'
    assert there['gpus'][0]['family'] == 'Hopper' and there['system_kind'] == 'pcie'
    # The banner of a Nix-built open module ("(nixbld@)" and a GCC line) still reads as open 580.159.04.
    assert (there['nvidia_loaded_version'], there['nvidia_loaded_flavour']) == ('580.159.04', 'open')
    # The image carries /.dockerenv although the machine is a Firecracker VM: both this module and Ansible's own
    # virtualization fact ("docker") say container. What a node hides is reported, never guessed.
    assert there['container'] is True and os.path.exists(os.path.join(tree, '.dockerenv'))
    assert seen('ansible_facts_subset')['virtualization_type'] == 'docker'


def test_the_gpu_is_bound_to_nvidia_in_the_captured_tree(tree):
    # gpu_health reads the bound driver from the tree's sysfs link (scripts/capture-node-tree.sh keeps it).
    assert READ_ORIGINAL_PCI(tree) == [dict(seen('gpu_node_facts')['ansible_facts']['gpu_node']['gpus'][0],
                                            driver='nvidia')]


# ---- nvidia_smi ----------------------------------------------------------------------------------------

def replay_nvidia_smi(monkeypatch, name, expect=AnsibleExitJson):
    """nvidia_smi's main() on the captured XML with the arguments the machine's run had; its result must be the
    machine's, key by key. Returns the machine's result."""
    there = seen(name)
    harness = test_nvidia_smi.Harness(monkeypatch)
    here = harness.run(ARGS[name], (0, test_nvidia_smi.xml(XML), ''), expect=expect)
    # Keys of a GPU the module returns since the capture, read from the same XML: checked against it, then left out.
    for gpu in here.get('gpus') or []:
        assert gpu.pop('pci_device_id') == '233010DE'
        assert gpu.pop('mig_mode_pending') == 'Disabled'
    assert module_keys(here, ['elapsed']) == module_keys(there, ['elapsed'])
    return there


@pytest.mark.parametrize('name', ['nvidia_smi', 'nvidia_smi_met'])
def test_nvidia_smi_as_on_the_machine(monkeypatch, name):
    there = replay_nvidia_smi(monkeypatch, name)
    assert there['status'] == 'ok' and there['mismatches'] == [] and there['driver_version'] == '580.159.04'


def test_nvidia_smi_unmet_expectations_as_on_the_machine(monkeypatch):
    there = replay_nvidia_smi(monkeypatch, 'nvidia_smi_unmet', AnsibleFailJson)
    assert there['mismatches'] == [
        'gpu_count: expected 2, found 1',
        "GPU 0 (00000000:00:06.0) product: expected to match 'A100', found 'NVIDIA H100 80GB HBM3'"]


def test_nvidia_smi_host_extras_expectations_as_on_the_machine(monkeypatch):
    # From the fourth machine (SOURCE.md): its reading gave the same GPU list as the second machine's capture
    # replayed here (masked UUID included). Persistence mode Enabled and MIG Disabled are met; a complete NVLink
    # fabric is not, on a PCIe H100 without NVSwitch (state and status N/A): the expectation the driver role sets
    # only on an NVSwitch system (nvidia_driver_fabric_manager), shown here failing where it must.
    there = replay_nvidia_smi(monkeypatch, 'nvidia_smi_extras', AnsibleFailJson)
    assert there['mismatches'] == [
        "GPU 0 (00000000:00:06.0, NVIDIA H100 80GB HBM3): fabric state N/A, status N/A (expected Completed, Success: "
        "is nvidia-fabricmanager running at the driver's version?)"]


# ---- gpu_health ----------------------------------------------------------------------------------------

@pytest.mark.parametrize('name', ['gpu_health', 'gpu_health_expect_more', 'gpu_health_dcgm'])
def test_gpu_health_as_on_the_machine(monkeypatch, tree, name):
    there = seen(name)
    harness = test_gpu_health.Harness(monkeypatch)
    # That machine had dmesg and no journalctl and no dcgmi (the capture's raw command answers, SOURCE.md).
    harness.bins = {'nvidia-smi': '/usr/bin/nvidia-smi', 'dmesg': '/usr/bin/dmesg'}
    harness.pci = READ_ORIGINAL_PCI(tree)
    harness.reply('/usr/bin/nvidia-smi', (0, test_nvidia_smi.xml(XML), ''))
    harness.reply('/usr/bin/dmesg', (0, test_gpu_health.klog(DMESG), ''))
    here = harness.run(ARGS[name])
    # fabric_waited came after the capture: that machine has no NVSwitch fabric, so nothing is waited for.
    assert here['fabric_waited'] == 0 and 'fabric_waited' not in there
    assert module_keys(here, leave_out=('fabric_waited',)) == module_keys(there)


def test_gpu_health_verdicts_on_the_machine():
    # Written down from the results: a healthy H100 (the NVRM lines of its boot are not findings), one
    # critical finding when a second GPU is expected, a warning when DCGM is asked for and not installed.
    assert (seen('gpu_health')['verdict'], seen('gpu_health')['findings']) == ('healthy', [])
    assert [f['check'] for f in seen('gpu_health_expect_more')['findings']] == ['gpu_count']
    assert seen('gpu_health_expect_more')['verdict'] == 'unhealthy'
    assert seen('gpu_health_dcgm')['verdict'] == 'degraded'
    assert seen('gpu_health_dcgm')['sources']['dcgm_diag'] == 'not installed'


# ---- the preflight role's report -----------------------------------------------------------------------

def test_preflight_report_parts_as_on_the_machine():
    host = seen('preflight-report')['hosts']['device']
    facts = seen('gpu_node_facts')['ansible_facts']['gpu_node']
    # The fabric row: the role's nvidia_smi call had allow_no_gpu; the reading is the same document.
    assert fabric.report(facts['system_kind'], seen('nvidia_smi')) == host['fabric']
    assert host['fabric']['summary'] == 'not applicable: no NVSwitch on the PCI bus (pcie)'
    # No installed kernel there (the VM boots a kernel from outside its disk): no modinfo ran.
    assert kernel_guard.guard([], facts['installed_kernels'], facts['kernel_next_boot'], 'nvidia') == \
        host['kernel_modules']
    assert host['ready'] is False and len(host['blockers']) == 1
    assert 'no installed kernel' in host['blockers'][0]
    assert host['driver_plan']['branch'] == '580' and host['driver_plan']['kernel_module'] == 'open'


# ---- the roles, from the third run (another H100; scripts/device-capture.yml's last two plays) -------------

def test_verify_role_recorded_what_nvidia_smi_read():
    # The verify role's node checks passed there (no failure kept) with the expectations of the machine
    # (branch 580, 1 GPU); what it recorded is the module's reading, field by field.
    verify = seen('verify')
    assert verify['failure'] is None
    observed, smi = verify['verify_observed'], seen('nvidia_smi')
    for key in ('cuda_version', 'device_plugin_gpus', 'driver_branch', 'driver_version', 'gpu_count',
                'mig_device_count', 'status'):
        assert observed[key] == smi[key], key
    assert observed['products'] == [gpu['name'] for gpu in smi['gpus']]
    assert observed['summary'] == 'driver 580.159.04 (branch 580, CUDA 13.0), 1 GPU(s): NVIDIA H100 80GB HBM3'
    assert observed['node_name'] == 'vm'                  # uname -n there


def test_gpu_health_report_carries_the_module_result():
    report = seen('gpu-health-report')
    assert report['action'] == 'report'
    node, module = report['nodes']['device'], seen('gpu_health')
    for key in ('commands', 'counts', 'driver_version', 'findings', 'gpu_count', 'pci_gpu_count', 'reason',
                'sources', 'verdict', 'xid_catalog'):
        assert node[key] == module[key], key
    assert node['gpus'] == [{'findings': 0, 'index': 0, 'name': 'NVIDIA H100 80GB HBM3', 'pci_bus_id': '00000000:00:06.0',
                             'processes': 0, 'uuid': 'GPU-00000000-0000-0000-0000-000000000000', 'verdict': 'healthy'}]
