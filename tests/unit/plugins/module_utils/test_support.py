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
    ('620', '2026-11-24', 'supported'),   # R620 documentation: LTSB, end of life September 2029
    ('620', '2029-10-01', 'eol'),
    ('615', '2026-11-24', 'unconfirmed'),  # Ubuntu ships it; NVIDIA's tables state no kind or end of life
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
    # ... and where the archives still offer it; an unconfirmed row is never offered as NVIDIA's word.
    assert 'the archives still offer it: Debian 13' in got['message']
    assert 'R615' not in got['message']


def test_unconfirmed_branch_says_so():
    got = support.driver_branch_status('615', '2026-11-24')
    assert got['listed'] is True and got['confirmed'] is False and got['supported'] is False
    assert got['kind'] is None and got['eol'] is None
    assert 'UNCONFIRMED' in got['message']


@pytest.mark.parametrize('real, today, branch, words', [
    # Ubuntu 26.04 and 22.04 today (tests/fixtures/apt/*-depends-nvidia-driver.txt): 580 is the LTSB they ship.
    (['580', '595', '615'], '2026-11-30', '580', 'the newest NVIDIA Long Term Support Branch'),
    (['390', '470', '545', '580', '595', '615'], '2026-11-30', '580', 'real packages: 390, 470, 545, 580, 595, 615'),
    # An archive that made 580 a transitional package: no LTSB left, the Production Branch it ships (615 has no row
    # NVIDIA confirms, so it is never chosen).
    (['595', '615'], '2026-11-30', '595', 'no Long Term Support Branch is a real package here'),
    # An LTSB newer than 580, once an archive ships it, is taken.
    (['580', '595', '620'], '2026-11-30', '620', 'Long Term Support Branch'),
    # After 595's end of life and with 580 retired: nothing supported, the caller keeps its own default.
    (['595', '615'], '2027-04-01', '', ''),
    ([], '2026-11-30', '', ''),
])
def test_archive_default_branch(real, today, branch, words):
    got = support.archive_default_branch(real, today)
    assert got['branch'] == branch
    assert words in got['reason']
    assert got['real'] == sorted(real, key=int)


# ---- every branch the tested archives offer is in the table -------------------------------------

APT_FIXTURES = [os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', d) for d in ('apt', 'dkms')]
# Package names that carry their branch: nvidia-driver-580, libnvidia-compute-595, linux-modules-nvidia-580-open-...,
# nvidia-fabricmanager-615, cuda-drivers-fabricmanager-615.
BRANCH_NAMED = re.compile(r'\b(?:nvidia|libnvidia|linux-(?:modules|objects|signatures)-nvidia|xserver-xorg-video-nvidia|'
                          r'cuda-drivers(?:-fabricmanager)?)-(?:[a-z0-9]+-)*?([0-9]{3})(?=$|[-:\s])')
# Packages without a branch in their name whose version is the driver version (Debian's nvidia-*).
NVIDIA_NAME = re.compile(r'^(?:nvidia-|libnvidia-|firmware-nvidia-|libcuda)')


def _archive_branches_in_fixtures():
    """{branch: [files]}: every driver branch named by a package, or carried by an NVIDIA package's version,
    in the captured apt outputs (simulations, policies, histories) and DKMS captures."""
    from ansible_collections.baremetal.gpu.plugins.module_utils import apt
    seen = {}
    for directory in APT_FIXTURES:
        for path in sorted(glob.glob(os.path.join(directory, '*'))):
            if path.endswith('SOURCE.md') or not os.path.isfile(path):
                continue
            with open(path, encoding='utf-8', errors='replace') as handle:
                text = handle.read()
            found = set(m.group(1) for m in BRANCH_NAMED.finditer(text))
            for pkg in apt.parse_simulation(text)['install']:
                if NVIDIA_NAME.match(pkg['name']):
                    found.add(apt.branch_of(pkg['version']))
            for name, row in apt.parse_policy(text).items():
                if NVIDIA_NAME.match(name):
                    found.update(apt.branch_of(v) for v in row['versions'])
            for branch in found - {''}:
                seen.setdefault(branch, []).append(os.path.basename(path))
    return seen


ARCHIVE_SEEN = _archive_branches_in_fixtures()


def test_fixtures_show_archive_branches():
    # The scan itself must find what is known to be in the captures, or the next test proves nothing.
    assert {'525', '535', '550', '580'} <= set(ARCHIVE_SEEN), ARCHIVE_SEEN


@pytest.mark.parametrize('branch', sorted(ARCHIVE_SEEN))
def test_every_archive_branch_is_in_the_support_table(branch):
    assert branch in support.known_branches(), (
        'driver branch %s is offered by a tested archive (%s) but is missing from support.DRIVER_SUPPORT: add '
        "NVIDIA's row to 'branches' or, when NVIDIA's table does not list it, a line to 'archive_branches'"
        % (branch, ', '.join(ARCHIVE_SEEN[branch])))


def test_scan_would_catch_a_missing_branch(monkeypatch):
    # The check above fails for a branch the table lacks (here: 580 taken out).
    branches = dict(support.DRIVER_SUPPORT['branches'])
    branches.pop('580')
    monkeypatch.setitem(support.DRIVER_SUPPORT, 'branches', branches)
    assert '580' in ARCHIVE_SEEN and '580' not in support.known_branches()


def test_table_rows_are_well_formed():
    for branch, row in support.DRIVER_SUPPORT['branches'].items():
        assert re.match(r'^[0-9]{3}$', branch)
        if row['confirmed']:
            assert row['kind'] in support.KIND_NAMES and re.match(r'^20[0-9]{2}-[01][0-9]$', row['eol'])
        else:
            assert row['kind'] is None and row['eol'] is None
    assert not set(support.DRIVER_SUPPORT['branches']) & set(support.DRIVER_SUPPORT['archive_branches'])


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


def test_node_names_in_the_order_the_engine_tries_them():
    assert support.node_names('gpu-01.example.internal', 'gpu01', 'gpu-a') == ['gpu-01.example.internal', 'gpu01', 'gpu-a']
    assert support.node_names(None, 'gpu01', 'gpu-a') == ['gpu01', 'gpu-a']
    assert support.node_names('  ', None, 'gpu-a') == ['gpu-a']
    with pytest.raises(ValueError) as err:
        support.node_names('GPU_01', 'gpu01', 'gpu-a')
    assert 'baremetal_gpu_node_name must be a Kubernetes node name' in str(err.value)


def test_cluster_components_in_install_order_with_their_switches():
    rows = support.cluster_components()
    roles = [row['role'] for row in rows]
    # The RuntimeClass first (device_plugin and dcgm_exporter refuse to install without it); kube_prometheus before
    # dcgm_exporter (its ServiceMonitor needs the CRD).
    assert roles[0] == 'runtime_class'
    assert roles.index('kube_prometheus') < roles.index('dcgm_exporter')
    assert {'device_plugin', 'dcgm_exporter', 'kube_prometheus'} <= set(row['role'] for row in rows if row['chart'])
    assert all(row['enabled'] for row in rows)
    off = support.cluster_components({'cluster_addons_kube_prometheus_enabled': False})
    assert [row['role'] for row in off if not row['enabled']] == ['kube_prometheus']
    # Every switch is a cluster_addons_* variable and names one component.
    assert len(set(row['switch'] for row in rows)) == len(rows)
    assert all(row['switch'].startswith('cluster_addons_') and row['switch'].endswith('_enabled') for row in rows)
