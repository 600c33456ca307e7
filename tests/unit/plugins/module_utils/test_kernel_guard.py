# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The every-kernel guard: modinfo of each kernel (real modinfo captures in tests/fixtures/dkms), the kernel
flavours read from dpkg (the real node tree in tests/fixtures/node-trees has no kernel metapackage), the prebuilt
flavour metapackage names, and DKMS autoinstall."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import tarfile

from ansible_collections.baremetal.gpu.plugins.module_utils import kernel_guard, node_facts

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures')


def modinfo(name):
    with open(os.path.join(FIXTURES, 'dkms', name)) as handle:
        return handle.read()


PREBUILT = 'ubuntu2404-modinfo-nvidia-580-open-prebuilt.txt'
MISSING = {'item': '6.8.0-151-generic', 'rc': 1, 'stdout': '',
           'stderr': 'modinfo: ERROR: Module nvidia not found.'}


def test_guard_lists_every_kernel_and_fails_the_next_boot_without_module():
    results = [{'item': '6.8.0-149-generic', 'rc': 0, 'stdout': modinfo(PREBUILT), 'stderr': ''}, MISSING]
    got = kernel_guard.guard(results, ['6.8.0-149-generic', '6.8.0-151-generic'], '6.8.0-151-generic', 'nvidia')
    assert got['with'] == ['6.8.0-149-generic'] and got['without'] == ['6.8.0-151-generic']
    assert got['rows'][0]['version'] == '580.178.04'
    assert got['rows'][0]['filename'] == '/lib/modules/6.8.0-149-generic/kernel/nvidia-580-open/nvidia.ko'
    assert got['next_boot_ok'] is False
    assert got['message'] == ('6.8.0-149-generic: nvidia 580.178.04; 6.8.0-151-generic: NO nvidia module. Next boot: '
                              '6.8.0-151-generic (WITHOUT the module: the node would boot without its GPU driver)')


def test_guard_passes_when_the_next_boot_kernel_has_the_module():
    results = [{'item': '6.8.0-149-generic', 'rc': 0, 'stdout': modinfo(PREBUILT), 'stderr': ''}, MISSING]
    got = kernel_guard.guard(results, ['6.8.0-149-generic', '6.8.0-151-generic'], '6.8.0-149-generic', 'nvidia')
    assert got['next_boot_ok'] is True and got['without'] == ['6.8.0-151-generic']


def test_guard_debian_module_name():
    results = [{'item': '6.1.0-41-amd64', 'rc': 1, 'stdout': '', 'stderr': 'not found'}]
    got = kernel_guard.guard(results, ['6.1.0-41-amd64'], '6.1.0-41-amd64', 'nvidia-current')
    assert 'NO nvidia-current module' in got['message'] and not got['next_boot_ok']


def test_guard_takes_the_module_name_modinfo_found():
    # playbooks/verify.yml asks modinfo for both names on every kernel (items [kernel, name]); on Debian 12 only
    # nvidia-current answers (the real capture), "nvidia" is not found (as on that node).
    kernel = '6.1.0-50-amd64'
    results = [{'item': [kernel, 'nvidia'], 'rc': 1, 'stdout': '', 'stderr': 'modinfo: ERROR: Module nvidia not found.'},
               {'item': [kernel, 'nvidia-current'], 'rc': 0, 'stderr': '',
                'stdout': modinfo('debian12-modinfo-nvidia-current-535-dkms.txt')},
               {'item': ['6.1.0-56-amd64', 'nvidia'], 'rc': 1, 'stdout': '', 'stderr': 'not found'},
               {'item': ['6.1.0-56-amd64', 'nvidia-current'], 'rc': 1, 'stdout': '', 'stderr': 'not found'}]
    got = kernel_guard.guard(results, [kernel, '6.1.0-56-amd64'], '6.1.0-56-amd64', 'nvidia')
    assert got['rows'][0]['module'] and got['rows'][0]['kmod'] == 'nvidia-current'
    assert got['rows'][0]['signer'] == 'baremetal.gpu molecule test MOK'
    assert got['rows'][0]['filename'] == '/lib/modules/6.1.0-50-amd64/updates/dkms/nvidia-current.ko'
    assert got['without'] == ['6.1.0-56-amd64'] and got['next_boot_ok'] is False
    assert got['message'].startswith('6.1.0-50-amd64: nvidia-current 535.261.03; 6.1.0-56-amd64: NO nvidia or nvidia-current module.')
    # Found first, then not found under the other name: the found one stays.
    got = kernel_guard.guard(list(reversed(results)), [kernel], kernel, 'nvidia')
    assert got['with'] == [kernel] and got['next_boot_ok'] is True


