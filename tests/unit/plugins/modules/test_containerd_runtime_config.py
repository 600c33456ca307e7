# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""baremetal.gpu.containerd_runtime_config main(): the files it reads (the fixtures of tests/fixtures/containerd in a
temporary /etc/containerd) and the mode it tells the role to keep: a main config that holds registry credentials
is written 0600, another keeps its own mode, a new one is 0644."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shutil

import pytest

from ansible_collections.baremetal.gpu.plugins.modules import containerd_runtime_config
from ansible_collections.baremetal.gpu.tests.unit.plugins.modules.utils import (
    AnsibleExitJson,
    set_module_args,
)

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'containerd')
VERSION = open(os.path.join(FIXTURES, 'containerd-1.6.20-debian12.version.txt')).read()


def run(tmp_path, monkeypatch, user=None, mode=0o644):
    config = tmp_path / 'config.toml'
    if user:
        shutil.copy(os.path.join(FIXTURES, 'user', user), str(config))
        os.chmod(str(config), mode)
    args = {'config': str(config), 'dropin': str(tmp_path / 'conf.d' / '99-nvidia.toml'),
            'import_entry': str(tmp_path / 'conf.d' / '*.toml'), 'runtime_name': 'nvidia', 'containerd_version': VERSION}
    with set_module_args(args):
        with pytest.raises(AnsibleExitJson) as result:
            containerd_runtime_config.main()
    return result.value.result


@pytest.mark.parametrize('user, mode, expected, credentials', [
    ('v2-user-credentials.toml', 0o644, '0600', {'dropin': True, 'main': True}),
    ('v2-user-credentials.toml', 0o640, '0600', {'dropin': True, 'main': True}),
    ('v2-user.toml', 0o644, '0644', {'dropin': False, 'main': False}),
    ('v2-user.toml', 0o600, '0600', {'dropin': False, 'main': False}),   # the user's own mode is kept
    (None, None, '0644', {'dropin': False, 'main': False}),               # created by the role
])
def test_main_mode_and_credentials(tmp_path, monkeypatch, user, mode, expected, credentials):
    result = run(tmp_path, monkeypatch, user, mode)
    assert result['main_mode'] == expected
    assert result['credentials'] == credentials
    assert result['changed'] is False
