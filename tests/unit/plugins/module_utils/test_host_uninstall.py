# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""host_uninstall on real inputs: apt history logs captured on the test nodes (tests/fixtures/apt/SOURCE.md), and
the containerd configs of tests/fixtures/containerd run through containerd.plan and back."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.baremetal.gpu.plugins.module_utils import containerd, host_uninstall, toml_compat

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures')
DROPIN = '/etc/containerd/conf.d/99-nvidia.toml'
ENTRY = '/etc/containerd/conf.d/*.toml'
BINARY = '/usr/bin/nvidia-container-runtime'
VERSIONS = {'1.6': 'containerd-1.6.20-debian12.version.txt', '1.7': 'containerd-1.7.24-debian13.version.txt',
            '2.2': 'containerd-2.2.1-ubuntu2404.version.txt'}
# nvidia_driver's install transaction (roles/nvidia_driver/vars/uninstall.yml).
ROLE = (r'^apt-get install --yes --no-install-recommends -o DPkg::Lock::Timeout=[0-9]+ -o Dpkg::Options::=--force-confdef'
        r' -o Dpkg::Options::=--force-confold')


def fixture(*parts):
    with open(os.path.join(FIXTURES, *parts), encoding='utf-8') as handle:
        return handle.read()


# ---- containerd: plan() forward, containerd_config_restore() back ----

@pytest.mark.parametrize('release,config', [
    ('1.6', 'user/v2-user.toml'), ('1.7', 'user/v2-user.toml'), ('2.2', 'user/v2-user.toml'), ('2.2', 'user/v3-user.toml'),
    ('1.6', 'containerd-debian-package.config.toml'), ('1.7', 'containerd-debian-package.config.toml')])
def test_restore_gives_back_the_users_config_byte_for_byte(release, config):
    before = fixture('containerd', config)
    planned = containerd.plan('/etc/containerd/config.toml', before, [], DROPIN, ENTRY, 'nvidia', BINARY,
                              fixture('containerd', VERSIONS[release]))
    assert planned['main_changed'] and planned['main_content'] != before
    back = host_uninstall.containerd_config_restore(planned['main_content'], ENTRY, DROPIN, [], modified=True)
    assert back['action'] == 'write' and back['content'] == before


@pytest.mark.parametrize('release,version', [('1.7', 2), ('2.2', 3)])
def test_a_config_the_role_created_is_removed(release, version):
    planned = containerd.plan('/etc/containerd/config.toml', None, [], DROPIN, ENTRY, 'nvidia', BINARY,
                              fixture('containerd', VERSIONS[release]))
    assert planned['main_content'].startswith('version = %d\n' % version)
    back = host_uninstall.containerd_config_restore(planned['main_content'], ENTRY, DROPIN, [], modified=False)
    assert back['action'] == 'remove'


def test_default_config_with_empty_imports_comes_back_without_the_line():
    """`containerd config default` has `imports = []`; the restored file has no imports line (the same to containerd)."""
    before = fixture('containerd', 'containerd-1.6.20-debian12.config-default.toml')
    planned = containerd.plan('/etc/containerd/config.toml', before, [], DROPIN, ENTRY, 'nvidia', BINARY,
                              fixture('containerd', VERSIONS['1.6']))
    back = host_uninstall.containerd_config_restore(planned['main_content'], ENTRY, DROPIN, [], modified=True)
    assert back['action'] == 'write'
    assert back['content'] == before.replace('imports = []\n', '')
    assert toml_compat.loads(back['content']) == {k: v for k, v in toml_compat.loads(before).items() if k != 'imports'}


def test_an_entry_the_user_had_is_kept():
    """Ubuntu's default config already imports conf.d: the role changed nothing there (no backup), so it stays."""
    before = fixture('containerd', 'containerd-2.2.1-ubuntu2404.config-default.toml')
    planned = containerd.plan('/etc/containerd/config.toml', before, [], DROPIN, ENTRY, 'nvidia', BINARY,
                              fixture('containerd', VERSIONS['2.2']))
    assert not planned['main_changed']
    back = host_uninstall.containerd_config_restore(before.replace("'", '"'), ENTRY, DROPIN, [], modified=False)
    assert back['action'] == 'keep' and 'before the role' in back['reason']


def test_other_files_keep_the_entry_and_other_entries_stay():
    text = 'version = 2\nimports = ["/etc/containerd/mine.toml", "/etc/containerd/conf.d/*.toml"]\n'
    keep = host_uninstall.containerd_config_restore(text, ENTRY, DROPIN, ['/etc/containerd/conf.d/10-mine.toml'], True)
    assert keep['action'] == 'keep' and '10-mine.toml' in keep['reason']
    back = host_uninstall.containerd_config_restore(text, ENTRY, DROPIN, [], True)
    assert back == {'action': 'write', 'content': 'version = 2\nimports = ["/etc/containerd/mine.toml"]\n',
                    'reason': 'imports entry /etc/containerd/conf.d/*.toml removed'}


