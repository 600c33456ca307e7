# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""CDI spec/runtime checks and gpg fingerprint parsing, on real captured outputs.

gpg outputs: `gpg --show-keys --with-colons` of Debian's and Ubuntu's archive keyrings on the test
nodes (tests/fixtures/gpg/SOURCE.md). Runtime data: tests/fixtures/containerd/SOURCE.md.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.baremetal.gpu.plugins.module_utils import cdi, gpg

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures')


def fixture(*parts):
    with open(os.path.join(FIXTURES, *parts), encoding='utf-8') as handle:
        return handle.read()


def test_one_primary_key_and_no_subkey():
    colons = fixture('gpg', 'debian-archive-bookworm-stable.colons')
    assert gpg.primary_fingerprints(colons) == ['4D64FEC119C2029067D6E791F8D2585B8783D481']
    ok, found, msg = gpg.check_key(colons, '4D64 FEC1 19C2 0290 67D6  E791 F8D2 585B 8783 D481')
    assert ok and found == ['4D64FEC119C2029067D6E791F8D2585B8783D481']


def test_subkeys_are_not_primary_fingerprints():
    colons = fixture('gpg', 'debian-archive-keyring-debian12.colons')
    primaries = gpg.primary_fingerprints(colons)
    every_fpr = [line.split(':')[9] for line in colons.splitlines() if line.startswith('fpr:')]
    assert len(every_fpr) > len(primaries) > 1  # the keyring has subkeys
    assert '4D64FEC119C2029067D6E791F8D2585B8783D481' in primaries


def test_ubuntu_keyring_holds_both_archive_keys():
    primaries = gpg.primary_fingerprints(fixture('gpg', 'ubuntu-archive-keyring-noble.colons'))
    assert 'F6ECB3762474EDA9D21B7022871920D1991BC93C' in primaries
    assert '790BC7277767219C42C86F933B4FE6ACC0B21F32' in primaries


def test_a_keyring_of_many_keys_is_refused_even_with_the_pinned_one_in_it():
    ok, found, msg = gpg.check_key(fixture('gpg', 'ubuntu-archive-keyring-noble.colons'),
                                   'F6ECB3762474EDA9D21B7022871920D1991BC93C')
    assert not ok and len(found) > 1 and msg.startswith('expected exactly one primary key')


def test_wrong_key_and_no_key():
    ok, _found, msg = gpg.check_key(fixture('gpg', 'debian-archive-bookworm-stable.colons'),
                                    'C95B321B61E88C1809C4F759DDCAE044F796ECB0')
    assert not ok and 'C95B321B61E88C1809C4F759DDCAE044F796ECB0' in msg and '4D64FEC1' in msg
    assert gpg.check_key('', 'C95B321B61E88C1809C4F759DDCAE044F796ECB0')[2].endswith('found no key')


@pytest.mark.parametrize('value,valid', [('C95B 321B 61E8 8C18 09C4  F759 DDCA E044 F796 ECB0', True),
                                         ('DDCAE044F796ECB0', False), ('x' * 40, False)])
def test_fingerprint_format(value, valid):
    assert gpg.valid_fingerprint(value) is valid


def test_library_versions_from_real_packages():
    assert cdi.library_from_built_using(fixture('containerd', 'containerd-1.7.24-debian13.built-using.txt')) == '0.8.0'
    assert cdi.library_from_built_using(fixture('containerd', 'containerd-2.2.1-ubuntu2404.built-using.txt')) == ''
    # The Go build information line as Ubuntu's containerd 2.2.1 carries it (SOURCE.md).
    data = b'\x00path\tgithub.com/containerd/containerd/v2\n' \
           b'dep\ttags.cncf.io/container-device-interface\tv1.1.0\th1:abc=\n'
    assert cdi.library_from_buildinfo(data) == '1.1.0'
    assert cdi.library_from_buildinfo(b'no build info') == ''


@pytest.mark.parametrize('spec,library,expected', [
    ('0.5.0', '0.8.0', True), ('0.8.0', '0.8.0', True), ('0.7.0', '0.6.2', False), ('1.0.0', '0.8.0', False),
    ('0.7.0', '1.1.0', True), ('0.5.0', '', None), ('', '1.1.0', False)])
def test_readable(spec, library, expected):
    assert cdi.readable(spec, library)[0] is expected


def test_spec_info_yaml_and_json():
    assert cdi.spec_info('---\ncdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices: []\n') == \
        {'version': '0.5.0', 'kind': 'nvidia.com/gpu'}
    assert cdi.spec_info('{"cdiVersion": "0.7.0", "kind": "nvidia.com/gpu"}') == \
        {'version': '0.7.0', 'kind': 'nvidia.com/gpu'}
    assert cdi.spec_info('nothing')['version'] == ''


@pytest.mark.parametrize('name,expected', [
    ('dockerd-debian12.version.txt', {'version': '20.10.24', 'supported': False, 'default_on': False, 'feature_needed': False}),
    ('dockerd-debian13.version.txt', {'version': '26.1.5', 'supported': True, 'default_on': False, 'feature_needed': True}),
    ('dockerd-ubuntu2404.version.txt', {'version': '29.1.3', 'supported': True, 'default_on': True, 'feature_needed': False}),
])
def test_docker_cdi_of_real_versions(name, expected):
    assert cdi.docker_cdi(fixture('containerd', name)) == expected
