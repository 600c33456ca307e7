# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_node_facts' readers on captured node trees (tests/fixtures/node-trees/*.tar, see SOURCE.md there).

The captured trees come from real machines without a GPU (a Debian 12 CI sandbox, an Ubuntu 24.04
test node after a real DKMS build of the open 580 driver), with the commands' recorded answers. No
GPU machine was at hand when they were captured: the GPU trees below are built in the test from
real data (device IDs and names from the real nvidia-smi captures in tests/fixtures/nvidia-smi-xml,
the loaded-driver banners quoted in SOURCE.md), and say so.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fnmatch
import os
import tarfile

import pytest

from ansible_collections.baremetal.gpu.plugins.module_utils import node_facts

TREES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'node-trees')
# Real /proc/driver/nvidia/version first lines (sources in tests/fixtures/node-trees/SOURCE.md).
OPEN_BANNER = ('NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  555.58.02  Release Build  '
               '(dvs-builder@U16-I3-B03-4-3)  Tue Jun 25 01:26:03 UTC 2024\n')
PROPRIETARY_BANNER = 'NVRM version: NVIDIA UNIX x86_64 Kernel Module  515.76  Mon Sep 12 19:21:56 UTC 2022\n'
AARCH64_OPEN_BANNER = 'NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  580.65.06  Release Build\n'
H100_LSPCI = '0000:00:06.0 3D controller [0302]: NVIDIA Corporation GH100 [H100 SXM5 80GB] [10de:2330] (rev a1)\n'


class Recorded(object):
    """run() answering from a tree's commands/<name>.{rc,out}; records every argv it was asked."""

    NAMES = {('lspci',): 'lspci', ('mokutil',): 'mokutil', ('dpkg-query',): 'dpkg-query',
             ('systemctl', 'is-enabled'): 'systemctl-is-enabled'}

    def __init__(self, tree, extra=None):
        self.tree = tree
        self.extra = extra or {}
        self.calls = []

    def __call__(self, argv):
        self.calls.append(list(argv))
        key = tuple(argv[:2]) if argv[0] == 'systemctl' else (os.path.basename(argv[0]),)
        if key in self.extra:
            return self.extra[key]
        name = self.NAMES.get(key)
        base = os.path.join(self.tree, 'commands', name or 'none')
        if name and os.path.exists(base + '.rc'):
            with open(base + '.rc') as rc, open(base + '.out') as out:
                return int(rc.read().strip()), out.read(), ''
        return None, '', '%s not found' % argv[0]


def no_binaries(_name):
    return None


@pytest.fixture
def tree(tmp_path):
    """Extract tests/fixtures/node-trees/<name>.tar into a temporary directory; return its path."""
    def extract(name):
        dest = os.path.join(str(tmp_path), name)
        with tarfile.open(os.path.join(TREES, name + '.tar')) as archive:
            archive.extractall(dest)
        return dest
    return extract


# ---- captured trees ------------------------------------------------------------------------------

def test_ubuntu2404_test_node_after_open_dkms_build(tree):
    root = tree('ubuntu2404-node-580-open-dkms')
    run = Recorded(root)
    facts = node_facts.gather(root, run, no_binaries, '6.18.44-fc-v669')
    assert facts['container'] is True
    assert facts['gpus'] == [] and facts['nvidia_pci_devices'] == [] and facts['pci_source'] == 'sysfs'
    assert facts['nouveau_loaded'] == 'unknown'          # no /proc/modules in the container
    assert facts['secure_boot'] == 'unknown' and facts['secure_boot_source'] == 'none'
    assert facts['installed_kernels'] == ['6.8.0-151-generic']
    assert facts['kernels'] == [{'version': '6.8.0-151-generic', 'headers': True}]
    assert facts['kernel_headers_for_running'] is False  # the running kernel is the container host's
    assert facts['running_kernel_is_host'] is True
    assert facts['driver_dkms_modules'] == [
        {'module': 'nvidia', 'version': '580.178.04', 'kernel': '6.8.0-151-generic', 'arch': 'x86_64'}]
    assert 'nvidia-dkms-580-open 580.178.04-0ubuntu0.24.04.1' in facts['driver_packages']
    assert facts['driver_install_method'] == 'package'
    assert facts['driver_installed_versions'] == ['580.178.04'] and facts['driver_installed_branches'] == ['580']
    assert facts['rke2']['present'] is False and facts['rke2']['role'] == ''