def test_nothing_to_do():
    assert host_uninstall.containerd_config_restore(None, ENTRY, DROPIN)['action'] == 'keep'
    assert host_uninstall.containerd_config_restore('version = 2\n', ENTRY, DROPIN, [], True)['action'] == 'keep'
    assert host_uninstall.containerd_config_restore('version = [', ENTRY, DROPIN, [], True)['action'] == 'keep'


# ---- Docker ----

def test_docker_keeps_every_user_key():
    user = {"log-driver": "json-file", "runtimes": {"crun": {"path": "/usr/bin/crun"}}, "features": {"cdi": True}}
    ours = dict(user, runtimes={"crun": {"path": "/usr/bin/crun"}, "nvidia": {"path": BINARY, "args": []}},
                **{"default-runtime": "nvidia"})
    back = host_uninstall.docker_daemon_restore(ours, 'nvidia', BINARY)
    assert back['changed'] and back['content'] == user and back['removed'] == ['runtimes.nvidia', 'default-runtime']
    assert not back['empty']


def test_docker_file_the_role_created_is_empty_after():
    back = host_uninstall.docker_daemon_restore({"runtimes": {"nvidia": {"path": BINARY, "args": []}}}, 'nvidia', BINARY)
    assert back['changed'] and back['empty'] and back['content'] == {}


def test_docker_runtime_with_another_binary_is_not_ours():
    data = {"runtimes": {"nvidia": {"path": "/opt/nvidia/runtime"}}, "default-runtime": "nvidia"}
    assert host_uninstall.docker_daemon_restore(data, 'nvidia', BINARY) == {
        'changed': False, 'content': data, 'empty': False, 'removed': []}


# ---- apt history ----

SYNTHETIC = """
Start-Date: 2026-11-23  09:00:00
Commandline: %s nvidia-driver
Install: nvidia-driver:amd64 (535.261.03-1~deb12u1), dkms:amd64 (3.0.10-8+deb12u1, automatic), gcc:amd64 (4:12.2.0-3, automatic)
Upgrade: initramfs-tools:amd64 (0.142, 0.142+deb12u1)
End-Date: 2026-11-23  09:05:00

Start-Date: 2026-11-23  08:00:00
Commandline: apt-get install vim
Install: vim:amd64 (2:9.0.1378-2)
End-Date: 2026-11-23  08:00:05

Start-Date: 2026-11-23  10:00:00
Commandline: apt-get install build-essential gcc
Install: build-essential:amd64 (12.9), gcc:amd64 (4:12.2.0-3)
End-Date: 2026-11-23  10:00:05

Start-Date: 2026-11-23  11:00:00
Commandline: apt-get remove dkms
Remove: dkms:amd64 (3.0.10-8+deb12u1)
End-Date: 2026-11-23  11:00:05
""" % ('apt-get install --yes --no-install-recommends -o DPkg::Lock::Timeout=300 -o Dpkg::Options::=--force-confdef'
       ' -o Dpkg::Options::=--force-confold')


def test_history_synthetic_order_and_ownership():
    """Sorted by date; gcc installed again by the user is theirs; dkms removed later is gone; upgrades do not count."""
    found = host_uninstall.apt_history_installed(SYNTHETIC, ROLE)
    assert found == {'packages': ['nvidia-driver'], 'transactions': 1,
                     'first': '2026-11-23  09:00:00', 'last': '2026-11-23  09:00:00',
                     # Every version the role's transactions installed or upgraded to (an upgrade: the new one).
                     'versions': {'nvidia-driver': ['535.261.03-1~deb12u1'], 'dkms': ['3.0.10-8+deb12u1'],
                                  'gcc': ['4:12.2.0-3'], 'initramfs-tools': ['0.142+deb12u1']}}


def test_history_empty():
    assert host_uninstall.apt_history_installed('', ROLE) == {'packages': [], 'versions': {}, 'transactions': 0,
                                                              'first': '', 'last': ''}


def test_history_real_ubuntu2404_host_layer():
    """The role's one transaction on a real node: what it installed, not the image's kernel or Ansible's containerd."""
    found = host_uninstall.apt_history_installed(fixture('apt', 'history-ubuntu2404-host-layer.log'), ROLE)
    assert found['transactions'] == 1 and found['first'] == '2026-11-23  08:13:11'
    packages = found['packages']
    for name in ('linux-modules-nvidia-580-open-6.8.0-149-generic', 'nvidia-headless-no-dkms-580-open', 'nvidia-utils-580',
                 'nvidia-kernel-common-580', 'libnvidia-compute-580', 'xserver-xorg-video-nvidia-580', 'libx11-6'):
        assert name in packages, name
    for name in ('containerd', 'runc', 'initramfs-tools', 'linux-image-6.8.0-149-generic'):
        assert name not in packages, name
    assert len(packages) == 83 and all(':' not in p for p in packages)


