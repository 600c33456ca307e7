# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The shared support data: NVIDIA's branch table, the PCI device ID rule, the flavour decision."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import os
import re

import pytest

from ansible_collections.baremetal.gpu.plugins.module_utils import support

XML_FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'nvidia-smi-xml')

# What nvidia-smi itself reports as <product_architecture>, mapped to the rule's generations.
ARCH_GENERATION = {
    'Maxwell': 'pre-turing', 'Pascal': 'pre-turing', 'Volta': 'pre-turing',
    'Turing': 'turing-to-ada', 'Ampere': 'turing-to-ada', 'Hopper': 'turing-to-ada', 'Ada Lovelace': 'turing-to-ada',
    'Blackwell': 'blackwell-or-newer',
}


def _captured_gpus():
    """(file, device id, product_architecture) of every real capture that reports both."""
    out = []
    for path in sorted(glob.glob(os.path.join(XML_FIXTURES, '*.xml'))):
        with open(path, encoding='utf-8', errors='replace') as handle:
            text = handle.read()
        for gpu in re.findall(r'<gpu id=.*?</gpu>', text, re.S):
            dev = re.search(r'<pci_device_id>((?:0x)?[0-9A-Fa-f]{8})</pci_device_id>', gpu)
            arch = re.search(r'<product_architecture>([^<]+)</product_architecture>', gpu)
            # Skip redacted IDs ([REDACTED], 000000DE): they carry no device ID.
            if dev and arch and support.parse_device_id(dev.group(1)) and dev.group(1)[-4:].upper() == '10DE':
                out.append((os.path.basename(path), dev.group(1), arch.group(1).strip()))
    return out


CAPTURED = _captured_gpus()


def test_captures_cover_every_generation():
    archs = set(a for _f, _d, a in CAPTURED)
    assert {'Pascal', 'Turing', 'Ampere', 'Hopper', 'Ada Lovelace', 'Blackwell'} <= archs


@pytest.mark.parametrize('name, device, arch', CAPTURED, ids=['%s:%s' % (c[0], c[1]) for c in CAPTURED])
def test_rule_agrees_with_what_nvidia_smi_reports(name, device, arch):
    got = support.gpu_generation(device)
    assert got['generation'] == ARCH_GENERATION[arch], (name, device, arch, got)
    assert got['family'].startswith(arch) or (arch == 'Blackwell' and got['family'] == 'Blackwell or newer')


@pytest.mark.parametrize('value, expected', [
    ('0x2330', 0x2330), ('2330', 0x2330), ('0x233010DE', 0x2330), (0x1E02, 0x1E02), ('0X1d01', 0x1D01),
    ('nope', None), ('', None), (None, None), ('0x12345', 0x12345),
])
def test_parse_device_id(value, expected):
    assert support.parse_device_id(value) == expected


@pytest.mark.parametrize('device, generation, open_ok, open_required', [
    ('0x1DFF', 'pre-turing', False, False),
    ('0x1E00', 'turing-to-ada', True, False),   # first Turing (TITAN RTX is 0x1E02)
    ('0x28F8', 'turing-to-ada', True, False),   # last Ada entry of NVIDIA's table
    ('0x2901', 'blackwell-or-newer', True, True),  # B200, first Blackwell entry
    ('0x31C2', 'blackwell-or-newer', True, True),  # GB300
])
def test_thresholds(device, generation, open_ok, open_required):
    got = support.gpu_generation(device)
    assert (got['generation'], got['open_supported'], got['open_required']) == (generation, open_ok, open_required)
    assert got['proprietary_supported'] is not open_required


def test_gpu_generation_refuses_garbage():
    with pytest.raises(ValueError):
        support.gpu_generation('GPU-1234')


# ---- driver branch table ----------------------------------------------------------------------

@pytest.mark.parametrize('branch, today, status', [
    ('535', '2026-06-30', 'supported'),   # supported through the end of its EOL month
    ('535', '2026-07-01', 'eol'),
    ('535', '2026-11-23', 'eol'),
    ('580', '2026-11-23', 'supported'),
    ('595', '2026-11-23', 'supported'),
    ('595', '2027-04-01', 'eol'),
    ('610', '2026-11-23', 'eol'),
    ('550', '2026-11-23', 'unlisted'),    # Debian 13's branch
    ('525', '2026-11-23', 'unlisted'),    # the articles' branch
    (580, '2026-11-23', 'supported'),     # -e nvidia_driver_branch=580 arrives as an int
])
def test_driver_branch_status(branch, today, status):
    got = support.driver_branch_status(branch, today)
    assert got['status'] == status
    assert got['supported'] is (status == 'supported')
    assert 'R%s' % branch in got['message']
    assert got['source'].startswith('NVIDIA')