def test_stack_packages_and_holds(tree):
    # The captured dpkg-query answer, with two packages the driver role holds there marked "hi"
    # (as apt-mark hold leaves them; the capture was taken before the role held them).
    root = tree('ubuntu2404-node-580-open-dkms')
    with open(os.path.join(root, 'commands', 'dpkg-query.out')) as handle:
        lines = handle.read().splitlines()
    held = ('nvidia-headless-580-open', 'nvidia-dkms-580-open')
    answer = '\n'.join(('hi' + line[2:]) if line.split()[1:2] and line.split()[1] in held else line for line in lines)
    facts = node_facts.gather(root, Recorded(root, {('dpkg-query',): (0, answer + '\n', '')}), no_binaries, 'x',
                              sections=('driver',))
    assert facts['driver_held_packages'] == sorted(held)
    assert 'nvidia-dkms-580-open' in facts['driver_stack_packages']
    assert 'libnvidia-compute-580' in facts['driver_stack_packages']
    assert 'nvidia-firmware-580-580.178.04' in facts['driver_stack_packages']
    assert not [p for p in facts['driver_stack_packages'] if not p.startswith(('nvidia-', 'libnvidia-'))]
    # driver_packages keeps what it listed before: the unheld ones.
    assert not [p for p in facts['driver_packages'] if p.split()[0] in held]
    assert facts['driver_installed_branches'] == ['580']


def test_ci_sandbox_without_nvidia(tree):
    root = tree('debian12-ci-sandbox')
    facts = node_facts.gather(root, Recorded(root), no_binaries, '6.18.44-fc-v669')
    assert facts['container'] is True                    # /.dockerenv
    assert facts['pci_source'] == 'sysfs' and facts['gpus'] == []
    assert facts['driver_install_method'] == 'none' and facts['driver_packages'] == []
    assert facts['installed_kernels'] == []


def test_only_the_asked_sections_are_read(tree):
    root = tree('ubuntu2404-node-580-open-dkms')
    run = Recorded(root)
    facts = node_facts.gather(root, run, no_binaries, 'x', sections=('pci', 'kernels'))
    assert 'secure_boot' not in facts and 'driver_packages' not in facts and 'rke2' not in facts
    # kernels reads the kernel metapackages (dpkg-query) and the next boot's kernel, nothing else.
    assert [call[0] for call in run.calls] == ['dpkg-query'], run.calls
    assert 'kernel_next_boot' in facts and 'kernel_metapackages' in facts


# ---- GPU trees built from real data --------------------------------------------------------------

def write(root, relative, content, binary=False):
    path = os.path.join(str(root), relative)
    if not os.path.isdir(os.path.dirname(path)):
        os.makedirs(os.path.dirname(path))
    with open(path, 'wb' if binary else 'w') as handle:
        handle.write(content)


def pci_function(root, address, vendor, device, klass):
    for name, value in (('vendor', vendor), ('device', device), ('class', klass)):
        write(root, 'sys/bus/pci/devices/%s/%s' % (address, name), value + '\n')


@pytest.fixture
def h100_host(tmp_path):
    """An H100 host as the lent machine of 2026-11-22 showed it: 0000:00:06.0, device 0x2330, 580 loaded."""
    pci_function(tmp_path, '0000:00:00.0', '0x8086', '0x1237', '0x060000')
    pci_function(tmp_path, '0000:00:06.0', '0x10de', '0x2330', '0x030200')
    write(tmp_path, 'proc/modules', 'nvidia_uvm 1798144 0 - Live 0x0000000000000000 (POE)\n'
                                    'nvidia 11485184 2 nvidia_uvm, Live 0x0000000000000000 (POE)\n')
    write(tmp_path, 'sys/module/nvidia/version', '580.159.04\n')
    return tmp_path


def test_gpu_classified_and_named_from_lspci(h100_host):
    facts = node_facts.pci(str(h100_host), H100_LSPCI)
    assert facts['nvidia_pci_devices'] == ['0000:00:06.0']
    gpu = facts['gpus'][0]
    assert gpu['device_id'] == '0x2330' and gpu['family'] == 'Hopper' and gpu['generation'] == 'turing-to-ada'
    assert gpu['name'] == 'NVIDIA Corporation GH100 [H100 SXM5 80GB]'
    assert gpu['open_supported'] is True and gpu['open_required'] is False


def test_loaded_driver_without_proc_banner_falls_back_to_sysfs(h100_host):
    facts = node_facts.modules(str(h100_host))
    assert facts == {'nouveau_loaded': False, 'nvidia_loaded_version': '580.159.04', 'nvidia_loaded_flavour': ''}


def test_audio_usb_and_nvswitch_functions_are_not_gpus(tmp_path):
    # A Turing card's four functions (RTX 2080, 0x1E87 as in the real dual-2080 capture) and an NVSwitch.
    pci_function(tmp_path, '0000:65:00.0', '0x10de', '0x1e87', '0x030000')
    pci_function(tmp_path, '0000:65:00.1', '0x10de', '0x10f8', '0x040300')   # HD audio
    pci_function(tmp_path, '0000:65:00.2', '0x10de', '0x1ad8', '0x0c0330')   # USB 3.1 host
    pci_function(tmp_path, '0000:65:00.3', '0x10de', '0x1ad9', '0x0c8000')   # USB-C UCSI
    pci_function(tmp_path, '0000:07:00.0', '0x10de', '0x22a3', '0x068000')   # NVSwitch (bridge class)
    facts = node_facts.pci(str(tmp_path))
    assert [g['address'] for g in facts['gpus']] == ['0000:65:00.0']
    assert len(facts['nvidia_pci_devices']) == 5


