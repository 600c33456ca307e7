# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""MIG layouts (plugins/module_utils/mig.py) against mig-parted's real config files (tests/fixtures/mig-parted,
copied from NVIDIA/mig-parted v0.15.0; SOURCE.md there)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import gzip
import os

import pytest
import yaml

from ansible_collections.baremetal.gpu.plugins.module_utils import mig
from ansible_collections.baremetal.gpu.plugins.module_utils import nvidia_smi as smi

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'mig-parted')
SMI_FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'nvidia-smi-xml')
FILES = ['examples__config.yaml', 'examples__dgx-station-80gb-config.yaml', 'deployments__systemd__config-default.yaml']


def text(name):
    """A fixture's text (kept gzipped, byte for byte: ansible-test's yamllint would judge the upstream files' style)."""
    with gzip.open(os.path.join(FIXTURES, name + '.gz'), 'rt', encoding='utf-8') as handle:
        return handle.read()


def load(name):
    return yaml.safe_load(text(name))


H100 = '0x233010DE'   # H100 80GB HBM3 (SXM5), as nvidia-smi's pci_device_id gives it


@pytest.mark.parametrize('name', FILES)
def test_the_real_layout_files_are_valid(name):
    assert mig.spec_errors(load(name)) == []


def filtered_layouts():
    """(layout, device) for every entry of mig-parted's default configs that names its devices (device-filter)."""
    spec = load('deployments__systemd__config-default.yaml')
    pairs = set()
    for name, entries in spec['mig-configs'].items():
        for entry in entries:
            wanted = entry.get('device-filter')
            for device in ([wanted] if isinstance(wanted, str) else wanted or []):
                pairs.add((name, mig.device_id(device)))
    return spec, sorted(pairs)


def test_every_model_of_the_table_is_one_the_default_configs_name():
    _spec, pairs = filtered_layouts()
    named = set(device for _name, device in pairs)
    assert sorted(set(mig.MODELS) - named) == []


def test_the_default_configs_fit_the_table_for_every_model_it_has():
    """Each layout of the default configs that names its devices applies on each of those the table has (the
    Blackwell models are not in the table yet: their layouts are refused, named, below)."""
    spec, pairs = filtered_layouts()
    checked = [(name, device) for name, device in pairs if device in mig.MODELS]
    assert len(checked) >= 20
    assert [(n, d, mig.layout_errors(spec, n, d)) for n, d in checked if mig.layout_errors(spec, n, d)] == []


def commented_layouts():
    """(layout, model name) for each layout of mig-parted's default configs and each GPU model the comment above it
    names (a comment holds for the layouts below it up to the next one)."""
    names, pairs = [], []
    for line in text('deployments__systemd__config-default.yaml').splitlines(True):
        if line.startswith('  # '):
            names = [n.strip() for n in line[4:].split(',')]
        elif line.startswith('  ') and not line.startswith('   ') and line.rstrip().endswith(':'):
            pairs += [(line.strip()[:-1], n) for n in names]
    return pairs


def test_the_default_configs_fit_the_table_for_the_models_their_comments_name():
    """The layouts of the default configs without device filters name their GPU models in comments only: each one
    applies on a GPU of each model of the table its comment names."""
    spec = load('deployments__systemd__config-default.yaml')
    devices = {}
    for device, model in sorted(mig.MODELS.items()):
        for name in model['name'].split(', '):
            devices.setdefault(name, device)
    checked = [(layout_name, devices[name]) for layout_name, name in commented_layouts() if name in devices]
    assert len(checked) >= 40
    assert [(n, d, mig.layout_errors(spec, n, d)) for n, d in checked if mig.layout_errors(spec, n, d)] == []


def test_a_model_not_in_the_table_is_refused_with_its_device_id():
    spec, _pairs = filtered_layouts()
    assert mig.layout_errors(spec, 'all-balanced', '0x290110DE') == [   # B200
        'layout all-balanced: the GPU with PCI device ID 0x290110DE is not in the MIG table '
        '(plugins/module_utils/mig.py MODELS)']
    # A layout that keeps MIG off needs no table.
    assert mig.layout_errors(spec, 'all-disabled', '0x1EB810DE') == []   # Tesla T4


def layout(profiles):
    return {'version': 'v1', 'mig-configs': {'pool': [{'devices': 'all', 'mig-enabled': True, 'mig-devices': profiles}]}}


