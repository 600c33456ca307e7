# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The runtime filters on real outputs (tests/fixtures/containerd, tests/fixtures/rke2)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import os

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.baremetal.gpu.plugins.filter import runtime

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures')


def fixture(*parts):
    with open(os.path.join(FIXTURES, *parts), encoding='utf-8') as handle:
        return handle.read()


@pytest.mark.parametrize('name,version', [
    ('containerd-1.6.20-debian12.version.txt', '1.6.20'), ('containerd-1.7.24-debian13.version.txt', '1.7.24'),
    ('containerd-2.2.1-ubuntu2404.version.txt', '2.2.1'), ('dockerd-debian13.version.txt', '26.1.5')])
def test_runtime_version(name, version):
    assert runtime.runtime_version(fixture('containerd', name)) == version


def test_rke2_version_lines():
    for name in ('rke2-version-v1.34.3.txt', 'rke2-version-v1.33.7.txt'):
        text = fixture('rke2', name)
        assert runtime.runtime_version(text) == name[len('rke2-version-v'):-len('.txt')]


def test_systemd_timestamp():
    assert runtime.systemd_timestamp('Sun 2026-11-23 05:14:34.817431 UTC') == pytest.approx(1795410874.817431)
    assert runtime.systemd_timestamp('Sun 2026-11-23 05:14:34 UTC') == 1795410874.0
    assert runtime.systemd_timestamp('n/a') == 0.0 and runtime.systemd_timestamp('') == 0.0
    with pytest.raises(AnsibleFilterError):
        runtime.systemd_timestamp('yesterday')


def test_docker_cdi_filter():
    assert runtime.docker_cdi(fixture('containerd', 'dockerd-debian13.version.txt'))['feature_needed'] is True
    assert runtime.FilterModule().filters()['docker_cdi'] is runtime.docker_cdi


def test_systemd_not_enabled_reads_one_line_per_unit():
    units = ['nvidia-persistenced.service', 'systemd-journald.service', 'getty@tty1.service', 'apt-daily.service']
    lines = fixture('systemd', 'is-enabled-debian12-four-units.txt').splitlines()
    assert runtime.systemd_not_enabled(units, lines) == ['getty@tty1.service']


def test_systemd_not_enabled_reports_every_unit_when_one_is_unknown():
    # systemd printed "enabled" for nvidia-persistenced and nothing for the unknown unit: no line can be matched.
    units = ['nvidia-persistenced.service', 'nosuch.service']
    lines = fixture('systemd', 'is-enabled-debian12-with-unknown-unit.txt').splitlines()
    assert runtime.systemd_not_enabled(units, lines) == units
    assert runtime.systemd_not_enabled([], []) == []
    assert runtime.systemd_not_enabled(['a.service'], ['disabled']) == ['a.service']


def test_containerd_filters_read_real_configs():
    """The filters the roles call instead of regular expressions over TOML."""
    after = fixture('rke2', 'config.toml.after')
    assert runtime.containerd_runtime_binary(after, 'nvidia') == '/usr/bin/nvidia-container-runtime'
    assert runtime.containerd_runtime_binary(fixture('rke2', 'config.toml.before')) == ''
    assert runtime.containerd_file_version(fixture('rke2', 'config-v4.toml.after')) == 4
    assert runtime.containerd_file_version(None) is None
    dump = fixture('containerd', 'dumps', 'ubuntu2404-v3-user.dump.toml')
    assert runtime.containerd_dump_problems(dump, 'nvidia', '/usr/bin/nvidia-container-runtime', 'true') == []
    assert runtime.containerd_dump_problems('', 'nvidia', '/usr/bin/nvidia-container-runtime', 'false') == [
        'no runtime nvidia with a BinaryName']


def test_service_restart_reason_from_real_systemctl_show():
    """container_toolkit's restart decision (was a Jinja program), on real `systemctl show` captures."""
    active = fixture('systemd', 'show-debian12-active.txt')  # ActiveEnterTimestamp Thu 2026-11-26 20:25:34.404761 UTC
    started = runtime.systemd_timestamp('Thu 2026-11-26 20:25:34.404761 UTC')
    stats = [{'item': '/etc/containerd/config.toml', 'stat': {'exists': True, 'mtime': started - 60}},
             {'item': '/etc/containerd/conf.d/99-nvidia.toml', 'stat': {'exists': True, 'mtime': started + 5}},
             {'item': '/etc/containerd/absent.toml', 'stat': {'exists': False}}]
    assert runtime.service_restart_reason(active, stats) == (
        '/etc/containerd/conf.d/99-nvidia.toml newer than its start (a run stopped before the restart)')
    assert runtime.service_restart_reason(active, stats[:1]) == ''
    assert runtime.service_restart_reason(active, stats[:1], 'true') == 'configuration changed in this run'
    # Not installed (LoadState=not-found, empty timestamp): nothing to restart, even after a change.
    missing = fixture('systemd', 'show-debian12-not-found.txt')
    assert runtime.service_restart_reason(missing, stats, True) == ''
    with pytest.raises(AnsibleFilterError):
        runtime.service_restart_reason('LoadState=loaded\nActiveState=active\nActiveEnterTimestamp=yesterday', stats)


def slurped(item, text):
    """One result of an ansible.builtin.slurp loop over a file that exists."""
    return {'item': item, 'content': base64.b64encode(text.encode('utf-8')).decode('ascii'), 'encoding': 'base64'}


def test_files_by_marker_sorts_ours_from_the_users():
    marker = 'baremetal.gpu.rke2_nvidia_runtime'
    # Ours: the role's template as it renders (its marker line); the user's: a real RKE2-generated config; an
    # absent file: slurp's failure result (failed_when false), in neither list.
    ours = '# %s: RKE2 v1.24.9+rke2r1 does not detect the NVIDIA runtime\n{{ template "base" . }}\n' % marker
    users = fixture('rke2', 'config.toml.before')
    absent = {'item': 'config-v3.toml.tmpl', 'failed': True, 'msg': 'file not found: /var/lib/rancher/rke2/agent/etc/containerd/config-v3.toml.tmpl'}
    results = [slurped('config.toml.tmpl', ours), absent, slurped('20-nvidia.yaml', users)]
    assert runtime.files_by_marker(results, marker) == {'own': ['config.toml.tmpl'], 'user': ['20-nvidia.yaml']}
    assert runtime.files_by_marker([absent], marker) == {'own': [], 'user': []}
    assert runtime.files_by_marker(None, marker) == {'own': [], 'user': []}
