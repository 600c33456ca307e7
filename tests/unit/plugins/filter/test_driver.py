# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filters of plugins/filter/driver.py, on captured outputs (tests/fixtures/apt, tests/fixtures/dkms, tests/fixtures/initramfs)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.baremetal.gpu.plugins.filter import driver

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures')
FILTERS = driver.FilterModule().filters()


def fixture(*path):
    with open(os.path.join(FIXTURES, *path)) as handle:
        return handle.read()


def test_apt_simulation_filter_adds_branches_and_changes():
    out = FILTERS['apt_simulation'](fixture('apt', 'ubuntu2204-simulate-525.txt'), '^nvidia-kernel-common-[0-9]+$')
    assert out['final'] == '580' and out['changes'] is True
    nothing = FILTERS['apt_simulation']('Reading package lists...\nnvidia-utils-580 is already the newest version (1).\n')
    assert nothing['changes'] is False and nothing['final'] == ''


def test_dkms_status_filter():
    out = FILTERS['dkms_status'](fixture('dkms', 'ubuntu2204-dkms2.8.7-status.txt'), 'nvidia', ['5.15.0-25-generic'])
    assert out['missing'] == [] and out['versions'] == ['580.178.04'] and len(out['entries']) == 1


def test_dkms_build_error_filter():
    out = FILTERS['dkms_build_error'](fixture('dkms', 'debian13-apt-install-open-failed-excerpt.txt'))
    assert out['make_logs'] == ['/var/lib/dkms/nvidia-current-open/550.163.01/build/make.log']


def test_modinfo_filter():
    out = FILTERS['modinfo'](fixture('dkms', 'ubuntu2404-modinfo-nvidia-580-open-prebuilt.txt'))
    assert (out['flavour'], out['version'], out['signer']) == ('open', '580.178.04', 'Canonical Ltd. Kernel Module Signing')


def test_initramfs_contains():
    listing = 'usr/lib/modules\netc/modprobe.d/blacklist-nouveau.conf\n./etc/modprobe.d/other.conf\n'
    assert FILTERS['initramfs_contains'](listing, '/etc/modprobe.d/blacklist-nouveau.conf') is True
    assert FILTERS['initramfs_contains'](listing, '/etc/modprobe.d/other.conf') is True
    assert FILTERS['initramfs_contains'](listing, '/etc/modprobe.d/none.conf') is False
    assert FILTERS['initramfs_contains']('', '/etc/x') is False


def test_reboot_decision_filter_strips_the_boot_id():
    out = FILTERS['nvidia_reboot_decision'](['nouveau is loaded'], {'boot_id': 'a', 'reasons': ['nouveau is loaded']}, 'b\n')
    assert out['action'] == 'fail'
    assert FILTERS['nvidia_reboot_decision'](['nouveau is loaded'], {}, 'b')['action'] == 'reboot'


def test_driver_plan_filter_rejects_wrong_types():
    with pytest.raises(AnsibleFilterError):
        FILTERS['driver_plan']([], {}, {})


def test_gpg_filter():
    out = FILTERS['gpg_primary_fingerprints'](fixture('apt', 'gpg-show-keys-ubuntu-archive-keyring.txt'))
    assert 'F6ECB3762474EDA9D21B7022871920D1991BC93C' in out


def test_reboot_record_after_a_reboot():
    back = FILTERS['nvidia_reboot_record_after']({'gpus': [{'address': '0000:00:06.0'}], 'nvidia_loaded_version': '595.45.04',
                                                  'driver_installed_versions': ['595.45.04'], 'container': False})
    assert back == {'action': 'clear', 'message': 'the reboot cleared every reason it was done for', 'reasons': []}
    stuck = FILTERS['nvidia_reboot_record_after']({'gpus': [{'address': '0000:00:06.0'}], 'nvidia_loaded_version': '',
                                                   'driver_installed_versions': ['595.45.04'], 'container': False})
    assert stuck['action'] == 'keep' and stuck['reasons'] == ['an NVIDIA GPU is present but no nvidia module is loaded']


def test_desired_state_filters():
    assert FILTERS['driver_upgrade_target']('595', None)['branch'] == '595'
    assert FILTERS['driver_upgrade_target']('595', '580')['errors']
    got = FILTERS['driver_desired_branch']({'driver_installed_branches': ['595']}, None, '580')
    assert got['branch'] == '595' and got['source'] == 'installed'