def test_lspci_stands_in_for_missing_sysfs(tmp_path):
    facts = node_facts.pci(str(tmp_path), H100_LSPCI)
    assert facts['pci_source'] == 'lspci'
    assert [g['device_id'] for g in facts['gpus']] == ['0x2330']


@pytest.mark.parametrize('banner, version, flavour', [
    (OPEN_BANNER, '555.58.02', 'open'),
    (PROPRIETARY_BANNER, '515.76', 'proprietary'),
    (AARCH64_OPEN_BANNER, '580.65.06', 'open'),
    ('', '', ''),
])
def test_proc_driver_banner(banner, version, flavour):
    assert node_facts.parse_proc_driver_version(banner) == (version, flavour)


def test_nouveau_loaded(tmp_path):
    write(tmp_path, 'proc/modules', 'nouveau 2359296 0 - Live 0x0000000000000000\nttm 98304 1 nouveau, Live 0x0\n')
    assert node_facts.modules(str(tmp_path))['nouveau_loaded'] is True


# ---- Secure Boot: the EFI variable first, mokutil second -------------------------------------------

@pytest.mark.parametrize('value, state', [(b'\x06\x00\x00\x00\x01', 'enabled'), (b'\x06\x00\x00\x00\x00', 'disabled')])
def test_secure_boot_from_efivars_before_mokutil(tmp_path, value, state):
    write(tmp_path, node_facts.EFI_SECURE_BOOT, value, binary=True)
    run = Recorded(str(tmp_path), {('mokutil',): (0, 'SecureBoot enabled\n', '')})
    got = node_facts.secure_boot(str(tmp_path), False, run)
    assert (got['secure_boot'], got['secure_boot_source']) == (state, 'efivars')
    assert run.calls == []


def test_secure_boot_from_mokutil_when_the_variable_is_unreadable(tmp_path):
    os.makedirs(os.path.join(str(tmp_path), 'sys/firmware/efi'))
    run = Recorded(str(tmp_path), {('mokutil',): (0, 'SecureBoot enabled\n', '')})
    got = node_facts.secure_boot(str(tmp_path), False, run)
    assert (got['secure_boot'], got['secure_boot_source']) == ('enabled', 'mokutil')
    assert run.calls == [['mokutil', '--sb-state']]


@pytest.mark.parametrize('efi, container, state', [
    (True, False, 'unknown'), (False, True, 'unknown'), (False, False, 'not_uefi')])
def test_secure_boot_undecided(tmp_path, efi, container, state):
    if efi:
        os.makedirs(os.path.join(str(tmp_path), 'sys/firmware/efi'))
    run = Recorded(str(tmp_path), {('mokutil',): (255, '', 'EFI variables are not supported on this system\n')})
    assert node_facts.secure_boot(str(tmp_path), container, run)['secure_boot'] == state


# ---- kernels ----------------------------------------------------------------------------------------

def test_kernel_without_headers_and_dangling_build_link(tmp_path):
    write(tmp_path, 'boot/vmlinuz-6.8.0-149-generic', '')
    write(tmp_path, 'boot/vmlinuz-6.8.0-151-generic', '')
    write(tmp_path, 'lib/modules/6.8.0-149-generic/build/Makefile', '')
    os.makedirs(os.path.join(str(tmp_path), 'lib/modules/6.8.0-151-generic'))
    os.symlink('/nonexistent/headers', os.path.join(str(tmp_path), 'lib/modules/6.8.0-151-generic/build'))
    got = node_facts.kernels(str(tmp_path), '6.8.0-149-generic')
    assert got['kernels'] == [{'version': '6.8.0-149-generic', 'headers': True},
                              {'version': '6.8.0-151-generic', 'headers': False}]
    assert got['kernel_headers_for_running'] is True


def test_image_without_modules_directory_is_not_a_kernel(tmp_path):
    write(tmp_path, 'boot/vmlinuz-5.15.0-25-generic', '')
    assert node_facts.kernels(str(tmp_path), 'x')['installed_kernels'] == []


# ---- RKE2: which role this node has -------------------------------------------------------------------

