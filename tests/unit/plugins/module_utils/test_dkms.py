# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""dkms status, DKMS build errors and modinfo on outputs captured from real nodes (tests/fixtures/dkms)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.baremetal.gpu.plugins.module_utils import dkms

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'dkms')


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def test_dkms_2_8_7_ubuntu_2204_installed():
    entries = dkms.parse_status(fixture('ubuntu2204-dkms2.8.7-status.txt'))
    assert entries == [{'module': 'nvidia', 'version': '580.178.04', 'kernel': '5.15.0-25-generic', 'arch': 'x86_64',
                        'state': 'installed', 'note': ''}]
    summary = dkms.summary(entries, 'nvidia', ['5.15.0-25-generic'])
    assert summary['built'] == {'5.15.0-25-generic': '580.178.04'} and summary['missing'] == []


def test_dkms_3_2_2_debian_13_added_only_is_not_built():
    entries = dkms.parse_status(fixture('debian13-dkms3.2.2-status-open-added.txt'))
    assert entries == [{'module': 'nvidia-current-open', 'version': '550.163.01', 'kernel': None, 'arch': None,
                        'state': 'added', 'note': ''}]
    summary = dkms.summary(entries, 'nvidia-current-open', ['6.12.107+deb13-amd64'])
    assert summary['missing'] == ['6.12.107+deb13-amd64']
    assert summary['states'] == ['nvidia-current-open/550.163.01: added']


def test_dkms_3_2_2_after_a_failed_build_is_still_added():
    entries = dkms.parse_status(fixture('debian13-dkms3.2.2-status-open-failed-build.txt'))
    assert [e['state'] for e in entries] == ['added']


def test_old_comma_format_and_notes():
    text = ('nvidia, 535.261.03, 6.1.0-50-amd64, x86_64: installed\n'
            'nvidia/580.178.04, 6.8.0-149-generic, x86_64: installed (original_module exists)\n'
            'nvidia/580.178.04, 6.8.0-150-generic, x86_64: built (WARNING! Diff between built and installed module!)\n'
            'Error! Could not locate dkms.conf file.\n')
    entries = dkms.parse_status(text)
    assert [(e['module'], e['version'], e['kernel'], e['state']) for e in entries] == [
        ('nvidia', '535.261.03', '6.1.0-50-amd64', 'installed'),
        ('nvidia', '580.178.04', '6.8.0-149-generic', 'installed'),
        ('nvidia', '580.178.04', '6.8.0-150-generic', 'built')]
    assert entries[1]['note'] == 'original_module exists'
    summary = dkms.summary(entries, 'nvidia', ['6.8.0-149-generic', '6.8.0-150-generic'])
    assert summary['missing'] == ['6.8.0-150-generic']
    assert summary['versions'] == ['535.261.03', '580.178.04']


def test_make_log_and_errors_of_a_failed_autoinstall():
    text = fixture('debian13-dkms3.2.2-autoinstall-open-failed.txt')
    assert dkms.make_logs(text) == ['/var/lib/dkms/nvidia-current-open/550.163.01/build/make.log']
    assert dkms.build_errors(text)[0] == 'Error! Bad return status for module build on kernel: 6.12.107+deb13-amd64 (x86_64)'


def test_make_log_of_a_failed_apt_install():
    text = fixture('debian13-apt-install-open-failed-excerpt.txt')
    assert dkms.make_logs(text) == ['/var/lib/dkms/nvidia-current-open/550.163.01/build/make.log']
    assert 'E: Sub-process /usr/bin/dpkg returned an error code (1)' in dkms.build_errors(text)


def test_modinfo_open_prebuilt():
    fields = dkms.parse_modinfo(fixture('ubuntu2404-modinfo-nvidia-580-open-prebuilt.txt'))
    assert fields['filename'] == '/lib/modules/6.8.0-149-generic/kernel/nvidia-580-open/nvidia.ko'
    assert fields['license'] == 'Dual MIT/GPL' and fields['version'] == '580.178.04'
    assert fields['signer'] == 'Canonical Ltd. Kernel Module Signing'
    assert fields['firmware'] == ['nvidia/580.178.04/gsp_tu10x.bin', 'nvidia/580.178.04/gsp_ga10x.bin']
    assert fields['signature'].startswith('4C:F1:0B:34') and fields['signature'].endswith('0D:39:24:14:F1')
    assert dkms.flavour_of_license(fields['license']) == 'open'


def test_modinfo_proprietary_dkms():
    fields = dkms.parse_modinfo(fixture('ubuntu2204-modinfo-nvidia-580-proprietary-dkms.txt'))
    assert fields['license'] == 'NVIDIA' and dkms.flavour_of_license('NVIDIA') == 'proprietary'
    assert '/updates/dkms/' in fields['filename']
    assert dkms.flavour_of_license('GPL') == ''
