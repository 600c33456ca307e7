# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""apt text parsing on outputs captured from the four test nodes (tests/fixtures/apt, SOURCE.md there)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

import pytest

from ansible_collections.baremetal.gpu.plugins.module_utils import apt

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'apt')
UBUNTU_COMPONENTS = ['main', 'restricted', 'universe', 'multiverse']
DEBIAN_COMPONENTS = ['main', 'contrib', 'non-free', 'non-free-firmware']


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


# ---- sources ---------------------------------------------------------------------------------------

def test_debian13_deb822_keeps_signed_by_on_the_added_components():
    """The defect of the added components must carry the node's own Signed-By."""
    entries = apt.parse_deb822(fixture('debian13-debian.sources'), '/etc/apt/sources.list.d/debian.sources')
    assert [(e['suite'], e['components']) for e in entries] == [('trixie', ['main', 'non-free-firmware']),
                                                                ('trixie-updates', ['main', 'non-free-firmware'])]
    result = apt.missing_sources(entries, 'trixie', ['', '-updates'], DEBIAN_COMPONENTS)
    assert result['mirrors'] == ['http://deb.debian.org/debian']
    assert [(m['suite'], m['components']) for m in result['missing']] == [('trixie', ['contrib', 'non-free']),
                                                                          ('trixie-updates', ['contrib', 'non-free'])]
    for missing in result['missing']:
        assert missing['options'] == {'signed-by': '/usr/share/keyrings/debian-archive-keyring.gpg'}
    assert apt.render_deb822(result['missing']) == (
        'Types: deb\n'
        'URIs: http://deb.debian.org/debian\n'
        'Suites: trixie trixie-updates\n'
        'Components: contrib non-free\n'
        'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n')


def test_ubuntu2404_deb822_keeps_signed_by_and_adds_restricted_multiverse():
    entries = apt.parse_deb822(fixture('ubuntu2404-ubuntu.sources'))
    result = apt.missing_sources(entries, 'noble', ['', '-updates', '-security'], UBUNTU_COMPONENTS)
    assert apt.render_deb822(result['missing']) == (
        'Types: deb\n'
        'URIs: http://archive.ubuntu.com/ubuntu\n'
        'Suites: noble noble-updates noble-security\n'
        'Components: restricted multiverse\n'
        'Signed-By: /usr/share/keyrings/ubuntu-archive-keyring.gpg\n')


def test_ubuntu2204_one_line_adds_the_pockets_without_signed_by():
    entries = apt.parse_one_line(fixture('ubuntu2204-sources.list'), '/etc/apt/sources.list')
    assert entries == [{'type': 'deb', 'uri': 'http://archive.ubuntu.com/ubuntu', 'suite': 'jammy',
                        'components': ['main', 'universe'], 'options': {}, 'file': '/etc/apt/sources.list',
                        'format': 'one-line'}]
    result = apt.missing_sources(entries, 'jammy', ['', '-updates', '-security'], UBUNTU_COMPONENTS)
    assert apt.render_deb822(result['missing']) == (
        'Types: deb\nURIs: http://archive.ubuntu.com/ubuntu\nSuites: jammy\nComponents: restricted multiverse\n\n'
        'Types: deb\nURIs: http://archive.ubuntu.com/ubuntu\nSuites: jammy-updates jammy-security\n'
        'Components: main restricted universe multiverse\n')


def test_debian12_one_line():
    entries = apt.parse_one_line(fixture('debian12-sources.list'))
    result = apt.missing_sources(entries, 'bookworm', [''], DEBIAN_COMPONENTS)
    assert [(m['uri'], m['suite'], m['components'], m['options']) for m in result['missing']] == [
        ('http://deb.debian.org/debian', 'bookworm', ['contrib', 'non-free', 'non-free-firmware'], {})]


def test_nothing_missing_gives_no_entries():
    text = fixture('ubuntu2404-ubuntu.sources').replace('main universe', 'main restricted universe multiverse')
    result = apt.missing_sources(apt.parse_deb822(text), 'noble', ['', '-updates', '-security'], UBUNTU_COMPONENTS)
    assert result['missing'] == [] and apt.render_deb822([]) == ''


