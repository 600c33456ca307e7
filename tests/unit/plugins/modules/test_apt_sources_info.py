# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""baremetal.gpu.apt_sources_info main(): the sources it reads (captured files of the test nodes in a temporary
/etc/apt), the entries it works out, the exact commands it runs (mocked run_command) and where the package
answers come from (the node's lists, or a private probe that leaves nothing behind)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shutil

import pytest

from ansible.module_utils import basic

from ansible_collections.baremetal.gpu.plugins.module_utils import apt as aptlib
from ansible_collections.baremetal.gpu.plugins.modules import apt_sources_info
from ansible_collections.baremetal.gpu.tests.unit.plugins.modules.utils import (
    AnsibleExitJson,
    AnsibleFailJson,
    set_module_args,
)

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'apt')
POLICY = open(os.path.join(FIXTURES, 'ubuntu2404-policy.txt')).read()
POLICY_LISTS = open(os.path.join(FIXTURES, 'ubuntu2404-policy-lists.txt')).read()
POLICY_NO_LISTS = open(os.path.join(FIXTURES, 'debian12-policy-no-lists.txt')).read()
DOWNLOAD_404 = open(os.path.join(FIXTURES, 'ubuntu2404-download-404-6.8.0-151.txt')).read()
# Ubuntu 26.04's real answer (the capture's first line is the command, with the names apt-cache pkgnames gave).
DEPENDS_2604 = open(os.path.join(FIXTURES, 'ubuntu2604-depends-nvidia-driver.txt')).read()
PKGNAMES_2604 = '\n'.join(DEPENDS_2604.splitlines()[0].split('--no-enhances ', 1)[1].split()) + '\n'
OWN = 'baremetal-gpu-nvidia-driver.sources'
NOBLE = {'release': 'noble', 'suite_suffixes': ['', '-updates', '-security'],
         'components': ['main', 'restricted', 'universe', 'multiverse']}


@pytest.fixture
def node(tmp_path, monkeypatch):
    """A temporary /etc/apt holding the Ubuntu 24.04 node's own ubuntu.sources; run_command recorded."""
    etc = tmp_path / 'etc-apt'
    (etc / 'sources.list.d').mkdir(parents=True)
    shutil.copy(os.path.join(FIXTURES, 'ubuntu2404-ubuntu.sources'), str(etc / 'sources.list.d' / 'ubuntu.sources'))
    monkeypatch.setattr(apt_sources_info, 'SOURCES_LIST', str(etc / 'sources.list'))
    monkeypatch.setattr(apt_sources_info, 'SOURCES_DIR', str(etc / 'sources.list.d'))
    calls = []
    probes = []
    state = {'lists': POLICY_LISTS}

    def run_command(module, args, **kwargs):
        calls.append(list(args))
        if 'update' in args:
            parts = [a.split('=', 1)[1] for a in args if a.startswith('Dir::Etc::SourceParts=')][0]
            with open(os.path.join(parts, 'probe.sources')) as handle:
                probes.append((parts, handle.read()))
            return 0, 'Fetched 3 MB', ''
        if args[-1] == 'showhold' or 'showhold' in args:
            return 0, 'nvidia-utils-580\n', ''
        if args[-1] == 'policy':
            # apt-cache policy without arguments: the node's package files
            return 0, state['lists'], ''
        if 'policy' in args:
            return 0, POLICY, ''
        if 'pkgnames' in args:
            return 0, PKGNAMES_2604, ''
        if 'depends' in args:
            return 0, '\n'.join(DEPENDS_2604.splitlines()[1:]) + '\n', ''
        if 'download' in args:
            # The real answer of the archive for a listed package it does not serve (apt prints it on stdout).
            return (100, DOWNLOAD_404, '') if args[-1] == 'nvidia-driver-580' else (0, 'Get:1 ... [5 kB]', '')
        return 1, '', 'unexpected'

    def get_bin_path(module, name, required=False, opt_dirs=None):
        return '/usr/bin/' + name

    monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)
    monkeypatch.setattr(basic.AnsibleModule, 'get_bin_path', get_bin_path)
    return {'etc': etc, 'calls': calls, 'probes': probes, 'state': state}