@pytest.mark.parametrize('profiles, device, message', [
    ({'1g.18gb': 7}, H100, 'layout pool: 1g.18gb is not a MIG profile of 0x233010DE'),
    ({'1g.10gb': 8}, H100, 'layout pool: 8 x 1g.10gb, at most 7 on H100-80GB'),
    # 3 + 3 + 1 compute slices fit the 7, but 4 + 4 + 1 memory slices do not fit the 8.
    ({'3g.40gb': 2, '1g.10gb': 1}, H100, 'the instances need 7 compute and 9 memory slices; H100-80GB, H800-80GB, '
                                         'A100-80GB, A800-80GB has 7 and 8'),
    ({'4g.24gb': 1, '1g.6gb': 1}, '0x20B710DE', 'the instances need 5 compute and 5 memory slices; A30-24GB has 4 and 4'),
])
def test_a_layout_the_model_cannot_hold_is_refused(profiles, device, message):
    errors = mig.layout_errors(layout(profiles), 'pool', device)
    assert errors and message in errors[0], errors


def test_a_layout_the_model_holds_passes():
    assert mig.layout_errors(layout({'1g.10gb': 2, '2g.20gb': 1, '3g.40gb': 1}), 'pool', H100) == []
    assert mig.layout_errors(layout({'1g.18gb': 7}), 'pool', '0x233510DE') == []   # H200
    assert mig.layout_errors(layout({}), 'pool', H100) == []                       # MIG on, no instance
    assert mig.layout_errors(layout({'1g.10gb': 7}), 'other', H100) == [
        "no layout 'other' in the layout file (it has: pool)"]


@pytest.mark.parametrize('spec, message', [
    ({'version': 'v2', 'mig-configs': {'a': [{'devices': 'all', 'mig-enabled': False}]}}, 'version is v1'),
    ({'version': 'v1'}, 'mig-configs needs at least one layout'),
    ({'version': 'v1', 'mig-configs': {'a': []}}, 'mig-configs.a needs at least one entry'),
    ({'version': 'v1', 'mig-configs': {'a': [{'mig-enabled': False}]}}, 'mig-configs.a[0]: missing required field devices'),
    ({'version': 'v1', 'mig-configs': {'a': [{'devices': 'some', 'mig-enabled': False}]}},
     'devices is "all" or a list of GPU indexes'),
    ({'version': 'v1', 'mig-configs': {'a': [{'devices': 'all', 'mig-enabled': True}]}},
     'mig-devices is required when mig-enabled is true'),
    ({'version': 'v1', 'mig-configs': {'a': [{'devices': 'all', 'mig-enabled': False, 'mig-devices': {'1g.10gb': 1}}]}},
     'MIG devices given while mig-enabled is false'),
    ({'version': 'v1', 'mig-configs': {'a': [{'devices': 'all', 'mig-enabled': True, 'mig-devices': {'1g10gb': 1}}]}},
     "'1g10gb' is no MIG profile"),
    ({'version': 'v1', 'mig-configs': {'a': [{'devices': 'all', 'mig-enabled': True, 'mig-devices': {'1g.10gb': 0}}]}},
     'every count in mig-devices is 0'),
    ({'version': 'v1', 'mig-configs': {'a': [{'devices': 'all', 'mig-enabled': 'yes', 'mig-devices': {}}]}},
     'mig-enabled is true or false'),
    ({'version': 'v1', 'mig-configs': {'a': [{'devices': [0], 'device-filter': 'H100', 'mig-enabled': False}]}},
     'device-filter is a PCI device ID'),
    ({'version': 'v1', 'mig-configs': {'a': [{'devices': 'all', 'mig-enabled': False, 'gpus': 2}]}},
     'unexpected field gpus'),
])
def test_what_mig_parted_refuses_is_refused(spec, message):
    errors = mig.spec_errors(spec)
    assert any(message in e for e in errors), errors


def test_device_ids_from_nvidia_smi_and_lspci():
    assert mig.device_id('0x233010DE') == H100
    assert mig.device_id('0x233010de') == H100
    assert mig.device_id('10de:2330') == H100
    assert mig.device_id('N/A') == ''


SITE = {'all-1g.10gb': [{'devices': 'all', 'mig-enabled': True, 'mig-devices': {'1g.10gb': 7}}],
        'h200-1g': [{'devices': 'all', 'device-filter': '0x233510DE', 'mig-enabled': True, 'mig-devices': {'1g.18gb': 7}}]}


def test_the_site_file_gets_all_disabled_and_is_what_mig_parted_reads():
    spec = mig.layout_file(SITE)
    assert spec['version'] == 'v1' and spec['mig-configs']['all-disabled'] == [{'devices': 'all', 'mig-enabled': False}]
    assert mig.spec_errors(spec) == [] and mig.layouts_errors(SITE) == []
    # A site's own all-disabled is kept as it is.
    own = {'all-disabled': [{'devices': [0], 'mig-enabled': False}]}
    assert mig.layout_file(own)['mig-configs'] == own
    assert mig.layout_profiles(SITE, 'all-1g.10gb') == ['1g.10gb'] and mig.layout_profiles(SITE, 'nope') == []


