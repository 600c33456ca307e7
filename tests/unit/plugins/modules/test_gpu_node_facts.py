# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""baremetal.gpu.gpu_node_facts main(): read-only, exact commands under a C locale, the subset honoured.

The node's files are this test machine's own (the readers are tested on captured trees in
tests/unit/plugins/module_utils/test_node_facts.py); here run_command and the binary lookup are
mocked so the commands the module runs can be asserted exactly.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible.module_utils import basic

from ansible_collections.baremetal.gpu.plugins.modules import gpu_node_facts
from ansible_collections.baremetal.gpu.tests.unit.plugins.modules.utils import (
    AnsibleExitJson,
    AnsibleFailJson,
    set_module_args,
)

H100_LSPCI = '0000:00:06.0 3D controller [0302]: NVIDIA Corporation GH100 [H100 SXM5 80GB] [10de:2330] (rev a1)\n'


@pytest.fixture
def calls(monkeypatch):
    recorded = []

    def run_command(module, args, **kwargs):
        recorded.append((list(args), kwargs.get('environ_update')))
        if args[0].endswith('lspci'):
            return 0, H100_LSPCI, ''
        return 1, '', ''

    def get_bin_path(module, name, required=False, opt_dirs=None):
        return None if name in ('nvidia-smi', 'docker', 'crio', 'podman', 'crun', 'nvidia-ctk',
                                'nvidia-container-runtime') else '/usr/bin/' + name

    monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)
    monkeypatch.setattr(basic.AnsibleModule, 'get_bin_path', get_bin_path)
    return recorded


def run_module(args):
    with set_module_args(args):
        with pytest.raises(AnsibleExitJson) as result:
            gpu_node_facts.main()
    return result.value.result


def test_pci_subset_runs_only_lspci(calls):
    result = run_module({'gather_subset': ['pci']})
    assert result['changed'] is False
    assert calls == [(['/usr/bin/lspci', '-Dnn', '-d', '10de:'], {'LC_ALL': 'C', 'LANG': 'C'})]
    facts = result['ansible_facts']['gpu_node']
    assert set(facts) == {'container', 'gpus', 'nvidia_pci_devices', 'nvidia_pci_functions', 'pci_source',
                          'nvswitches', 'nvidia_other_bridges', 'system_kind', 'system_kind_note'}


def test_all_sections_run_only_read_only_commands(calls):
    result = run_module({})
    facts = result['ansible_facts']['gpu_node']
    for key in ('gpus', 'nouveau_loaded', 'secure_boot', 'installed_kernels', 'driver_packages',
                'container_runtimes', 'rke2', 'dkms_disk_free_mb'):
        assert key in facts
    read_only = {('lspci', '-Dnn'), ('mokutil', '--sb-state'), ('dpkg-query', '-W'), ('rpm', '-qa'),
                 ('containerd', '--version'), ('containerd', 'version'), ('runc', '--version'), ('runc', 'version')}
    for argv, environ in calls:
        assert (argv[0].rsplit('/', 1)[-1], argv[1]) in read_only, argv
        assert environ == {'LC_ALL': 'C', 'LANG': 'C'}


def test_check_mode_reads_too(calls):
    result = run_module({'gather_subset': ['pci'], '_ansible_check_mode': True})
    assert result['ansible_facts']['gpu_node']['pci_source'] in ('sysfs', 'lspci', 'none')
    assert calls


def test_unknown_subset_refused(calls):
    with set_module_args({'gather_subset': ['gpus']}):
        with pytest.raises(AnsibleFailJson) as result:
            gpu_node_facts.main()
    assert 'gather_subset' in result.value.result['msg']