def test_one_line_options_map_to_deb822_and_back():
    text = ('deb [arch=amd64,arm64 signed-by=/usr/share/keyrings/x.gpg] http://m/ubuntu noble main # comment\n'
            '# deb http://disabled noble main\n'
            'deb-src http://m/ubuntu noble main\n')
    entries = apt.parse_one_line(text)
    assert entries[0]['options'] == {'architectures': 'amd64 arm64', 'signed-by': '/usr/share/keyrings/x.gpg'}
    assert entries[1]['type'] == 'deb-src'
    result = apt.missing_sources(entries, 'noble', ['', '-updates'], ['main', 'restricted'])
    # The same options on every added entry: for the suite the node has and for the pocket it lacks.
    assert all(m['options'] == entries[0]['options'] for m in result['missing'])
    rendered = apt.render_deb822(result['missing'])
    assert 'Architectures: amd64 arm64\n' in rendered and 'Signed-By: /usr/share/keyrings/x.gpg\n' in rendered
    assert apt.render_one_line(result['missing']).splitlines()[0] == (
        'deb [arch=amd64,arm64 signed-by=/usr/share/keyrings/x.gpg] http://m/ubuntu noble restricted')


def test_uri_with_and_without_trailing_slash_is_one_mirror():
    text = 'deb http://m/debian/ bookworm main\ndeb http://m/debian bookworm contrib\n'
    result = apt.missing_sources(apt.parse_one_line(text), 'bookworm', [''], ['main', 'contrib', 'non-free'])
    assert result['mirrors'] == ['http://m/debian/']
    assert [m['components'] for m in result['missing']] == [['non-free']]


def test_options_of_the_same_suite_win_over_the_release_entry():
    text = ('Types: deb\nURIs: http://m/ubuntu\nSuites: noble\nComponents: main\nSigned-By: /a.gpg\n\n'
            'Types: deb\nURIs: http://m/ubuntu\nSuites: noble-updates\nComponents: main\nSigned-By: /b.gpg\n')
    result = apt.missing_sources(apt.parse_deb822(text), 'noble', ['', '-updates'], ['main', 'restricted'])
    assert [(m['suite'], m['options']['signed-by']) for m in result['missing']] == [('noble', '/a.gpg'),
                                                                                    ('noble-updates', '/b.gpg')]


def test_inline_signed_by_key_round_trips():
    text = ('Types: deb\nURIs: http://m/debian\nSuites: trixie\nComponents: main\nSigned-By:\n'
            ' -----BEGIN PGP PUBLIC KEY BLOCK-----\n .\n mQINBGX\n -----END PGP PUBLIC KEY BLOCK-----\n')
    result = apt.missing_sources(apt.parse_deb822(text), 'trixie', [''], ['main', 'contrib'])
    rendered = apt.render_deb822(result['missing'])
    assert rendered.endswith('Signed-By:\n -----BEGIN PGP PUBLIC KEY BLOCK-----\n .\n mQINBGX\n'
                             ' -----END PGP PUBLIC KEY BLOCK-----\n')
    again = apt.parse_deb822(rendered)
    assert again[0]['options'] == result['missing'][0]['options']
    with pytest.raises(apt.SourcesError):
        apt.render_one_line(result['missing'])


def test_disabled_paragraph_and_bad_lines():
    text = 'Types: deb\nURIs: http://m/debian\nSuites: trixie\nComponents: main\nEnabled: no\n'
    assert apt.parse_deb822(text) == []
    with pytest.raises(apt.SourcesError):
        apt.parse_one_line('deb [signed-by=/x http://m trixie main\n')
    with pytest.raises(apt.SourcesError):
        apt.parse_one_line('deb http://m\n')
    with pytest.raises(apt.SourcesError):
        apt.parse_deb822(' continuation without field\n')