def run(args):
    with set_module_args(args):
        with pytest.raises(AnsibleExitJson) as result:
            apt_sources_info.main()
    return result.value.result


def test_missing_entries_keep_signed_by_and_a_private_probe_answers(node):
    own = str(node['etc'] / 'sources.list.d' / OWN)
    args = dict(NOBLE, own_file=own, packages=['nvidia-utils-580', 'linux-modules-nvidia-580-open-6.8.0-999-generic'])
    result = run(args)
    assert result['changed'] is False and result['in_place'] is False
    assert result['files'] == [str(node['etc'] / 'sources.list.d' / 'ubuntu.sources')]
    assert 'Signed-By: /usr/share/keyrings/ubuntu-archive-keyring.gpg' in result['deb822']
    assert result['package_source'] == 'private'
    assert result['packages']['nvidia-utils-580']['installed'] == '580.178.04-0ubuntu0.24.04.1'
    assert result['held'] == ['nvidia-utils-580']
    # The private probe: only the lacking entries, in a temporary directory that is gone afterwards.
    parts, probe = node['probes'][0]
    assert probe == result['deb822'] and not os.path.exists(parts)
    update = node['calls'][0]
    assert update[:3] == ['/usr/bin/timeout', '300', '/usr/bin/apt-get'] and update[-1] == 'update'
    assert 'Dir::Etc::SourceList=/dev/null' in update and 'Acquire::Languages=none' in update
    assert node['calls'][1][0] == '/usr/bin/apt-cache' and node['calls'][1][-3] == 'policy'


def test_entries_in_place_use_the_nodes_lists(node):
    own = node['etc'] / 'sources.list.d' / OWN
    first = run(dict(NOBLE, own_file=str(own)))
    own.write_text('# managed\n' + first['deb822'])
    result = run(dict(NOBLE, own_file=str(own), packages=['nvidia-utils-580']))
    assert result['in_place'] is True and result['package_source'] == 'node'
    assert node['probes'] == []
    assert ['/usr/bin/apt-cache', 'policy', 'nvidia-utils-580'] in node['calls']


def test_node_packages_are_asked_of_the_nodes_lists_beside_the_private_probe(node):
    # A first run: the driver's packages from the private probe, the signing tools from the node's own lists (the
    # real policy capture knows nvidia-utils-580 but not mokutil: listed with neither version).
    result = run(dict(NOBLE, own_file=str(node['etc'] / 'sources.list.d' / OWN), packages=['nvidia-utils-580'],
                      node_packages=['nvidia-utils-580', 'mokutil']))
    assert result['package_source'] == 'private'
    assert ['/usr/bin/apt-cache', 'policy', 'nvidia-utils-580', 'mokutil'] in node['calls']
    assert result['node_packages']['mokutil'] == {'installed': None, 'candidate': None, 'versions': []}
    assert result['node_packages']['nvidia-utils-580']['installed'] == '580.178.04-0ubuntu0.24.04.1'
    assert result['node_lists'] is True
    assert run(NOBLE)['node_packages'] == {} and run(NOBLE)['node_lists'] is None


def test_node_packages_unanswered_when_the_nodes_lists_are_empty(node):
    # A node that never ran apt-get update (the test images, a fresh install): its policy lists only dpkg's status,
    # every package would look unknown, so no answer is given and nothing can be refused on it.
    node['state']['lists'] = POLICY_NO_LISTS
    result = run(dict(NOBLE, own_file=str(node['etc'] / 'sources.list.d' / OWN), packages=['nvidia-utils-580'],
                      node_packages=['mokutil', 'openssl']))
    assert result['node_lists'] is False and result['node_packages'] == {}
    assert ['/usr/bin/apt-cache', 'policy'] in node['calls']
    assert ['/usr/bin/apt-cache', 'policy', 'mokutil', 'openssl'] not in node['calls']


def test_probe_off_and_no_packages(node):
    result = run(dict(NOBLE, probe=False, packages=['nvidia-utils-580']))
    assert result['package_source'] == 'node' and node['probes'] == []
    assert run(NOBLE)['package_source'] == 'none'