@pytest.mark.parametrize('installed, enabled, state, config, role, words', [
    ([], [], '', {}, '', 'no rke2-server or rke2-agent unit'),
    (['rke2-agent'], [], '', {}, 'agent', 'only rke2-agent is installed'),
    (['rke2-server'], ['rke2-server'], '', {}, 'server', 'only rke2-server is installed'),
    # Defect 1: a tarball install has both units; the agent is enabled but not active yet after a reboot.
    (['rke2-server', 'rke2-agent'], ['rke2-agent'], '', {'server': 'https://10.0.0.1:9345'}, 'agent',
     'only rke2-agent is enabled'),
    (['rke2-server', 'rke2-agent'], ['rke2-server'], '', {}, 'server', 'only rke2-server is enabled'),
    (['rke2-server', 'rke2-agent'], ['rke2-server', 'rke2-agent'], '', {}, '', 'both rke2-server and rke2-agent are enabled'),
    (['rke2-server', 'rke2-agent'], [], '/var/lib/rancher/rke2/server/db', {}, 'server', 'has run rke2-server'),
    (['rke2-server', 'rke2-agent'], [], '', {'tls-san': '[api.example]'}, 'server', 'server-only keys (tls-san)'),
    (['rke2-server', 'rke2-agent'], [], '', {'server': 'https://10.0.0.1:9345'}, '', 'nothing says which'),
])
def test_rke2_role(installed, enabled, state, config, role, words):
    got_role, reason = node_facts.rke2_role(installed, enabled, state, config)
    assert got_role == role
    assert words in reason


def test_rke2_tarball_agent_after_reboot(tmp_path):
    """Both units installed, agent enabled but not active: the role must be agent (defect 1)."""
    write(tmp_path, 'usr/local/bin/rke2', '')
    write(tmp_path, 'usr/local/lib/systemd/system/rke2-server.service', '')
    write(tmp_path, 'usr/local/lib/systemd/system/rke2-agent.service', '')
    write(tmp_path, 'etc/rancher/rke2/config.yaml', 'server: https://10.0.0.1:9345\ntoken: redacted\n')
    run = Recorded(str(tmp_path), {
        ('rke2',): (0, 'rke2 version v1.31.6+rke2r1 (d8cd6e0e7a2a9a6d4d8a5d7c6a7e7c8d9f0e1a2b)\ngo version go1.23.6\n', ''),
        ('systemctl', 'is-enabled'): (1, 'disabled\nenabled\n', ''),
    })
    got = node_facts.rke2(str(tmp_path), run)['rke2']
    assert got['role'] == 'agent' and got['unit'] == 'rke2-agent'
    assert got['version'] == 'v1.31.6+rke2r1' and got['version_plain'] == '1.31.6'
    assert got['units_installed'] == ['rke2-server', 'rke2-agent'] and got['units_enabled'] == ['rke2-agent']
    assert ['systemctl', 'is-enabled', 'rke2-server', 'rke2-agent'] in run.calls


def test_rke2_data_dir_from_config(tmp_path):
    write(tmp_path, 'usr/local/lib/systemd/system/rke2-server.service', '')
    write(tmp_path, 'usr/local/lib/systemd/system/rke2-agent.service', '')
    write(tmp_path, 'etc/rancher/rke2/config.yaml', 'data-dir: /srv/rke2\n')
    write(tmp_path, 'srv/rke2/server/token', 'redacted')
    run = Recorded(str(tmp_path), {('systemctl', 'is-enabled'): (1, 'disabled\ndisabled\n', '')})
    got = node_facts.rke2(str(tmp_path), run)['rke2']
    assert got['data_dir'] == '/srv/rke2' and got['role'] == 'server'


# ---- versions -------------------------------------------------------------------------------------

@pytest.mark.parametrize('line, version', [
    ('containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+deb12u3', '1.6.20'),
    ('containerd github.com/containerd/containerd/v2 2.2.1 ', '2.2.1'),
    ('containerd containerd.io v2.0.2 c507a0257ea6462fbd6f5ba4f5c74facb04021f4', '2.0.2'),
    ('Docker version 28.2.2, build e6534b4', '28.2.2'),
    ('runc version 1.1.5+ds1', '1.1.5'),
    ('no version here', ''),
])
def test_parse_version(line, version):
    assert node_facts.parse_version(line) == version


def test_lspci_parse():
    rows = node_facts.parse_lspci(H100_LSPCI + '0000:00:00.0 Host bridge [0600]: Intel Corporation 440FX [8086:1237] (rev 02)\n')
    assert rows[0] == {'address': '0000:00:06.0', 'class': '0x0302', 'vendor': '0x10de', 'device': '0x2330',
                       'name': 'NVIDIA Corporation GH100 [H100 SXM5 80GB]'}
    assert rows[1]['vendor'] == '0x8086'


@pytest.mark.parametrize('packages, versions', [
    (['nvidia-kernel-common-580 580.178.04-0ubuntu0.24.04.1', 'linux-modules-nvidia-580-open-6.8.0-149-generic 6.8.0-149.149'],
     ['580.178.04']),
    (['nvidia-driver 550.163.01-2', 'nvidia-kernel-dkms 550.163.01-2', 'firmware-nvidia-gsp 550.163.01-2'], ['550.163.01']),
    (['kmod-nvidia-latest-dkms 3:580.95.05-1.el9'], ['580.95.05']),
    (['nvidia-driver-580 580.178.04-0ubuntu0.24.04.1', 'nvidia-dkms-595-open 595.99.02-0ubuntu0.24.04.1'],
     ['580.178.04', '595.99.02']),
    ([], []),
])
def test_installed_driver_versions(packages, versions):
    assert node_facts.installed_driver_versions(packages) == versions