def test_parse_sources_dispatches_by_file_name():
    entries = apt.parse_sources([
        {'path': '/etc/apt/sources.list', 'content': fixture('ubuntu2204-sources.list')},
        {'path': '/etc/apt/sources.list.d/ubuntu.sources', 'content': fixture('ubuntu2404-ubuntu.sources')}])
    assert [e['format'] for e in entries] == ['one-line', 'deb822', 'deb822', 'deb822']


# ---- apt-get install --simulate --------------------------------------------------------------------

def test_simulation_of_a_transitional_chain_resolves_to_580():
    sim = apt.parse_simulation(fixture('ubuntu2204-simulate-525.txt'))
    names = [p['name'] for p in sim['install']]
    assert 'nvidia-driver-525' in names and 'nvidia-driver-580' in names and 'nvidia-dkms-580' in names
    assert sim['remove'] == [] and sim['errors'] == []
    resolved = apt.resolved_branches(sim, '^nvidia-kernel-common-[0-9]+(-server)?$')
    assert resolved == {'packages': ['nvidia-kernel-common-580=580.178.04-0ubuntu0.22.04.1'], 'branches': ['580'],
                        'final': '580'}
    chain = apt.resolved_branches(sim, '^nvidia-dkms-[0-9]+$')
    assert chain['branches'] == ['525', '535', '580'] and chain['final'] == '580'


# ---- apt-cache depends: the branches a release really ships ---------------------------------------------------

def test_branch_stem_keeps_the_rest_of_the_name():
    stem = apt.branch_stem('nvidia-headless-no-dkms-580-server-open', '580')
    assert re.match(stem, 'nvidia-headless-no-dkms-595-server-open').group(1) == '595'
    assert not re.match(stem, 'nvidia-headless-no-dkms-595-server')
    assert not re.match(stem, 'nvidia-headless-no-dkms-595-open')
    # Debian's metapackage carries no branch.
    assert apt.branch_stem('nvidia-driver', '535') == ''
    assert apt.real_branches(fixture('ubuntu2604-depends-nvidia-driver.txt'), 'nvidia-driver', '535') == []


def test_branch_family_takes_the_first_name_with_the_branch_without_its_version():
    install = ['nvidia-headless-no-dkms-580-server-open=580.178.04-0ubuntu0.24.04.1', 'nvidia-utils-580-server',
               'linux-modules-nvidia-580-server-open-6.8.0-149-generic']
    assert apt.branch_family(install, '580') == {'package': 'nvidia-headless-no-dkms-580-server-open',
                                                 'prefix': 'nvidia-headless-no-dkms-'}
    # A version that happens to contain the branch is not a name carrying it.
    assert apt.branch_family(['nvidia-driver=535.261.03-1', 'nvidia-smi'], '535') == {'package': '', 'prefix': ''}
    assert apt.branch_family([], '580') == {'package': '', 'prefix': ''}


def test_parse_depends_reads_or_groups_and_leaves_out_providers():
    parsed = apt.parse_depends('nvidia-driver-535\n  Depends: nvidia-driver-580\n'
                               'x\n |Depends: a\n  Depends: <virtual-b>\n    provider-of-b\n')
    # apt-cache depends marks all but the last alternative of an or-group with '|' in the indent.
    assert parsed == {'nvidia-driver-535': ['nvidia-driver-580'], 'x': ['a', 'virtual-b']}


@pytest.mark.parametrize('release, package, branch, real', [
    # Ubuntu 26.04 (resolute, -updates, -security; 2026-11-30): 535, 550, 560, 570 and 575 depend on 580, 590 on 595,
    # 610 on 615. The flavour's own name counts: -server and -open have their own dummies.
    ('ubuntu2604', 'nvidia-driver-535', '535', ['580', '595', '615']),
    ('ubuntu2604', 'nvidia-driver-590-server', '590', ['580', '595', '615']),
    ('ubuntu2604', 'nvidia-driver-570-open', '570', ['580', '595', '615']),
    # Ubuntu 22.04 (jammy, -updates, -security; 2026-11-30): 525 -> 535 -> 580, and still real old branches.
    ('ubuntu2204', 'nvidia-driver-525', '525', ['390', '470', '545', '580', '595', '615']),
    ('ubuntu2204', 'nvidia-driver-535-server', '535', ['418', '450', '470', '580', '595', '615']),
])
def test_real_branches_from_the_archives_dependencies(release, package, branch, real):
    text = fixture('%s-depends-nvidia-driver.txt' % release)
    assert apt.real_branches(text, package, branch) == real
    # The branch asked for is a dummy on both releases: never among the real ones.
    assert branch not in real