def test_runtime_paths_list_an_executable_off_path_without_setting_the_fact(calls, tmp_path):
    runtime = tmp_path / 'nvidia-container-runtime'
    runtime.write_text('#!/bin/sh\n')
    runtime.chmod(0o755)
    missing = str(tmp_path / 'no-such-runtime')
    plain = tmp_path / 'not-executable'
    plain.write_text('')
    result = run_module({'gather_subset': ['runtimes'], 'runtime_paths': [str(runtime), missing, str(plain)],
                         'set_fact': False})
    assert 'ansible_facts' not in result
    listed = [item['path'] for item in result['gpu_node']['container_runtimes']]
    # On PATH (the mock): containerd and runc; then the one executable of the paths given.
    assert listed == ['/usr/bin/containerd', '/usr/bin/runc', str(runtime)]
    assert result['gpu_node']['container_runtimes'][-1]['name'] == 'nvidia-container-runtime'
    assert ([str(runtime), '--version'], {'LC_ALL': 'C', 'LANG': 'C'}) in calls


def test_a_runtime_path_already_on_path_is_listed_once(calls):
    result = run_module({'gather_subset': ['runtimes'], 'runtime_paths': ['/usr/bin/containerd']})
    listed = [item['path'] for item in result['ansible_facts']['gpu_node']['container_runtimes']]
    assert listed.count('/usr/bin/containerd') == 1


def test_fingerprint_reads_no_facts_and_runs_no_command(calls):
    result = run_module({'gather_subset': ['kernels', 'driver'], 'fingerprint': True,
                         'fingerprint_paths': ['/etc/apt/sources.list.d']})
    assert calls == []
    assert 'ansible_facts' not in result and 'gpu_node' not in result
    assert 'path:/etc/apt/sources.list.d' in result['fingerprint']['inputs']
    assert 'path:/var/lib/dpkg/status' in result['fingerprint']['inputs']
    assert result == run_module({'gather_subset': ['kernels', 'driver'], 'fingerprint': True,
                                 'fingerprint_paths': ['/etc/apt/sources.list.d']})


@pytest.mark.parametrize('subset, words', [
    (['all'], 'must name the subsets (driver, kernels, modules, pci, secure_boot), not all'),
    (['pci', 'rke2'], 'no fingerprint for rke2'),
])
def test_fingerprint_refuses_subsets_it_cannot_cover(calls, subset, words):
    with set_module_args({'gather_subset': subset, 'fingerprint': True}):
        with pytest.raises(AnsibleFailJson) as result:
            gpu_node_facts.main()
    assert words in result.value.result['msg']
    assert calls == []


def test_with_fingerprint_reads_the_facts_and_the_same_fingerprint(calls):
    alone = run_module({'gather_subset': ['kernels'], 'fingerprint': True,
                        'fingerprint_paths': ['/etc/apt/sources.list.d']})
    both = run_module({'gather_subset': ['kernels'], 'with_fingerprint': True,
                       'fingerprint_paths': ['/etc/apt/sources.list.d']})
    assert both['fingerprint'] == alone['fingerprint']
    assert 'kernels' in both['ansible_facts']['gpu_node']


def test_records_journal_and_paths_come_with_the_facts(calls, tmp_path):
    state = tmp_path / 'state'
    state.mkdir()
    (state / 'holds.json').write_text('{"held": ["nvidia-driver-580-open"]}\n')
    (state / 'notes.txt').write_text('not a record')
    absent = str(tmp_path / 'absent.conf')
    result = run_module({'gather_subset': ['kernels'], 'records_dir': str(state), 'dpkg_journal': True,
                         'stat_paths': [str(state), absent]})
    assert result['records_dir_exists'] is True
    assert result['records'] == {'holds': {'held': ['nvidia-driver-580-open']}}
    assert isinstance(result['dpkg_journal'], list)
    assert result['paths'][str(state)]['isdir'] is True
    assert result['paths'][absent] == {'exists': False, 'isdir': False, 'mtime': None}
    assert 'fingerprint' not in result


def test_a_record_that_is_not_json_fails_naming_the_file(calls, tmp_path):
    (tmp_path / 'reboot.json').write_text('{"boot_id": ')
    with set_module_args({'gather_subset': ['kernels'], 'records_dir': str(tmp_path)}):
        with pytest.raises(AnsibleFailJson) as result:
            gpu_node_facts.main()
    assert '%s/reboot.json is not JSON' % tmp_path in result.value.result['msg']