# ---- NVSwitch and the system kind, on real lspci captures (tests/fixtures/lspci/SOURCE.md) ------------

LSPCI = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'lspci')


def lspci_capture(name):
    with open(os.path.join(LSPCI, name)) as handle:
        return handle.read()


def test_hgx_h100_has_four_nvswitches_and_eight_gpus(tmp_path):
    facts = node_facts.pci(str(tmp_path), lspci_capture('hgx-h100-rhel94-lspci-Dnn.txt'))
    assert facts['pci_source'] == 'lspci'
    assert [s['address'] for s in facts['nvswitches']] == ['0000:07:00.0', '0000:08:00.0', '0000:09:00.0', '0000:0a:00.0']
    assert set(s['model'] for s in facts['nvswitches']) == {'H100 NVSwitch (HGX H100/H200)'}
    assert len(facts['gpus']) == 8 and set(g['family'] for g in facts['gpus']) == {'Hopper'}
    assert facts['nvidia_other_bridges'] == []
    assert facts['system_kind'] == 'hgx_nvswitch'
    assert 'Fabric Manager' in facts['system_kind_note']


@pytest.mark.parametrize('capture, bridge, gpu', [
    ('mcp61-geforce-g100-lspci-nn.txt', ('00:07.0', '0x03ef', 'NVIDIA Corporation MCP61 Ethernet'), '0x06e6'),
    ('mcp51-geforce-8800gts-lspci-nn-grep-nv.txt',
     ('00:14.0', '0x0269', 'nVidia Corporation MCP51 Ethernet Controller'), '0x0193'),
])
def test_nforce_ethernet_of_class_0680_is_not_an_nvswitch(tmp_path, capture, bridge, gpu):
    facts = node_facts.pci(str(tmp_path), lspci_capture(capture))
    # The chipset's Ethernet controller is an NVIDIA function of class 0x0680, exactly like an NVSwitch ...
    assert [(b['address'], b['device'], b['name']) for b in facts['nvidia_other_bridges']] == [bridge]
    assert [b['class'] for b in facts['nvidia_other_bridges']] == ['0x0680']
    # ... and it is not one: no NVSwitch, a PCIe system.
    assert facts['nvswitches'] == [] and facts['system_kind'] == 'pcie'
    assert [g['device_id'] for g in facts['gpus']] == [gpu]


def test_nvswitch_from_sysfs_by_device_id_without_a_name(tmp_path):
    # sysfs knows no names: the device ID alone tells an NVSwitch (22a3) from an nForce Ethernet (03ef).
    pci_function(tmp_path, '0000:1b:00.0', '0x10de', '0x2330', '0x030200')
    pci_function(tmp_path, '0000:07:00.0', '0x10de', '0x22a3', '0x068000')
    pci_function(tmp_path, '0000:00:07.0', '0x10de', '0x03ef', '0x068000')
    facts = node_facts.pci(str(tmp_path))
    assert [s['address'] for s in facts['nvswitches']] == ['0000:07:00.0']
    assert [b['address'] for b in facts['nvidia_other_bridges']] == ['0000:00:07.0']
    assert facts['system_kind'] == 'hgx_nvswitch'


def test_pcie_and_no_gpu_kinds(tmp_path):
    assert node_facts.pci(str(tmp_path), H100_LSPCI)['system_kind'] == 'pcie'
    assert node_facts.pci(str(tmp_path))['system_kind'] == 'none'
    # Blackwell: the kind cannot be read from PCI, and the note says so.
    kind, note = node_facts.system_kind([{'generation': 'blackwell-or-newer'}], [])
    assert kind == 'pcie' and 'NVLink subnet manager' in note and 'IMEX' in note


# ---- fingerprint: what a reading depended on, to tell whether it still holds -------------------------

DECIDE_SECTIONS = ('pci', 'modules', 'secure_boot', 'kernels', 'driver')


def _write(root, relative, text):
    path = os.path.join(root, relative)
    if not os.path.isdir(os.path.dirname(path)):
        os.makedirs(os.path.dirname(path))
    with open(path, 'w') as handle:
        handle.write(text)
    return path


def _replace(root, relative, text):
    """Write a file anew under another inode, as dpkg and ansible's copy do (write a temporary file, rename)."""
    _write(root, relative + '.new', text)
    os.rename(os.path.join(root, relative + '.new'), os.path.join(root, relative))


@pytest.fixture
def decided_node(tree):
    """The captured Ubuntu 24.04 tree with what the driver decision also reads: dpkg's status, apt's
    sources, the driver role's records, the boot ID and /proc/modules."""
    root = tree('ubuntu2404-node-580-open-dkms')
    _write(root, 'var/lib/dpkg/status', 'Package: nvidia-driver-580-open\nStatus: install ok installed\n')
    os.makedirs(os.path.join(root, 'var/lib/dpkg/updates'))
    _write(root, 'etc/apt/sources.list.d/ubuntu.sources', 'Types: deb\nSuites: noble noble-updates\n')
    _write(root, 'var/lib/baremetal-gpu/nvidia_driver/holds.json', '["nvidia-driver-580-open"]')
    _write(root, 'proc/sys/kernel/random/boot_id', '0f6b0a52-3c1e-4a59-9a44-2f64b3c0a1de\n')
    _write(root, 'proc/modules', 'nvidia 104861696 0 - Live 0x0000000000000000 (POE)\n')
    _write(root, 'var/log/syslog', 'something else\n')
    return root