@pytest.mark.parametrize('release', ['ubuntu2204', 'ubuntu2604'])
def test_cut_depends_keeps_what_tells_a_transitional_package(release):
    """apt_sources_info returns the cut text (the whole one runs to thousands of lines on noble: every metapackage's
    module packages as alternatives); the real branches read from it are those of the whole text."""
    text = fixture('%s-depends-nvidia-driver.txt' % release)
    cut = apt.cut_depends(text, 'nvidia-driver-')
    assert len(cut) < len(text)
    for package, branch in (('nvidia-driver-535', '535'), ('nvidia-driver-580-open', '580'),
                            ('nvidia-driver-590-server', '590')):
        assert apt.real_branches(cut, package, branch) == apt.real_branches(text, package, branch)
    assert all(line.startswith(('nvidia-driver-', '  Depends: nvidia-driver-', ' |Depends: nvidia-driver-'))
               for line in cut.splitlines()), cut
    assert apt.cut_depends('', 'nvidia-driver-') == ''


def test_a_real_branch_is_among_the_real_ones():
    assert '580' in apt.real_branches(fixture('ubuntu2604-depends-nvidia-driver.txt'), 'nvidia-driver-580', '580')


def test_simulation_of_the_real_580():
    sim = apt.parse_simulation(fixture('ubuntu2204-simulate-580.txt'))
    assert apt.resolved_branches(sim, '^nvidia-kernel-common-[0-9]+$')['branches'] == ['580']


def test_simulation_debian13_open_and_proprietary():
    sim = apt.parse_simulation(fixture('debian13-simulate-open.txt'))
    regex = '^(nvidia-kernel-dkms|nvidia-open-kernel-dkms|nvidia-kernel-open-dkms|nvidia-smi|cuda-drivers-[0-9]+)$'
    resolved = apt.resolved_branches(sim, regex)
    assert resolved['branches'] == ['550']
    assert 'nvidia-open-kernel-dkms=550.163.01-2' in resolved['packages']
    proprietary = apt.parse_simulation(fixture('debian13-simulate-proprietary.txt'))
    assert 'nvidia-kernel-dkms=550.163.01-2' in apt.resolved_branches(proprietary, regex)['packages']


def test_simulation_of_a_prebuilt_install():
    sim = apt.parse_simulation(fixture('ubuntu2404-simulate-prebuilt-proprietary.txt'))
    by_name = dict((p['name'], p) for p in sim['install'])
    assert by_name['linux-modules-nvidia-580-6.8.0-149-generic']['version'] == '6.8.0-149.149'
    assert by_name['nvidia-kernel-common-580']['origin'] == 'Ubuntu:24.04/noble-updates, Ubuntu:24.04/noble-security'
    assert 'dkms' not in by_name and 'nvidia-dkms-580' not in by_name


def test_simulation_of_a_switch_with_holds_ignored_names_the_held_package():
    sim = apt.parse_simulation(fixture('ubuntu2404-simulate-switch-ignore-hold.txt'))
    assert sim['held_changed'] == ['nvidia-headless-no-dkms-580']
    assert [(p['name'], p['version']) for p in sim['remove']] == [
        ('nvidia-headless-no-dkms-580', '580.178.04-0ubuntu0.24.04.1'),
        ('nvidia-kernel-source-580', '580.178.04-0ubuntu0.24.04.1')]
    assert [p['name'] for p in sim['install']] == [
        'linux-modules-nvidia-580-open-6.8.0-149-generic', 'nvidia-kernel-source-580-open',
        'nvidia-headless-no-dkms-580-open']
    assert sim['already'] == ['nvidia-utils-580']