# tests/fixtures/initramfs: a real listing of the Debian 12 node's initramfs and the role's record of it.
BLACKLIST = '/etc/modprobe.d/blacklist-nouveau.conf'
KERNEL = '6.1.0-50-amd64'
CHECKSUM = 'a3123d4199bdc713d0da2f456b9a94024c50b36a88ed8bde29d0cf0b943dc980'


def record():
    return json.loads(fixture('initramfs', 'debian12-initramfs-record.json'))


def test_initramfs_contains_reads_a_real_listing():
    listing = fixture('initramfs', 'debian12-lsinitramfs-etc-nvidia-535-dkms.txt')
    assert FILTERS['initramfs_contains'](listing, BLACKLIST) is True
    assert FILTERS['initramfs_contains'](listing, '/etc/modprobe.d/nvidia-blacklists-nouveau.conf') is True
    assert FILTERS['initramfs_contains'](listing, '/etc/modprobe.d/blacklist-nouveau-other.conf') is False


def test_initramfs_verified_needs_the_recorded_mtime_and_checksum():
    rec = record()
    now = {KERNEL: {'exists': True, 'mtime': 1795746562.1565633, 'blacklist': CHECKSUM}}
    assert FILTERS['initramfs_verified'](now, rec) == [KERNEL]
    # What the committed image showed: the same file, its mtime without the sub-second part.
    committed = {KERNEL: {'exists': True, 'mtime': 1795746562.0, 'blacklist': CHECKSUM}}
    assert FILTERS['initramfs_verified'](committed, rec) == []
    changed = {KERNEL: {'exists': True, 'mtime': 1795746562.1565633, 'blacklist': 'another'}}
    assert FILTERS['initramfs_verified'](changed, rec) == []
    gone = {KERNEL: {'exists': False, 'blacklist': CHECKSUM}}
    assert FILTERS['initramfs_verified'](gone, rec) == []
    assert FILTERS['initramfs_verified'](now, {}) == []
    assert FILTERS['initramfs_verified'](now) == []


def test_initramfs_stale_from_the_listing_loop():
    listing = fixture('initramfs', 'debian12-lsinitramfs-etc-nvidia-535-dkms.txt')
    now = {KERNEL: {'exists': True, 'mtime': 1795746562.0, 'blacklist': CHECKSUM}, 'new': {'exists': False}}
    older_file = {'exists': True, 'mtime': 1795745922.0}   # the blacklist on that node, written before the initramfs
    ok = {'item': KERNEL, 'rc': 0, 'stdout': listing}
    assert FILTERS['initramfs_stale']([ok], now, BLACKLIST, older_file) == []
    assert FILTERS['initramfs_stale']([ok], now, BLACKLIST) == []
    newer_file = {'exists': True, 'mtime': 1795746600.0}
    assert FILTERS['initramfs_stale']([ok], now, BLACKLIST, newer_file) == [KERNEL]
    without = {'item': KERNEL, 'rc': 0, 'stdout': listing.replace('etc/modprobe.d/blacklist-nouveau.conf\n', '')}
    assert FILTERS['initramfs_stale']([without], now, BLACKLIST, older_file) == [KERNEL]
    failed = {'item': KERNEL, 'rc': 1, 'stdout': listing}
    skipped = {'item': KERNEL, 'skipped': True}
    assert FILTERS['initramfs_stale']([failed], now, BLACKLIST, older_file) == [KERNEL]
    assert FILTERS['initramfs_stale']([skipped], now, BLACKLIST, older_file) == [KERNEL]
    missing = {'item': 'new', 'rc': 0, 'stdout': listing}
    assert FILTERS['initramfs_stale']([ok, missing], now, BLACKLIST, older_file) == ['new']
    assert FILTERS['initramfs_stale']([], now, BLACKLIST) == []


def test_fingerprint_changes_filter():
    before = {'digest': 'a', 'inputs': {'path:/var/lib/dpkg/status': '1', 'content:/proc/modules': '2'}}
    now = {'digest': 'b', 'inputs': {'path:/var/lib/dpkg/status': '3', 'content:/proc/modules': '2'}}
    assert driver.FilterModule().filters()['fingerprint_changes'](before, now) == ['path:/var/lib/dpkg/status']
    with pytest.raises(AnsibleFilterError, match='two fingerprints'):
        driver.fingerprint_changes('x', now)