DECIDE_PATHS = ['/var/lib/baremetal-gpu/nvidia_driver', '/var/lib/dpkg/updates', '/etc/apt/sources.list.d',
                '/etc/apt/preferences.d']


def _fp(root, which=no_binaries):
    return node_facts.fingerprint(root, DECIDE_SECTIONS, DECIDE_PATHS, which)


def test_fingerprint_is_stable_and_reads_no_command(decided_node):
    first = _fp(decided_node)
    assert first == _fp(decided_node)
    assert len(first['digest']) == 64
    # Every section's inputs and every path asked for are listed, each once.
    assert {'path:/var/lib/dpkg/status', 'content:/proc/modules', 'names:/sys/bus/pci/devices',
            'glob:/var/lib/dkms/nvidia*/*/*/*/module', 'path:/var/lib/baremetal-gpu/nvidia_driver',
            'path:/etc/apt/preferences.d', 'which:nvidia-smi'} <= set(first['inputs'])
    # What the decision does not read changes nothing.
    _write(decided_node, 'var/log/syslog', 'more of something else\n')
    _write(decided_node, 'tmp/scratch', 'x')
    assert _fp(decided_node) == first


@pytest.mark.parametrize('change, label', [
    (lambda r: _replace(r, 'var/lib/dpkg/status', 'Package: nvidia-driver-595-open\nStatus: hold ok installed\n'),
     'path:/var/lib/dpkg/status'),
    (lambda r: _write(r, 'var/lib/dpkg/updates/0001', 'Package: nvidia-driver-595-open\n'), 'path:/var/lib/dpkg/updates'),
    (lambda r: _replace(r, 'var/lib/baremetal-gpu/nvidia_driver/holds.json', '[]'),
     'path:/var/lib/baremetal-gpu/nvidia_driver'),
    (lambda r: _write(r, 'var/lib/baremetal-gpu/nvidia_driver/reboot.json', '{}'), 'path:/var/lib/baremetal-gpu/nvidia_driver'),
    (lambda r: _write(r, 'etc/apt/preferences.d/pin', 'Package: *\n'), 'path:/etc/apt/preferences.d'),
    (lambda r: _write(r, 'proc/modules', 'nouveau 2998272 0 - Live 0x0000000000000000\n'), 'content:/proc/modules'),
    (lambda r: _write(r, 'proc/sys/kernel/random/boot_id', '7d1c7f0e-0000-4000-8000-000000000001\n'),
     'content:/proc/sys/kernel/random/boot_id'),
    (lambda r: os.makedirs(os.path.join(r, 'var/lib/dkms/nvidia/580.178.04/6.8.0-152-generic/x86_64/module')),
     'glob:/var/lib/dkms/nvidia*/*/*/*/module'),
    (lambda r: _write(r, 'boot/vmlinuz-6.8.0-152-generic', 'kernel'), 'path:/boot'),
    (lambda r: os.symlink('vmlinuz-6.8.0-151-generic', os.path.join(r, 'boot/vmlinuz')), 'path:/boot'),
    (lambda r: os.rmdir(os.path.join(r, 'lib/modules/6.8.0-151-generic/build')), 'builds:/lib/modules'),
])
def test_fingerprint_sees_each_input_change(decided_node, change, label):
    before = _fp(decided_node)
    change(decided_node)
    after = _fp(decided_node)
    assert after['digest'] != before['digest']
    assert label in node_facts.fingerprint_changes(before, after)


def test_fingerprint_sees_where_nvidia_smi_is_found(decided_node):
    before = _fp(decided_node)
    after = _fp(decided_node, lambda name: '/usr/bin/' + name)
    assert node_facts.fingerprint_changes(before, after) == ['which:nvidia-smi']


def test_fingerprint_a_symlink_is_its_target(decided_node):
    os.symlink('vmlinuz-6.8.0-151-generic', os.path.join(decided_node, 'boot/vmlinuz'))
    before = _fp(decided_node)
    os.remove(os.path.join(decided_node, 'boot/vmlinuz'))
    os.symlink('vmlinuz-6.8.0-152-generic', os.path.join(decided_node, 'boot/vmlinuz'))
    assert node_facts.fingerprint_changes(before, _fp(decided_node)) == ['path:/boot']


def test_fingerprint_only_of_sections_it_knows():
    with pytest.raises(ValueError, match='no fingerprint for runtimes, disk'):
        node_facts.fingerprint('/', ('pci', 'runtimes', 'disk'))