def test_simulation_blocked_by_holds_reports_the_error():
    sim = apt.parse_simulation(fixture('ubuntu2404-simulate-switch-held.txt'))
    assert sim['install'] == [] and sim['errors'] == [
        'Error, pkgProblemResolver::Resolve generated breaks, this may be caused by held packages.']


def test_branch_of():
    assert apt.branch_of('580.178.04-0ubuntu0.24.04.1') == '580'
    assert apt.branch_of('1:550.163.01-2') == '550'
    assert apt.branch_of('6.8.0-149.149') == ''
    assert apt.branch_of('') == ''


# ---- apt-cache policy and holds --------------------------------------------------------------------

def test_policy_installed_candidate_and_versions():
    policy = apt.parse_policy(fixture('ubuntu2404-policy.txt'))
    assert sorted(policy) == ['nvidia-dkms-580', 'nvidia-driver-580', 'nvidia-headless-no-dkms-580-open', 'nvidia-utils-580']
    assert policy['nvidia-utils-580'] == {'installed': '580.178.04-0ubuntu0.24.04.1',
                                          'candidate': '580.178.04-0ubuntu0.24.04.1',
                                          'versions': ['580.178.04-0ubuntu0.24.04.1']}
    assert policy['nvidia-driver-580']['installed'] is None
    # The kernel apt has no prebuilt module for: apt-cache prints nothing, the package is absent.
    assert 'linux-modules-nvidia-580-open-6.8.0-999-generic' not in policy


def test_policy_of_unknown_packages_only_is_empty():
    assert apt.parse_policy(fixture('ubuntu2204-policy-prebuilt.txt')) == {}


def test_showhold():
    assert apt.parse_showhold('nvidia-utils-580\nlibfoo:amd64\n\n') == ['nvidia-utils-580', 'libfoo:amd64']


def test_gpg_primary_fingerprints_of_the_ubuntu_keyring():
    text = fixture('gpg-show-keys-ubuntu-archive-keyring.txt')
    assert apt.gpg_primary_fingerprints(text) == [
        '790BC7277767219C42C86F933B4FE6ACC0B21F32', '843938DF228D22F7B3742BC0D94AA3F0EFE21092',
        'F6ECB3762474EDA9D21B7022871920D1991BC93C']
    assert apt.gpg_primary_fingerprints('sub:-:4096:1:X:::\nfpr:::::::::AAAA:\n') == []


def test_fetch_error_of_a_listed_package_the_archive_answers_404_for():
    # Real: noble-updates listed linux-modules-nvidia-580-open-6.8.0-151-generic on 2026-11-25, its file was 404.
    why = apt.fetch_error(fixture('ubuntu2404-download-404-6.8.0-151.txt'))
    assert why == ('404 Not Found (http://archive.ubuntu.com/ubuntu/pool/restricted/l/linux-restricted-signatures/'
                   'linux-modules-nvidia-580-open-6.8.0-151-generic_6.8.0-151.151_amd64.deb)')


def test_fetch_error_other_errors_and_none():
    assert apt.fetch_error('E: Unable to locate package nvidia-nothing\n') == 'Unable to locate package nvidia-nothing'
    assert apt.fetch_error('Get:1 http://x/y.deb [5 kB]\nFetched 5 kB in 0s\n') == ''
    assert apt.fetch_error(None) == ''


def test_policy_has_indexes_on_real_captures():
    # An Ubuntu 24.04 node after apt-get update, and a Debian 12 image that never ran it (captured 2026-11-26).
    with open(os.path.join(FIXTURES, 'ubuntu2404-policy-lists.txt')) as handle:
        assert apt.policy_has_indexes(handle.read()) is True
    with open(os.path.join(FIXTURES, 'debian12-policy-no-lists.txt')) as handle:
        assert apt.policy_has_indexes(handle.read()) is False
    assert apt.policy_has_indexes('') is False