def test_a_broken_sources_file_fails_clearly(node):
    (node['etc'] / 'sources.list.d' / 'bad.list').write_text('deb [signed-by=/x http://m noble main\n')
    with set_module_args(NOBLE):
        with pytest.raises(AnsibleFailJson) as result:
            apt_sources_info.main()
    assert 'cannot read the apt sources' in result.value.result['msg']


def test_fetch_downloads_only_listed_packages_not_installed_and_reports_those_the_archive_does_not_serve(node):
    own = str(node['etc'] / 'sources.list.d' / OWN)
    args = dict(NOBLE, own_file=own, probe=False,
                packages=['nvidia-utils-580', 'nvidia-driver-580', 'nvidia-dkms-580',
                          'linux-modules-nvidia-580-open-6.8.0-999-generic'],
                fetch=['nvidia-utils-580', 'nvidia-driver-580', 'nvidia-dkms-580',
                       'linux-modules-nvidia-580-open-6.8.0-999-generic', 'not-asked-about'])
    result = run(args)
    downloads = [c for c in node['calls'] if 'download' in c]
    # Installed (nvidia-utils-580), unknown to apt (6.8.0-999) and not among packages: not downloaded.
    assert [c[-1] for c in downloads] == ['nvidia-driver-580', 'nvidia-dkms-580']
    assert all(c[:2] == ['/usr/bin/timeout', '300'] and '/usr/bin/apt-get' in c for c in downloads)
    assert result['changed'] is False
    assert list(result['fetch_errors']) == ['nvidia-driver-580']
    assert result['fetch_errors']['nvidia-driver-580'].startswith('404 Not Found (http://archive.ubuntu.com/')


def test_fetch_in_the_private_probe_uses_its_apt_state(node):
    own = str(node['etc'] / 'sources.list.d' / OWN)
    result = run(dict(NOBLE, own_file=own, packages=['nvidia-driver-580'], fetch=['nvidia-driver-580']))
    download = [c for c in node['calls'] if 'download' in c][0]
    assert result['package_source'] == 'private'
    assert any(a.startswith('Dir::Etc::SourceParts=') for a in download)
    assert 'nvidia-driver-580' in result['fetch_errors']


def test_depends_prefix_reads_the_branches_in_the_same_apt_state(node):
    """A first run (the private probe): the packages named nvidia-driver-* and what they depend on, from the probe's
    own apt state; the text comes back cut to what tells a transitional package."""
    own = str(node['etc'] / 'sources.list.d' / OWN)
    result = run(dict(NOBLE, own_file=own, packages=['nvidia-utils-580'], depends_prefix='nvidia-driver-'))
    assert result['package_source'] == 'private'
    pkgnames = [c for c in node['calls'] if 'pkgnames' in c][0]
    depends = [c for c in node['calls'] if 'depends' in c][0]
    assert pkgnames[-2:] == ['pkgnames', 'nvidia-driver-'] and 'Dir::Etc::SourceList=/dev/null' in pkgnames
    assert 'Dir::Etc::SourceList=/dev/null' in depends and '--no-recommends' in depends
    assert depends[-1] == 'nvidia-driver-615-server-open' and 'nvidia-driver-535' in depends
    assert result['branch_depends'].startswith('nvidia-driver-535\n  Depends: nvidia-driver-580\n')
    assert 'linux-modules' not in result['branch_depends']
    assert aptlib.real_branches(result['branch_depends'], 'nvidia-driver-580-open', '580') == ['580', '595', '615']
    # From the node's own lists once the entries are in place; nothing asked without a prefix.
    node['calls'][:] = []
    assert run(dict(NOBLE, packages=['nvidia-utils-580']))['branch_depends'] == ''
    assert not [c for c in node['calls'] if 'pkgnames' in c or 'depends' in c]
    result = run(dict(NOBLE, probe=False, packages=['nvidia-utils-580'], depends_prefix='nvidia-driver-'))
    assert result['package_source'] == 'node'
    assert ['/usr/bin/apt-cache', 'pkgnames', 'nvidia-driver-'] in node['calls']
    assert 'nvidia-driver-590\n  Depends: nvidia-driver-595\n' in result['branch_depends']