def test_a_node_layout_is_checked_against_each_gpu_model_once():
    # Two H100s (nvidia-smi's form and lspci's form of the same ID): one message, not two.
    assert mig.node_layout_errors(SITE, 'all-1g.10gb', ['0x233010DE', '10de:2330']) == []
    assert mig.node_layout_errors(SITE, 'all-1g.10gb', ['0x233510DE']) == [
        'layout all-1g.10gb: 1g.10gb is not a MIG profile of 0x233510DE (H200-141GB, H200 NVL offers 1g.18gb, '
        '1g.18gb+me, 1g.35gb, 2g.35gb, 3g.71gb, 4g.71gb, 7g.141gb)']
    # The filtered entry applies to H200s only: nothing to create on an H100, so nothing to refuse.
    assert mig.node_layout_errors(SITE, 'h200-1g', ['0x233010DE', '0x233510DE']) == []
    assert mig.node_layout_errors(SITE, 'all-disabled', ['0x1EB810DE']) == []
    assert mig.node_layout_errors(SITE, 'other', []) == [
        "no layout 'other' in the layout file (it has: all-1g.10gb, all-disabled, h200-1g)"]


def test_what_the_device_plugin_advertises_once_a_layout_is_applied():
    layouts = {'split': [{'devices': [0], 'mig-enabled': True, 'mig-devices': {'3g.40gb': 2}},
                         {'devices': [1], 'mig-enabled': False}]}
    ids = ['233010DE', '233010DE']
    assert mig.capacity(layouts, 'split', 'mixed', ids) == [
        {'resource': 'nvidia.com/mig-3g.40gb', 'count': 2}, {'resource': 'nvidia.com/gpu', 'count': 1}]
    assert mig.capacity(SITE, 'all-1g.10gb', 'single', ids) == [{'resource': 'nvidia.com/gpu', 'count': 14}]
    # all-disabled: the GPUs themselves.
    assert mig.capacity(SITE, 'all-disabled', 'single', ids) == [{'resource': 'nvidia.com/gpu', 'count': 2}]


def _result(rc, stderr='', stdout=''):
    return {'rc': rc, 'stderr': stderr, 'stdout': stdout, 'changed': False}


def test_what_nvidia_mig_parted_assert_said():
    """The real tool's messages (cmd/nvidia-mig-parted/assert/assert.go of NVIDIA/mig-parted v0.15.0)."""
    assert mig.assert_reasons(_result(0, stdout='Selected MIG configuration currently applied'), 'all-1g.10gb') == []
    assert mig.assert_reasons(_result(1, 'Error: assertion failure: selected configuration not currently applied'),
                              'all-1g.10gb') == ['the GPUs do not have MIG layout all-1g.10gb (nvidia-mig-parted assert)']
    assert mig.assert_reasons({'skipped': True, 'changed': False}, 'all-1g.10gb', '/usr/bin/nvidia-mig-parted') == [
        '/usr/bin/nvidia-mig-parted is not installed: MIG layout all-1g.10gb to apply once nvidia-mig-manager is '
        '(mig_manager_package)']
    # No layout: nothing asked, nothing to change.
    assert mig.assert_reasons({'skipped': True}, '') == []
    # Anything else leaves the GPUs' state unknown: an error, never a guess.
    with pytest.raises(ValueError, match='could not read the GPUs or the layouts .rc 1.: Error: error selecting MIG '
                                         'config: selected mig-config not present: x'):
        mig.assert_reasons(_result(1, 'Error: error selecting MIG config: selected mig-config not present: x'), 'x')


def test_the_mode_changes_that_wait_for_a_boot():
    """From what the nvidia_smi module read: the real H100 capture (MIG Disabled, pending Disabled) has none; the same
    GPU after a mode change it could not be reset for (pending Enabled) has one; GPUs without MIG (the GeForce capture:
    N/A) never do."""
    h100 = smi.parse_nvidia_smi_xml(fixture('device__h100-80gb-hbm3__580.159.04.xml'))['gpus']
    assert mig.pending_modes(h100) == []
    changed = [dict(h100[0], mig_mode_pending='Enabled')]
    assert mig.pending_modes(changed) == ['GPU 0 (00000000:00:06.0): MIG mode Enabled pending, Disabled now']
    geforce = smi.parse_nvidia_smi_xml(fixture('telegraf__3090-v13.xml'))['gpus']
    assert mig.pending_modes(geforce) == [] and geforce[0]['mig_mode_pending'] is None
    assert mig.pending_modes([]) == [] and mig.pending_modes(None) == []


def fixture(name):
    with open(os.path.join(SMI_FIXTURES, name), 'rb') as handle:
        return handle.read()