def test_fingerprint_changes_lists_added_and_gone_inputs():
    before = {'inputs': {'a': '1', 'b': '2'}}
    assert node_facts.fingerprint_changes(before, {'inputs': {'a': '1', 'c': '3'}}) == ['b', 'c']
    assert node_facts.fingerprint_changes(None, before) == ['a', 'b']
    assert node_facts.fingerprint_changes(before, before) == []


# ---- the fingerprint's list against what the readers really open ------------------------------------------
#
# FINGERPRINT_INPUTS is declared by hand next to the readers. These tests run each reader on captured trees
# with the file-system calls it makes (open, exists, isdir, listdir, islink, readlink, glob) and the commands
# it runs traced, and fail when a path it reads is in no input of its section: a reader that starts to read a
# new file must say so there, or the driver decision would be reused after that file changed.
#
# Inputs that stand for something the fingerprint does not read itself (node_facts' comment above
# FINGERPRINT_INPUTS): dpkg-query's and rpm's answers are their databases' identity; mokutil's and lspci's
# answers, and a PCI function's sysfs attributes, change only with a boot (the boot ID). What gather() reads
# for every section, whether the node is a container (its PID 1's environment, podman's and docker's marker
# files), is fixed for the life of the system.
STANDS_FOR = {'dpkg-query': [('path', p) for p in node_facts.PACKAGE_DATABASES],
              'rpm': [('path', p) for p in node_facts.PACKAGE_DATABASES],
              'mokutil': [('content', node_facts.BOOT_ID)], 'lspci': [('content', node_facts.BOOT_ID)]}
FIXED_FOR_THE_SYSTEM = ('proc/1/environ', 'run/.containerenv', '.dockerenv')


def _traced(monkeypatch, root):
    """Record (kind, path relative to root) of every file-system call of node_facts under root."""
    seen = []
    prefix = root.rstrip('/') + '/'
    depth = []      # a call inside a traced call (isdir's own stat) is not the reader's

    def tracer(kind, real):
        def call(path, *args, **kwargs):
            relative = path[len(prefix):] if isinstance(path, str) and path.startswith(prefix) else None
            # commands/: the tree's recorded command answers, which Recorded (run) reads, not a node file.
            if relative is not None and not depth and not relative.startswith('commands/'):
                seen.append((kind, relative))
            depth.append(kind)
            try:
                return real(path, *args, **kwargs)
            finally:
                depth.pop()
        return call

    for name in ('exists', 'isdir', 'isfile', 'islink'):
        monkeypatch.setattr(node_facts.os.path, name, tracer(name, getattr(os.path, name)))
    for name in ('listdir', 'readlink', 'stat', 'lstat', 'access'):
        monkeypatch.setattr(node_facts.os, name, tracer(name, getattr(os, name)))
    monkeypatch.setattr(node_facts.glob, 'glob', tracer('glob', node_facts.glob.glob))
    monkeypatch.setattr(node_facts, 'open', tracer('open', open), raising=False)
    return seen


def _covered(kind, path, inputs):
    """Whether a reader's access is seen by one of ``inputs`` ((kind, path) pairs of FINGERPRINT_INPUTS)."""
    parent = os.path.dirname(path)
    for input_kind, where in inputs:
        where = where.strip('/')
        if input_kind == 'content' and path == where and kind in ('open', 'exists', 'isfile'):
            return True
        # A path's identity, and each entry's one level down (a glob in it lists it).
        if input_kind == 'path' and where in (path, parent):
            return True
        # The names in a directory: listing it, and whether an entry exists.
        if input_kind == 'names' and (path == where or (parent == where and kind in ('exists', 'isdir'))):
            return True
        # Each entry's build link.
        if input_kind == 'builds' and (path == where or (os.path.dirname(parent) == where
                                                         and os.path.basename(path) == 'build')):
            return True
        # A path the glob matches, and the reader's own glob of that pattern (a pattern matches itself).
        if input_kind == 'glob' and fnmatch.fnmatch(path, where):
            return True
    return False


def _uncovered(section, seen, calls, which_calls):
    inputs = list(node_facts.FINGERPRINT_INPUTS[section])
    found = []
    for argv in calls:
        stands = STANDS_FOR.get(os.path.basename(argv[0]))
        if stands is None or not set(stands) <= set(inputs):
            found.append('command %s' % ' '.join(argv))
    for name in which_calls:
        if ('which', name) not in inputs:
            found.append('which %s' % name)
    # A PCI function's attributes: read under a listed directory whose names the section has, with the boot ID.
    pci_attributes = ('names', node_facts.PCI_DIR) in inputs and ('content', node_facts.BOOT_ID) in inputs
    for kind, path in seen:
        if path in FIXED_FOR_THE_SYSTEM or _covered(kind, path, inputs):
            continue
        if pci_attributes and path.startswith(node_facts.PCI_DIR.strip('/') + '/'):
            continue
        found.append('%s %s' % (kind, path))
    return sorted(set(found))