def test_driver_branch_status_names_the_table_when_unlisted():
    got = support.driver_branch_status('550', '2026-11-23')
    assert 'not in NVIDIA' in got['message'] and 'R580 (LTSB, end of life 2028-06)' in got['message']


# ---- kernel module flavour --------------------------------------------------------------------

H100 = {'address': '0000:00:06.0', 'device_id': '0x2330', 'name': 'NVIDIA H100 80GB HBM3'}
T4 = {'address': '0000:3b:00.0', 'device_id': '0x1EB8'}
P4 = {'address': '0000:af:00.0', 'device_id': '0x1BB3', 'name': 'Tesla P4'}
B200 = {'address': '0000:1b:00.0', 'device_id': '0x2901', 'name': 'NVIDIA B200'}


@pytest.mark.parametrize('requested, branch, gpus, flavour, reason', [
    ('auto', '580', [H100, T4], 'open', 'every GPU is Turing or newer'),
    ('auto', '580', [], 'open', 'no NVIDIA GPU is visible'),
    ('auto', '535', [H100], 'proprietary', 'older than R560'),
    ('auto', '535', [], 'proprietary', 'older than R560'),
    ('auto', '580', [P4], 'proprietary', 'cannot run the open modules'),
    ('auto', '580', [B200], 'open', 'only run with the open modules'),
    ('open', '535', [H100], 'open', 'as asked'),
    ('proprietary', '580', [H100], 'proprietary', 'as asked'),
    ('proprietary', '580', [], 'proprietary', 'as asked'),
])
def test_kernel_module_flavour(requested, branch, gpus, flavour, reason):
    got = support.kernel_module_flavour(requested, branch, gpus)
    assert got['error'] is None, got
    assert got['flavour'] == flavour
    assert reason in got['reason']


@pytest.mark.parametrize('requested, branch, gpus, words', [
    ('open', '580', [P4], ['nvidia_driver_kernel_module is open', 'Tesla P4', '0x1bb3', 'Pascal', 'rule']),
    ('proprietary', '580', [B200], ['nvidia_driver_kernel_module is proprietary', 'NVIDIA B200', '0x2901', 'rule']),
    ('open', '470', [H100], ['no open kernel modules', 'R515']),
    ('auto', '595', [P4], ['R580 is the last branch', 'nvidia_driver_branch']),
    ('auto', '535', [B200], ['R570 or later', 'nvidia_driver_branch']),
    ('auto', '580', [P4, B200], ['no kernel module flavour runs both']),
    ('sideways', '580', [], ['must be auto, open or proprietary']),
])
def test_kernel_module_flavour_refusals(requested, branch, gpus, words):
    got = support.kernel_module_flavour(requested, branch, gpus)
    assert got['flavour'] is None
    for word in words:
        assert word in got['error'], (word, got['error'])


# ---- OS matrix ----------------------------------------------------------------------------------

def test_os_matrix_keys_unique_and_tested_rows_have_nodes():
    keys = support.supported_os_keys()
    assert len(keys) == len(set(keys))
    for row in support.OS_MATRIX:
        assert bool(row['tested']) == bool(row['test_node'])
    assert support.os_row('Ubuntu', '24')['codename'] == 'noble'
    assert support.os_row('Ubuntu', '20') is None


# ---- RuntimeClass name ------------------------------------------------------------------------

@pytest.mark.parametrize('override, expected', [(None, 'nvidia'), ('', 'nvidia'), ('gpu-runtime', 'gpu-runtime')])
def test_runtime_class_name(override, expected):
    assert support.runtime_class_name(override) == expected


@pytest.mark.parametrize('override, words', [
    ('runc', ['baremetal_gpu_runtime_class_name', 'built-in runtime']),
    ('crun', ['baremetal_gpu_runtime_class_name', 'built-in runtime']),
    ('NVIDIA', ['baremetal_gpu_runtime_class_name', 'DNS label']),
    ('gpu_runtime', ['baremetal_gpu_runtime_class_name', 'DNS label']),
])
def test_runtime_class_name_refusals(override, words):
    with pytest.raises(ValueError) as err:
        support.runtime_class_name(override)
    for word in words:
        assert word in str(err.value)


@pytest.mark.parametrize('override, nodename, host, expected', [
    (None, 'gpu-01', 'inv-1', 'gpu-01'), ('', 'gpu-01', 'inv-1', 'gpu-01'), (None, None, 'inv-1', 'inv-1'),
    ('gpu-01.example.internal', 'x', 'y', 'gpu-01.example.internal'),
])
def test_node_name(override, nodename, host, expected):
    assert support.node_name(override, nodename, host) == expected


@pytest.mark.parametrize('override', ['GPU_01', 'gpu 01', '-gpu', 'a' * 254])
def test_node_name_refusals(override):
    with pytest.raises(ValueError) as err:
        support.node_name(override, 'x', 'y')
    assert 'baremetal_gpu_node_name must be a Kubernetes node name' in str(err.value)