@pytest.mark.parametrize('node,module', [('debian12', 'nvidia-kernel-dkms'), ('ubuntu2404', 'linux-modules-nvidia-580-open-6.8.0-149-generic')])
def test_history_real_after_the_uninstall_leaves_nothing_of_the_role(node, module):
    """After the uninstall's purge (recorded as a Purge: line) nothing is the role's any more: a second run removes nothing."""
    text = fixture('apt', 'history-%s-host-layer-uninstalled.log' % node)
    assert module in text and 'Purge: ' in text
    found = host_uninstall.apt_history_installed(text, ROLE)
    assert found['transactions'] == 1 and found['packages'] == []
    # Without the purge entry the same log names what the role installed, the module package among them.
    before_purge = text[:text.index('Commandline: apt-get purge')]
    assert module in host_uninstall.apt_history_installed(before_purge, ROLE)['packages']


# ---- DKMS builds left after the purge: the role's, by the version its own transactions installed ----

def test_dkms_builds_of_the_roles_version_go_and_another_build_stays():
    """Real history (Debian 12: the role installed nvidia-kernel-dkms 535.261.03-1); the builds are gpu_node_facts'
    shape. A .run installer's build of another version, of another module name or of the same one, stays."""
    versions = host_uninstall.apt_history_installed(fixture('apt', 'history-debian12-host-layer-uninstalled.log'),
                                                    ROLE)['versions']
    assert versions['nvidia-kernel-dkms'] == ['535.261.03-1']
    builds = [{'module': 'nvidia-current', 'version': '535.261.03', 'kernel': '6.1.0-41-amd64', 'arch': 'x86_64'},
              {'module': 'nvidia', 'version': '580.95.05', 'kernel': '6.1.0-41-amd64', 'arch': 'x86_64'}]
    assert host_uninstall.dkms_builds_to_remove(builds, versions) == {'remove': ['nvidia-current'],
                                                                      'keep': ['nvidia/580.95.05']}
    same_module = [{'module': 'nvidia-current', 'version': '535.261.03', 'kernel': 'k'},
                   {'module': 'nvidia-current', 'version': '550.163.01', 'kernel': 'k'}]
    assert host_uninstall.dkms_builds_to_remove(same_module, versions) == {'remove': ['nvidia-current/535.261.03'],
                                                                           'keep': ['nvidia-current/550.163.01']}
    # No record of the role's DKMS package (installed by someone else): every build stays.
    assert host_uninstall.dkms_builds_to_remove(builds, {'nvidia-driver': ['535.261.03-1']}) == {
        'remove': [], 'keep': ['nvidia-current/535.261.03', 'nvidia/580.95.05']}
    assert host_uninstall.dkms_builds_to_remove([], versions) == {'remove': [], 'keep': []}


def test_history_versions_of_install_and_upgrade_values():
    assert host_uninstall.history_versions('nvidia-dkms-580-open:amd64 (580.178.04-0ubuntu0.24.04.1), '
                                           'dkms:amd64 (3.0.11-1ubuntu13, automatic)') == {
        'nvidia-dkms-580-open': '580.178.04-0ubuntu0.24.04.1', 'dkms': '3.0.11-1ubuntu13'}
    assert host_uninstall.history_versions('initramfs-tools:amd64 (0.142, 0.142+deb12u1)') == {
        'initramfs-tools': '0.142+deb12u1'}


def test_dpkg_not_purged_keeps_installed_and_config_files_packages():
    """Real dpkg-query status lines (tests/fixtures/apt/SOURCE.md): one package removed with its configuration files
    left ("rc"), two installed; the architecture goes."""
    with open(os.path.join(FIXTURES, 'apt', 'ubuntu2404-dpkg-query-status-one-removed.txt'), encoding='utf-8') as handle:
        text = handle.read()
    assert host_uninstall.dpkg_not_purged(text) == [
        'libnvidia-compute-580', 'nvidia-compute-utils-580', 'nvidia-kernel-common-580']


@pytest.mark.parametrize('line, expected', [
    ('un nvidia-utils-580', []),                  # known to dpkg, not installed: purged
    ('pn nvidia-utils-580:amd64', []),
    ('iH nvidia-dkms-580', ['nvidia-dkms-580']),  # half-installed: a dpkg run killed in the middle
    ('iF nvidia-dkms-580', ['nvidia-dkms-580']),  # half-configured
    ('iUR libnvidia-gl-580:i386', ['libnvidia-gl-580']),
    ('dpkg-query: no packages found matching nvidia-utils-580', []),
    ('', []),
])
def test_dpkg_not_purged_reads_the_state_letter(line, expected):
    assert host_uninstall.dpkg_not_purged(line) == expected