@pytest.mark.parametrize('section', sorted(node_facts.FINGERPRINT_INPUTS))
@pytest.mark.parametrize('tree_name', ['ubuntu2404-node-580-open-dkms', 'device-h100-vm-580.159.04-open',
                                       'debian12-ci-sandbox'])
def test_every_path_a_section_reads_is_fingerprinted(tree, monkeypatch, tree_name, section):
    root = tree(tree_name)
    if tree_name == 'ubuntu2404-node-580-open-dkms':
        # The /boot/vmlinuz link Debian and Ubuntu keep, so that kernel_packages' readlink is traced too.
        os.symlink('vmlinuz-6.8.0-151-generic', os.path.join(root, 'boot/vmlinuz'))
    run = Recorded(root)
    which_calls = []

    def which(name):
        which_calls.append(name)
        return None

    seen = _traced(monkeypatch, root)
    node_facts.gather(root, run, which, '6.8.0-151-generic', (section,), H100_LSPCI)
    monkeypatch.undo()
    assert seen, 'the tracer saw nothing: it no longer sees how node_facts reads files'
    assert _uncovered(section, seen, run.calls, which_calls) == []


def test_the_fingerprint_check_finds_a_path_no_input_covers(tree, monkeypatch):
    """The check above can fail: a reader reading a file of no input is named."""
    root = tree('ubuntu2404-node-580-open-dkms')
    seen = _traced(monkeypatch, root)
    node_facts.read(root, 'etc/modprobe.d/blacklist-nouveau.conf')
    node_facts.os.path.isdir(os.path.join(root, 'sys/bus/pci/devices'))
    monkeypatch.undo()
    assert _uncovered('modules', seen, [['nvidia-smi', '-q']], ['nvidia-smi']) == [
        'command nvidia-smi -q', 'isdir sys/bus/pci/devices', 'open etc/modprobe.d/blacklist-nouveau.conf',
        'which nvidia-smi']


def test_records_of_a_role(tmp_path):
    assert node_facts.records(str(tmp_path), '/var/lib/baremetal-gpu/nvidia_driver') == (False, {})
    _write(str(tmp_path), 'var/lib/baremetal-gpu/nvidia_driver/holds.json', '{"held": ["nvidia-driver-580-open"]}')
    _write(str(tmp_path), 'var/lib/baremetal-gpu/nvidia_driver/apt-transaction.json',
           '{"started": "2026-12-01T08:00:00Z", "install": ["nvidia-driver-580-open"], "remove": []}')
    _write(str(tmp_path), 'var/lib/baremetal-gpu/nvidia_driver/README', 'not a record')
    os.makedirs(str(tmp_path / 'var/lib/baremetal-gpu/nvidia_driver/old.json'))
    exists, found = node_facts.records(str(tmp_path), '/var/lib/baremetal-gpu/nvidia_driver')
    assert exists is True
    assert sorted(found) == ['apt-transaction', 'holds']
    assert found['apt-transaction']['install'] == ['nvidia-driver-580-open']


@pytest.mark.parametrize('content', ['', '{"held": [', 'held'])
def test_a_record_that_is_not_json_is_refused(tmp_path, content):
    _write(str(tmp_path), 'var/lib/baremetal-gpu/nvidia_driver/holds.json', content)
    with pytest.raises(ValueError, match='/var/lib/baremetal-gpu/nvidia_driver/holds.json is not JSON'):
        node_facts.records(str(tmp_path), '/var/lib/baremetal-gpu/nvidia_driver')


def test_dpkg_journal_lists_only_numbered_files(tmp_path):
    assert node_facts.dpkg_journal(str(tmp_path)) == []
    # What dpkg leaves after kill -9 inside an unpack: numbered entries; a "tmp.i" while it writes one.
    _write(str(tmp_path), 'var/lib/dpkg/updates/0001', 'Package: nvidia-utils-580\n')
    _write(str(tmp_path), 'var/lib/dpkg/updates/0000', 'Package: libnvidia-compute-580\n')
    _write(str(tmp_path), 'var/lib/dpkg/updates/tmp.i', '')
    assert node_facts.dpkg_journal(str(tmp_path)) == ['0000', '0001']


def test_path_stats(tmp_path):
    _write(str(tmp_path), 'etc/modprobe.d/baremetal-gpu-nvidia-params.conf', 'options nvidia NVreg_X=1\n')
    stats = node_facts.path_stats(str(tmp_path), ['/etc/modprobe.d/baremetal-gpu-nvidia-params.conf',
                                                  '/etc/modprobe.d', '/etc/apt/sources.list.d/gone.list'])
    assert stats['/etc/modprobe.d/baremetal-gpu-nvidia-params.conf']['exists'] is True
    assert stats['/etc/modprobe.d/baremetal-gpu-nvidia-params.conf']['isdir'] is False
    assert stats['/etc/modprobe.d']['isdir'] is True
    assert stats['/etc/apt/sources.list.d/gone.list'] == {'exists': False, 'isdir': False, 'mtime': None}
