# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugins/module_utils/preflight.py (filter baremetal.gpu.preflight_findings): the preflight role's blockers and warnings.

The real input is the preflight report a lent H100 machine gave (tests/fixtures/device/h100-vm-2026-11-26, computed
there by the role's earlier Jinja templates): the function must say exactly what they said. The other reports are
that one with single facts changed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import os

from ansible_collections.baremetal.gpu.plugins.module_utils import preflight, support

FIXTURE = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'device', 'h100-vm-2026-11-26',
                       'preflight-report.json')
with open(FIXTURE, encoding='utf-8') as handle:
    H100 = list(json.load(handle)['hosts'].values())[0]


def report(**changes):
    out = copy.deepcopy(H100)
    out.update(changes)
    return out


def test_the_h100_report_says_what_the_machine_said():
    got = preflight.findings(H100, True, 2048)
    assert got == {'blockers': H100['blockers'], 'warnings': H100['warnings']}


def test_every_blocker_in_order():
    plan = dict(H100['driver_plan'], errors=['branch 999 does not exist'])
    got = preflight.blockers(report(os='Gentoo 2', os_supported=False, architecture='ppc64le', architecture_supported=False,
                                    gpus=[], dkms_disk_free_mb=512, driver_install_method='runfile', driver_plan=plan),
                             True, 2048, support.supported_os_keys(), list(support.ARCHITECTURES))
    assert [line.split(' ')[0] for line in got] == ['Gentoo', 'architecture', 'no', 'only', 'a', 'nvidia_driver']
    assert got[0] == "Gentoo 2 is not in the collection's OS matrix (%s): use one of those" % ', '.join(support.supported_os_keys())
    assert got[1] == 'architecture ppc64le is not supported (x86_64, aarch64)'
    assert got[3] == ('only 512 MiB free under %s, the driver packages and DKMS build need 2048 MiB (preflight_dkms_min_free_mb):'
                      ' free some space' % H100['dkms_disk_path'])
    assert got[5] == 'nvidia_driver would refuse: branch 999 does not exist'
    # No GPU is a warning instead where the node may have none; the disk limit is read as Jinja's int reads it.
    relaxed = preflight.findings(report(gpus=[], driver_plan=dict(plan, errors=[])), False, '100')
    assert relaxed['blockers'] == []
    assert 'no NVIDIA GPU on the PCI bus (allowed here: preflight_require_gpu is false)' in relaxed['warnings']


def test_warnings_follow_the_node():
    plan = dict(H100['driver_plan'], module_build='dkms', kernel_module='open', kernel_module_reason='Hopper runs the open modules',
                branch_warning='')
    got = preflight.warnings(report(nouveau_loaded=True, secure_boot='enabled', nvidia_loaded_flavour='proprietary',
                                    driver_plan=plan, kernel_headers_for_running=True, driver_install_method='package',
                                    rke2=dict(H100['rke2'], present=True, role='', role_reason='both units are enabled',
                                              kubeconfig_mode='0644')), True)
    assert got == [
        'nouveau is loaded: the nvidia_driver role blacklists it and reboots (nvidia_driver_reboot_enabled)',
        'Secure Boot is enabled: unsigned DKMS modules are refused; set nvidia_driver_secure_boot: sign (enroll the MOK key'
        " at the console on the next boot), use Ubuntu's signed prebuilt modules (nvidia_driver_module_build: prebuilt),"
        ' or disable Secure Boot in the firmware',
        'the loaded nvidia module is the proprietary flavour; nvidia_driver will install the open one (Hopper runs the open'
        ' modules) and reboot',
        'RKE2 role unclear: both units are enabled',
        '/etc/rancher/rke2/rke2.yaml is world-readable (mode 0644): set write-kubeconfig-mode: "0600" in /etc/rancher/rke2/config.yaml',
    ]
    # Canonical's signed prebuilt modules need no signing, and no headers; nouveau unreadable is said as such.
    quiet = preflight.warnings(report(nouveau_loaded='unknown', secure_boot='enabled', driver_install_method='package',
                                      driver_plan=dict(plan, module_build='prebuilt', kernel_module=''),
                                      rke2=dict(H100['rke2'], present=True, role='agent', kubeconfig_mode='0600')), True)
    assert quiet == ['nouveau state unknown: /proc/modules is not readable (a container?)']


def test_a_mig_layout_the_gpu_cannot_hold_blocks_the_node():
    """The H100 the device machine showed (its gpu_node_facts GPUs, device_id 0x2330), in pools of MIG layouts."""
    from ansible_collections.baremetal.gpu.plugins.module_utils import mig
    layouts = {'all-1g.10gb': [{'devices': 'all', 'mig-enabled': True, 'mig-devices': {'1g.10gb': 7}}],
               'all-1g.18gb': [{'devices': 'all', 'mig-enabled': True, 'mig-devices': {'1g.18gb': 7}}]}
    profiles = {'h100': {'sharing': 'mig', 'mig_layout': 'all-1g.10gb'},
                'h200': {'sharing': 'mig', 'mig_layout': 'all-1g.18gb'}, 'ts4': {'sharing': 'time-slicing', 'replicas': 4}}
    ids = [g['device_id'] for g in H100['gpus']]
    config = mig.layout_file(layouts)
    assert mig.node_plan(profiles, '', 'h100', layouts, ids) == {
        'profile': 'h100', 'layout': 'all-1g.10gb', 'strategy': 'single', 'config': config, 'errors': []}
    assert mig.node_plan(profiles, '', 'ts4', layouts, ids) == {
        'profile': 'ts4', 'layout': '', 'strategy': 'single', 'config': config, 'errors': []}
    # A node mig_manager configured before, whose profile is no MIG profile any more, goes back to whole GPUs.
    assert mig.node_plan(profiles, '', 'ts4', layouts, ids, ours=True)['layout'] == 'all-disabled'
    assert mig.node_plan(dict(profiles, h100=dict(profiles['h100'], mig_strategy='mixed')), '', 'h100', layouts,
                         ids, ours=True)['layout'] == 'all-1g.10gb'
    assert mig.node_plan(dict(profiles, h100=dict(profiles['h100'], mig_strategy='mixed')), '', 'h100', layouts,
                         ids)['strategy'] == 'mixed'
    wrong = mig.node_plan(profiles, 'h200', '', layouts, ids)
    assert wrong['errors'] == [
        'device_plugin_sharing_default_profile h200 (mig_layout all-1g.18gb of baremetal_gpu_mig_layouts): layout '
        'all-1g.18gb: 1g.18gb is not a MIG profile of 0x233010DE (H100-80GB, H800-80GB, A100-80GB, A800-80GB offers '
        '1g.10gb, 1g.10gb+me, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb)']
    got = preflight.blockers(report(mig=wrong), True, 2048, support.supported_os_keys(), list(support.ARCHITECTURES))
    # After what the machine itself was blocked by.
    assert got == H100['blockers'] + ['the MIG layout of its sharing profile cannot be applied: ' + wrong['errors'][0]]