def test_flavour_packages():
    assert kernel_guard.flavour_packages(['generic', 'generic-hwe-24.04'], '580', False, True) == [
        'linux-modules-nvidia-580-open-generic', 'linux-modules-nvidia-580-open-generic-hwe-24.04']
    assert kernel_guard.flavour_packages(['generic'], '580', True, False) == ['linux-modules-nvidia-580-server-generic']


def test_headers_flavour_packages():
    # The flavours node_facts.kernel_packages reads from Debian 12 (linux-image-amd64) and Ubuntu (linux-generic,
    # linux-image-virtual): the headers metapackage of each, which brings the next kernel's headers.
    assert kernel_guard.headers_flavour_packages(['amd64']) == ['linux-headers-amd64']
    assert kernel_guard.headers_flavour_packages(['generic', 'virtual']) == ['linux-headers-generic', 'linux-headers-virtual']
    assert kernel_guard.headers_flavour_packages([]) == []


def test_dkms_autoinstall():
    assert kernel_guard.dkms_autoinstall(True, 'PACKAGE_NAME="nvidia"\nAUTOINSTALL="yes"\n') == []
    problems = kernel_guard.dkms_autoinstall(False, 'PACKAGE_NAME="nvidia"\n')
    assert len(problems) == 2 and '/etc/kernel/postinst.d/dkms is missing' in problems[0]
    assert "AUTOINSTALL=\"yes\" (found 'nothing')" in problems[1]
    assert kernel_guard.dkms_autoinstall(True, None) == []


def test_real_node_tree_has_no_kernel_metapackage(tmp_path):
    # The Ubuntu 24.04 test node (tests/fixtures/node-trees): one kernel, no linux-generic: no flavour to follow.
    with tarfile.open(os.path.join(FIXTURES, 'node-trees', 'ubuntu2404-node-580-open-dkms.tar')) as tar:
        tar.extractall(str(tmp_path))
    with open(os.path.join(str(tmp_path), 'commands', 'dpkg-query.out')) as handle:
        dpkg = handle.read()
    got = node_facts.kernel_packages(str(tmp_path), lambda argv: (0, dpkg, ''), ['6.8.0-151-generic'])
    assert got == {'kernel_metapackages': [], 'kernel_flavours': [], 'kernel_next_boot': '6.8.0-151-generic'}


def test_kernel_flavours_from_metapackages(tmp_path):
    # dpkg-query lines in the captured format, with Ubuntu's and Debian's kernel metapackage names.
    dpkg = '\n'.join([
        'ii  linux-generic-hwe-24.04 6.14.0-36.36~24.04.1', 'ii  linux-image-generic-hwe-24.04 6.14.0-36.36~24.04.1',
        'ii  linux-image-6.8.0-149-generic 6.8.0-149.149', 'ii  linux-headers-generic 6.8.0-151.151',
        'ii  linux-firmware 20240318.git3b128b60-0ubuntu2.21', 'ii  linux-image-amd64 6.1.158-1',
        'rc  linux-lowlatency 6.8.0-50.50', 'ii  linux-base 4.5ubuntu9'])
    os.makedirs(os.path.join(str(tmp_path), 'boot'))
    os.symlink('vmlinuz-6.8.0-149-generic', os.path.join(str(tmp_path), 'boot', 'vmlinuz'))
    got = node_facts.kernel_packages(str(tmp_path), lambda argv: (0, dpkg, ''), ['6.8.0-149-generic', '6.14.0-36-generic'])
    assert got['kernel_flavours'] == ['amd64', 'generic-hwe-24.04']
    assert got['kernel_metapackages'] == ['linux-generic-hwe-24.04', 'linux-image-amd64', 'linux-image-generic-hwe-24.04']
    # /boot/vmlinuz points at the kernel the node boots next.
    assert got['kernel_next_boot'] == '6.8.0-149-generic'
