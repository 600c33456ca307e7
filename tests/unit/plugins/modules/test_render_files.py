# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""baremetal.gpu.render_files on a real directory (pytest's tmp_path): what it writes, what a second run changes,
check mode, the stale manifests, the modes, the secrets kept out of the diff, and the refusals."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import stat

import pytest

from ansible_collections.baremetal.gpu.plugins.modules import render_files
from ansible_collections.baremetal.gpu.tests.unit.plugins.modules.utils import (
    AnsibleExitJson,
    AnsibleFailJson,
    set_module_args,
)


def run(args, expect=AnsibleExitJson):
    with set_module_args(args):
        with pytest.raises(expect) as err:
            render_files.main()
    return err.value.result


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


FILES = {'values.yaml': '# values\nkey: 1\n', 'manifests/01-namespace-x.yaml': '---\nkind: Namespace\n'}
SECRETS = {'manifests/02-secret-x.yaml': '---\nkind: Secret\ndata: {password: c2VjcmV0}\n'}


def test_writes_every_file_with_its_modes_then_changes_nothing(tmp_path):
    base = str(tmp_path / 'render' / 'role')
    result = run({'path': base, 'files': FILES, 'secret_files': SECRETS, 'prune': ['manifests']})
    assert result['changed'] is True
    assert result['written'] == ['manifests/01-namespace-x.yaml', 'manifests/02-secret-x.yaml', 'values.yaml']
    assert result['removed'] == []
    for name, content in list(FILES.items()) + list(SECRETS.items()):
        with open(os.path.join(base, name), encoding='utf-8') as handle:
            assert handle.read() == content
        assert mode(os.path.join(base, name)) == 0o600
    # The directory, its parent made with it (as the file module does) and manifests/: 0700.
    for directory in (str(tmp_path / 'render'), base, os.path.join(base, 'manifests')):
        assert mode(directory) == 0o700, directory
    again = run({'path': base, 'files': FILES, 'secret_files': SECRETS, 'prune': ['manifests']})
    assert again['changed'] is False and again['written'] == [] and again['removed'] == []


def test_check_mode_writes_nothing_and_says_what_it_would(tmp_path):
    base = str(tmp_path / 'role')
    result = run({'path': base, 'files': FILES, '_ansible_check_mode': True})
    assert result['changed'] is True and 'values.yaml' in result['written']
    assert not os.path.exists(base)


def test_stale_manifests_go_other_files_stay(tmp_path):
    base = str(tmp_path / 'role')
    run({'path': base, 'files': FILES, 'secret_files': SECRETS, 'prune': ['manifests']})
    (tmp_path / 'role' / 'manifests' / 'README').write_text('not ours to remove')
    (tmp_path / 'role' / 'notes.yaml').write_text('not in a pruned directory')
    fewer = {'values.yaml': FILES['values.yaml']}
    result = run({'path': base, 'files': fewer, 'prune': ['manifests']})
    assert result['changed'] is True and result['written'] == []
    assert result['removed'] == ['manifests/01-namespace-x.yaml', 'manifests/02-secret-x.yaml']
    assert sorted(os.listdir(os.path.join(base, 'manifests'))) == ['README']
    assert os.path.exists(os.path.join(base, 'notes.yaml'))


def test_a_changed_file_and_a_wrong_mode_are_set_right(tmp_path):
    base = str(tmp_path / 'role')
    run({'path': base, 'files': FILES})
    os.chmod(os.path.join(base, 'values.yaml'), 0o644)
    os.chmod(base, 0o755)
    result = run({'path': base, 'files': FILES})
    assert result['changed'] is True and result['written'] == ['values.yaml']
    assert mode(os.path.join(base, 'values.yaml')) == 0o600 and mode(base) == 0o700
    changed = dict(FILES, **{'values.yaml': '# values\nkey: 2\n'})
    result = run({'path': base, 'files': changed, '_ansible_diff': True})
    assert result['written'] == ['values.yaml']
    assert result['diff'] == [{'before_header': 'values.yaml', 'after_header': 'values.yaml',
                               'before': '# values\nkey: 1\n', 'after': '# values\nkey: 2\n'}]


def test_secrets_never_in_the_diff(tmp_path):
    result = run({'path': str(tmp_path / 'role'), 'files': FILES, 'secret_files': SECRETS, '_ansible_diff': True})
    assert [d['after_header'] for d in result['diff']] == ['manifests/01-namespace-x.yaml', 'values.yaml']
    assert 'c2VjcmV0' not in repr(result)


def test_report_modes(tmp_path):
    base = str(tmp_path / 'reports')
    run({'path': base, 'files': {'gpu_health.json': '{}\n'}, 'mode': '0644', 'dir_mode': '0755'})
    assert mode(base) == 0o755 and mode(os.path.join(base, 'gpu_health.json')) == 0o644


@pytest.mark.parametrize('args, message', [
    ({'files': {'../escape.yaml': 'x'}}, "files: '../escape.yaml' is not a relative path inside the directory"),
    ({'files': {'/etc/passwd': 'x'}}, "files: '/etc/passwd' is not a relative path"),
    ({'files': {'a.yaml': 'x'}, 'secret_files': {'a.yaml': 'y'}}, 'a file is in both files and secret_files: a.yaml'),
    ({'mode': 'rw-r--r--'}, "mode: 'rw-r--r--' is not an octal mode"),
    ({'prune': ['../..']}, "prune: '../..' is not a relative path"),
])
def test_refusals_write_nothing(tmp_path, args, message):
    base = str(tmp_path / 'role')
    result = run(dict({'path': base}, **args), expect=AnsibleFailJson)
    assert message in result['msg']
    assert not os.path.exists(base)


def test_an_unquoted_yaml_mode_is_read_as_the_file_module_reads_it(tmp_path):
    base = str(tmp_path / 'role')
    run({'path': base, 'files': FILES, 'mode': 0o640, 'dir_mode': 0o750})
    assert mode(base) == 0o750 and mode(os.path.join(base, 'values.yaml')) == 0o640
