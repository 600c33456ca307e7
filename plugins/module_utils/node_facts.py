# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read a GPU node's state from /sys, /proc, /boot and a few read-only commands.

Used by the module baremetal.gpu.gpu_node_facts; every reader takes ``root`` (``/`` on a node,
a captured tree in the unit tests) and, where it runs a command, ``run``: a callable
``run(argv) -> (rc, stdout, stderr)`` (the module passes AnsibleModule.run_command under a C
locale; tests pass recorded answers). Nothing here writes anything. A value the node hides
(containers hide /proc/modules and /sys/firmware) is reported as "unknown", never guessed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import hashlib
import json
import os
import re
import stat as stat_module

from ansible_collections.baremetal.gpu.plugins.module_utils.support import gpu_generation

EFI_SECURE_BOOT = 'sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d0-aca7-00c04fc295c8'
PCI_DIR = 'sys/bus/pci/devices'
NVIDIA_VENDOR = '0x10de'
DRIVER_PACKAGE = re.compile(
    r'^(nvidia-driver|nvidia-dkms|nvidia-kernel-dkms|nvidia-open-kernel-dkms|nvidia-kernel-open-dkms|'
    r'nvidia-headless|nvidia-utils|nvidia-smi|nvidia-kernel-source|nvidia-tesla-[0-9]+-kernel-dkms|'
    r'linux-modules-nvidia-|kmod-nvidia|nvidia-open|libnvidia-compute)')
RUNTIMES = ('containerd', 'docker', 'crio', 'podman', 'runc', 'crun', 'nvidia-container-runtime', 'nvidia-ctk')
RKE2_BINARIES = ('/usr/local/bin/rke2', '/usr/bin/rke2', '/opt/rke2/bin/rke2')
RKE2_UNITS = ('rke2-server', 'rke2-agent')
UNIT_DIRS = ('etc/systemd/system', 'usr/local/lib/systemd/system', 'usr/lib/systemd/system', 'lib/systemd/system')
RKE2_CONFIG = 'etc/rancher/rke2/config.yaml'
RKE2_DATA_DIR = '/var/lib/rancher/rke2'
# Keys only an RKE2 server's config.yaml carries (rancher/rke2-docs, server configuration reference).
RKE2_SERVER_ONLY_KEYS = ('cluster-init', 'tls-san', 'write-kubeconfig', 'write-kubeconfig-mode', 'cni', 'disable',
                         'cluster-cidr', 'service-cidr', 'etcd-snapshot-schedule-cron', 'etcd-expose-metrics',
                         'kube-apiserver-arg', 'kube-controller-manager-arg', 'kube-scheduler-arg', 'etcd-arg',
                         'disable-cloud-controller', 'ingress-controller', 'etcd-s3')
SECTIONS = ('pci', 'modules', 'secure_boot', 'kernels', 'driver', 'runtimes', 'rke2', 'disk')
VERSION_RE = re.compile(r'(?<![0-9.])v?([0-9]+\.[0-9]+\.[0-9]+)')


def path_of(root, relative):
    return os.path.join(root, relative.lstrip('/'))


def read(root, relative, binary=False):
    """The content of root/relative, or None when it cannot be read."""
    try:
        with open(path_of(root, relative), 'rb') as handle:
            data = handle.read()
    except (IOError, OSError):
        return None
    return data if binary else data.decode('utf-8', 'replace')


def in_container(root):
    """True inside a container (podman, docker, systemd-nspawn, LXC): its kernel is the host's."""
    if os.path.exists(path_of(root, 'run/.containerenv')) or os.path.exists(path_of(root, '.dockerenv')):
        return True
    environ = read(root, 'proc/1/environ', binary=True)
    return bool(environ and b'container=' in environ)


# ---- PCI ----------------------------------------------------------------------------------------

LSPCI_LINE = re.compile(r'^(?P<address>\S+)\s+(?P<class_name>.*?)\s+\[(?P<class>[0-9a-f]{4})\]:\s+(?P<name>.*?)'
                        r'\s+\[(?P<vendor>[0-9a-f]{4}):(?P<device>[0-9a-f]{4})\]', re.I)


def parse_lspci(text):
    """Parse ``lspci -Dnn`` lines into dicts: address, class ('0x0302'), vendor, device, name."""
    out = []
    for line in (text or '').splitlines():
        match = LSPCI_LINE.match(line.strip())
        if match:
            name = re.sub(r'\s+\(rev [0-9a-f]+\)$', '', match.group('name'))
            out.append({'address': match.group('address'), 'class': '0x' + match.group('class').lower(),
                        'vendor': '0x' + match.group('vendor').lower(), 'device': '0x' + match.group('device').lower(),
                        'name': name})
    return out


def pci(root, lspci_text=None):
    """NVIDIA PCI functions: every one (audio, USB and NVSwitch functions included) and the GPUs.

    GPUs are the display controllers (PCI class 0x03xx) of vendor 0x10de, each classified by
    support.gpu_generation. sysfs is read first; ``lspci -Dnn`` output (when given) adds names
    and stands in when /sys/bus/pci is not there.
    """
    listed = parse_lspci(lspci_text)
    names = dict((row['address'], row['name']) for row in listed)
    functions = []
    base = path_of(root, PCI_DIR)
    source = 'none'
    if os.path.isdir(base) and os.listdir(base):
        source = 'sysfs'
        for entry in sorted(os.listdir(base)):
            vendor = (read(root, os.path.join(PCI_DIR, entry, 'vendor')) or '').strip().lower()
            if vendor != NVIDIA_VENDOR:
                continue
            functions.append({
                'address': entry,
                'vendor': vendor,
                'device': (read(root, os.path.join(PCI_DIR, entry, 'device')) or '').strip().lower(),
                'class': (read(root, os.path.join(PCI_DIR, entry, 'class')) or '').strip().lower()[:6],
                'name': names.get(entry, ''),
            })
    elif listed:
        source = 'lspci'
        functions = [row for row in listed if row['vendor'] == NVIDIA_VENDOR]
    gpus = []
    for function in functions:
        if not function['class'].startswith('0x03'):
            continue
        gpu = {'address': function['address'], 'device_id': function['device'], 'class': function['class'],
               'name': function['name']}
        try:
            gpu.update(gpu_generation(function['device']))
        except ValueError:
            gpu.update({'generation': 'unknown', 'family': 'unknown', 'open_supported': None,
                        'open_required': None, 'proprietary_supported': None})
        gpus.append(gpu)
    switches, others = nvswitches(functions)
    kind, note = system_kind(gpus, switches)
    return {'gpus': gpus, 'nvidia_pci_devices': [f['address'] for f in functions], 'nvidia_pci_functions': functions,
            'pci_source': source, 'nvswitches': switches, 'nvidia_other_bridges': others, 'system_kind': kind,
            'system_kind_note': note}


# ---- NVSwitch and the system kind ---------------------------------------------------------------
#
# An NVSwitch is an NVIDIA PCI function of class 0x0680 ("Bridge", other), but so are the Ethernet
# controllers of NVIDIA's nForce chipsets (MCP51 10de:0269, MCP61 10de:03ef: tests/fixtures/lspci). A
# function counts as an NVSwitch only by its device ID or by its name ("... NVSwitch", from pci.ids
# through lspci). Device IDs: 22a3 GH100 [H100 NVSwitch] (HGX H100/H200, seen in
# tests/fixtures/lspci/hgx-h100-rhel94-lspci-Dnn.txt), 1af1 GA100 [A100 NVSwitch] (HGX A100), 1ac2 the
# first NVSwitch (HGX-2, V100; pci.ids, not seen in a capture here). HGX B200/B300 (NVSwitch gen 4) are
# NOT found this way: NVIDIA's Fabric Manager guide says their NVSwitches are not PCIe devices on the host
# (the host sees ConnectX-7 bridge functions; their fabric needs the NVLink subnet manager besides
# Fabric Manager); GB200/GB300 NVL72 compute trays run no Fabric Manager (IMEX instead).
NVSWITCH_DEVICE_IDS = {'0x1ac2': 'NVSwitch (HGX-2, V100)', '0x1af1': 'A100 NVSwitch (HGX A100)',
                       '0x22a3': 'H100 NVSwitch (HGX H100/H200)'}
NVSWITCH_NAME = re.compile(r'\bNVSwitch\b', re.I)
BRIDGE_OTHER_CLASS = '0x0680'


def nvswitches(functions):
    """Split the NVIDIA PCI functions of class 0x0680: NVSwitches (by device ID or name) and the others.

    ``functions`` are dicts with address, device, class and name (pci()'s nvidia_pci_functions).
    Returns (switches, others): each switch gets ``model`` (the known name, else lspci's); ``others``
    are the 0x0680 functions that are not known NVSwitches (nForce Ethernet, or an NVSwitch this
    list does not know and lspci could not name): reported, never counted as NVSwitches.
    """
    switches, others = [], []
    for function in functions:
        if not (function.get('class') or '').startswith(BRIDGE_OTHER_CLASS):
            continue
        device = (function.get('device') or '').lower()
        name = function.get('name') or ''
        if device in NVSWITCH_DEVICE_IDS or NVSWITCH_NAME.search(name):
            row = dict((k, function.get(k, '')) for k in ('address', 'device', 'class', 'name'))
            row['model'] = NVSWITCH_DEVICE_IDS.get(device) or name
            switches.append(row)
        else:
            others.append(dict((k, function.get(k, '')) for k in ('address', 'device', 'class', 'name')))
    return switches, others


def system_kind(gpus, switches):
    """'hgx_nvswitch' with NVSwitch functions on the PCI bus, 'pcie' with GPUs and none, 'none' without GPUs.

    Returns (kind, note): the note says why, and, for Blackwell or newer GPUs, that an HGX B200/B300 or
    GB200 cannot be told from PCI (its NVSwitches are not PCI functions on the host).
    """
    if switches:
        return 'hgx_nvswitch', ('%d NVSwitch function(s) on the PCI bus (%s): NVIDIA Fabric Manager must run at '
                                'exactly the driver\'s version' % (len(switches), switches[0]['model']))
    if not gpus:
        return 'none', 'no NVIDIA GPU on the PCI bus'
    note = 'NVIDIA GPU(s) and no NVSwitch function on the PCI bus'
    if any(g.get('generation') == 'blackwell-or-newer' for g in gpus):
        note += ('; Blackwell or newer GPUs: an HGX B200/B300 has NVSwitches that are not PCI functions on the '
                 'host (their fabric needs NVIDIA\'s NVLink subnet manager), and a GB200/GB300 NVL72 tray uses '
                 'IMEX; neither is told from PCI nor managed by this collection')
    return 'pcie', note


# ---- kernel modules and the loaded driver ----------------------------------------------------------

PROC_VERSION_RE = re.compile(r'NVRM version: NVIDIA UNIX (?P<open>Open )?(?:\S+ )?Kernel Module(?: for \S+)?\s+'
                             r'(?P<version>[0-9]+(?:\.[0-9]+)+)')


def parse_proc_driver_version(text):
    """(version, flavour) from /proc/driver/nvidia/version: flavour 'open' or 'proprietary'; ('', '') if none."""
    match = PROC_VERSION_RE.search(text or '')
    if not match:
        return '', ''
    return match.group('version'), 'open' if match.group('open') else 'proprietary'


def modules(root):
    """nouveau_loaded (True, False or 'unknown'), and the loaded NVIDIA driver's version and flavour."""
    text = read(root, 'proc/modules')
    if not text or not text.strip():
        nouveau = 'unknown'
    else:
        nouveau = any(line.split(' ', 1)[0] == 'nouveau' for line in text.splitlines())
    version, flavour = parse_proc_driver_version(read(root, 'proc/driver/nvidia/version'))
    if not version:
        version = (read(root, 'sys/module/nvidia/version') or '').strip()
    return {'nouveau_loaded': nouveau, 'nvidia_loaded_version': version, 'nvidia_loaded_flavour': flavour}


# ---- Secure Boot ------------------------------------------------------------------------------------

def secure_boot(root, container, run):
    """Secure Boot state: the EFI variable first, mokutil second.

    Returns secure_boot ('enabled', 'disabled', 'not_uefi' or 'unknown'), secure_boot_source
    ('efivars', 'mokutil' or 'none') and secure_boot_detail.
    """
    data = read(root, EFI_SECURE_BOOT, binary=True)
    if data and len(data) >= 5:
        # 4 bytes of attributes, then the value: 1 enabled, 0 disabled.
        value = bytearray(data)[4]
        return {'secure_boot': 'enabled' if value == 1 else 'disabled', 'secure_boot_source': 'efivars',
                'secure_boot_detail': 'EFI variable SecureBoot = %d' % value}
    rc, out, err = run(['mokutil', '--sb-state'])
    text = ('%s %s' % (out or '', err or '')).strip()
    if rc is not None and 'SecureBoot enabled' in text:
        return {'secure_boot': 'enabled', 'secure_boot_source': 'mokutil', 'secure_boot_detail': 'mokutil: ' + text}
    if rc is not None and 'SecureBoot disabled' in text:
        return {'secure_boot': 'disabled', 'secure_boot_source': 'mokutil', 'secure_boot_detail': 'mokutil: ' + text}
    if os.path.isdir(path_of(root, 'sys/firmware/efi')):
        detail = 'UEFI boot, but the SecureBoot EFI variable is unreadable and mokutil gave no answer'
        return {'secure_boot': 'unknown', 'secure_boot_source': 'none',
                'secure_boot_detail': detail + (' (mokutil: %s)' % text if text else '')}
    if container:
        return {'secure_boot': 'unknown', 'secure_boot_source': 'none',
                'secure_boot_detail': 'no /sys/firmware/efi: hidden in a container'}
    return {'secure_boot': 'not_uefi', 'secure_boot_source': 'none',
            'secure_boot_detail': 'no /sys/firmware/efi: legacy BIOS boot, Secure Boot does not apply'}


# ---- kernels ------------------------------------------------------------------------------------------

def kernels(root, running):
    """The installed kernels (an image in /boot and a modules directory) and their headers."""
    found = {}
    for image in glob.glob(path_of(root, 'boot/vmlinuz-*')) + glob.glob(path_of(root, 'boot/vmlinux-*')):
        version = os.path.basename(image).split('-', 1)[1]
        for base in ('lib/modules', 'usr/lib/modules'):
            moddir = path_of(root, os.path.join(base, version))
            if os.path.isdir(moddir):
                found[version] = {'version': version, 'headers': os.path.exists(os.path.join(moddir, 'build'))}
                break
    with_headers = set()
    for base in ('lib/modules', 'usr/lib/modules'):
        if os.path.isdir(path_of(root, base)):
            with_headers.update(v for v in os.listdir(path_of(root, base))
                                if os.path.exists(path_of(root, os.path.join(base, v, 'build'))))
    return {'kernel_running': running, 'kernels': [found[k] for k in sorted(found)],
            'installed_kernels': sorted(found), 'kernel_headers_versions': sorted(with_headers),
            'kernel_headers_for_running': running in with_headers}


# Kernel metapackages: what brings the next kernel (Ubuntu linux-generic, linux-image-generic-hwe-24.04,
# linux-lowlatency; Debian linux-image-amd64). Per-kernel packages carry the kernel version after the prefix
# (linux-image-6.8.0-149-generic) and are not metapackages.
KERNEL_META = re.compile(r'^linux-(?:image-)?(?P<flavour>(?![0-9])[a-z][a-z0-9.+-]*)$')
NOT_FLAVOURS = re.compile(r'^(base|firmware|libc-dev|tools-common|headers-.*|image|image-.*|modules-.*|source.*|doc|'
                          r'sound-base|tools-.*|cloud-tools-.*|objects-.*|signatures-.*|restricted-modules-.*)$')


def kernel_packages(root, run, kernel_list):
    """Kernel metapackages installed (dpkg) and the flavours they bring, and the kernel the node boots next.

    kernel_flavours: the flavours of the installed kernel metapackages, for example ['generic'] from
    linux-generic / linux-image-generic, ['generic-hwe-24.04'], ['amd64'] on Debian; the prebuilt NVIDIA
    module metapackages follow them (linux-modules-nvidia-<B>[-server][-open]-<flavour>).
    kernel_next_boot: the kernel /boot/vmlinuz points to (Debian and Ubuntu keep it on the newest), else the
    newest installed kernel by version; '' without a kernel.
    """
    metas, flavours = [], set()
    rc, out, _err = run(['dpkg-query', '-W', '-f=${db:Status-Abbrev} ${Package}\\n'])
    if rc == 0:
        for line in (out or '').splitlines():
            parts = line.split()
            if len(parts) < 2 or not parts[0].startswith('ii'):
                continue
            match = KERNEL_META.match(parts[1].split(':')[0])
            if match and not NOT_FLAVOURS.match(match.group('flavour')):
                metas.append(parts[1].split(':')[0])
                flavours.add(match.group('flavour'))
    nxt = ''
    link = path_of(root, 'boot/vmlinuz')
    if os.path.islink(link):
        target = os.path.basename(os.readlink(link))
        if target.startswith('vmlinuz-') and target[len('vmlinuz-'):] in kernel_list:
            nxt = target[len('vmlinuz-'):]
    if not nxt and kernel_list:
        nxt = sorted(kernel_list, key=_version_key)[-1]
    return {'kernel_metapackages': sorted(metas), 'kernel_flavours': sorted(flavours), 'kernel_next_boot': nxt}


def _version_key(version):
    return [int(p) if p.isdigit() else p for p in re.split(r'[.+~-]', version)]


# ---- the installed driver --------------------------------------------------------------------------

def packages(run):
    """Driver packages installed ('name version'), from dpkg or rpm."""
    rc, out, _err = run(['dpkg-query', '-W', '-f=${db:Status-Abbrev} ${Package} ${Version}\\n'])
    found = []
    if rc == 0:
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[0].startswith('ii') and DRIVER_PACKAGE.match(parts[1]):
                found.append('%s %s' % (parts[1], parts[2]))
        return sorted(found)
    rc, out, _err = run(['rpm', '-qa', '--qf', '%{NAME} %{VERSION}-%{RELEASE}\\n'])
    if rc == 0:
        found = [line.strip() for line in out.splitlines() if DRIVER_PACKAGE.match(line.strip())]
    return sorted(found)


# Every package of the NVIDIA driver stack, of any branch (the libraries too, which DRIVER_PACKAGE leaves
# out): what a branch change must leave no trace of, and what the driver role holds.
NVIDIA_STACK_PACKAGE = re.compile(
    r'^(nvidia-|libnvidia-|linux-modules-nvidia-|linux-objects-nvidia-|linux-signatures-nvidia-|'
    r'xserver-xorg-video-nvidia-|libxnvctrl|libcuda|firmware-nvidia-|kmod-nvidia)')


def stack_packages(run):
    """Installed packages of the NVIDIA stack, as {'installed': [names], 'held': [names]} (dpkg; the
    selection "hold" is the first letter of db:Status-Abbrev). Empty lists where there is no dpkg."""
    rc, out, _err = run(['dpkg-query', '-W', '-f=${db:Status-Abbrev} ${Package} ${Version}\\n'])
    installed, held = [], []
    if rc == 0:
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 3 and len(parts[0]) >= 2 and parts[0][1] == 'i' and NVIDIA_STACK_PACKAGE.match(parts[1]):
                installed.append(parts[1].split(':')[0])
                if parts[0][0] == 'h':
                    held.append(parts[1].split(':')[0])
    return {'installed': sorted(set(installed)), 'held': sorted(set(held))}


DRIVER_VERSION_RE = re.compile(r'^(?:[0-9]+:)?([0-9]{3})\.([0-9]+)(?:\.([0-9]+))?')


def installed_driver_versions(pkgs):
    """Driver versions the installed packages carry (['580.178.04']), from 'name version' strings.

    Only packages whose own version is a driver version count (nvidia-kernel-common-580 580.178.04-...,
    nvidia-driver 550.163.01-2, kmod-nvidia-latest-dkms 3:580.95.05-1...); Canonical's prebuilt module
    packages carry the kernel's version (6.8.0-149.149) and are left out.
    """
    found = set()
    for entry in pkgs:
        parts = entry.split()
        if len(parts) < 2 or parts[0].startswith('linux-modules-nvidia-'):
            continue
        match = DRIVER_VERSION_RE.match(parts[1])
        if match:
            found.add('.'.join(g for g in match.groups() if g is not None))
    return sorted(found)


def dkms_modules(root):
    """DKMS builds of NVIDIA modules in /var/lib/dkms: module, version, kernel, arch."""
    built = []
    for path in sorted(glob.glob(path_of(root, 'var/lib/dkms/nvidia*/*/*/*/module'))):
        parts = path.split(os.sep)
        built.append({'module': parts[-5], 'version': parts[-4], 'kernel': parts[-3], 'arch': parts[-2]})
    return built


def driver(root, run, which):
    pkgs = packages(run)
    runfile = any(os.path.exists(path_of(root, p)) for p in ('usr/bin/nvidia-uninstall', 'var/log/nvidia-installer.log'))
    smi = which('nvidia-smi') or ''
    loaded = modules(root)['nvidia_loaded_version']
    if pkgs and runfile:
        method = 'package+runfile'
    elif runfile:
        method = 'runfile'
    elif pkgs:
        method = 'package'
    elif smi or loaded:
        method = 'unknown'
    else:
        method = 'none'
    versions = installed_driver_versions(pkgs)
    stack = stack_packages(run)
    return {'driver_install_method': method, 'driver_packages': pkgs, 'driver_dkms_modules': dkms_modules(root),
            'driver_nvidia_smi': smi, 'driver_installed_versions': versions,
            'driver_installed_branches': sorted(set(v.split('.', 1)[0] for v in versions)),
            'driver_stack_packages': stack['installed'], 'driver_held_packages': stack['held']}


# ---- container runtimes ----------------------------------------------------------------------------

def parse_version(text):
    """The first x.y.z version in a --version line ('containerd ... v2.2.1 ...' -> '2.2.1'), or ''."""
    match = VERSION_RE.search(text or '')
    return match.group(1) if match else ''


def version_line(run, path):
    for args in (['--version'], ['version']):
        rc, out, _err = run([path] + args)
        if rc == 0 and (out or '').strip():
            return out.strip().splitlines()[0][:160]
    return ''


def runtimes(root, run, which, rke2_data_dir=RKE2_DATA_DIR, paths=()):
    """The container runtimes on PATH, then each of ``paths`` (a runtime a role installs where PATH may not lead, for
    example container_toolkit_runtime_binary) that is an executable file and not listed yet, then RKE2's embedded
    containerd."""
    found = []
    for name in RUNTIMES:
        path = which(name)
        if path:
            line = version_line(run, path)
            found.append({'name': name, 'path': path, 'version_line': line, 'version': parse_version(line)})
    for path in paths:
        local = path_of(root, path)
        if path not in [item['path'] for item in found] and os.path.isfile(local) and os.access(local, os.X_OK):
            line = version_line(run, path)
            found.append({'name': os.path.basename(path), 'path': path, 'version_line': line,
                          'version': parse_version(line)})
    embedded = os.path.join(rke2_data_dir, 'bin', 'containerd')
    if os.path.exists(path_of(root, embedded)):
        line = version_line(run, embedded)
        found.append({'name': 'containerd (RKE2)', 'path': embedded, 'version_line': line, 'version': parse_version(line)})
    return {'container_runtimes': found}


# ---- RKE2 ------------------------------------------------------------------------------------------

def config_keys(text):
    """Top-level keys of a YAML mapping, read without a YAML library (nodes may not have one)."""
    keys = {}
    for line in (text or '').splitlines():
        match = re.match(r'^([A-Za-z0-9_.-]+)\s*:\s*(.*?)\s*$', line)
        if match:
            keys[match.group(1)] = match.group(2).strip('"\'')
    return keys


def rke2_role(installed, enabled, server_state, config):
    """Decide whether this node is an RKE2 server or agent: (role, reason); role '' when unclear.

    From what is installed, then what systemd has enabled, then what the node has done or is
    configured to do (the server's state directory, server-only keys in config.yaml). What is
    active is not used: just after a reboot an agent is not active yet, and tarball installs
    have both units (both installed, one enabled).
    """
    if not installed:
        return '', 'no rke2-server or rke2-agent unit is installed'
    if len(installed) == 1:
        unit = installed[0]
        return unit.split('-', 1)[1], 'only %s is installed' % unit
    if len(enabled) == 1:
        unit = enabled[0]
        return unit.split('-', 1)[1], 'both units are installed; only %s is enabled' % unit
    if len(enabled) > 1:
        return '', 'both rke2-server and rke2-agent are enabled'
    if server_state:
        return 'server', 'both units are installed, none is enabled, and %s exists (this node has run rke2-server)' % server_state
    server_keys = sorted(k for k in RKE2_SERVER_ONLY_KEYS if k in (config or {}))
    if server_keys:
        return 'server', ('both units are installed, none is enabled, and config.yaml has server-only keys (%s)'
                          % ', '.join(server_keys))
    return '', 'both rke2-server and rke2-agent are installed, neither is enabled, and nothing says which this node is'


def rke2(root, run):
    binary = next((p for p in RKE2_BINARIES if os.path.exists(path_of(root, p))), '')
    version = ''
    if binary:
        _rc, out, _err = run([binary, '--version'])
        match = re.search(r'rke2 version (v[0-9]\S*)', out or '')
        version = match.group(1) if match else ''
    installed = [u for u in RKE2_UNITS
                 if any(os.path.exists(path_of(root, os.path.join(d, u + '.service'))) for d in UNIT_DIRS)]
    states = {}
    if installed:
        rc, out, _err = run(['systemctl', 'is-enabled'] + installed)
        if rc is not None:
            states = dict(zip(installed, [line.strip() for line in (out or '').splitlines()]))
    enabled = [u for u in installed if states.get(u) == 'enabled']
    config_text = read(root, RKE2_CONFIG)
    config = config_keys(config_text)
    data_dir = config.get('data-dir') or RKE2_DATA_DIR
    server_state = ''
    for marker in ('server/db', 'server/token'):
        if os.path.exists(path_of(root, os.path.join(data_dir, marker))):
            server_state = os.path.join(data_dir, marker)
            break
    role, reason = rke2_role(installed, enabled, server_state, config)
    kubeconfig = 'etc/rancher/rke2/rke2.yaml'
    mode = ''
    if os.path.exists(path_of(root, kubeconfig)):
        mode = '%04o' % (os.stat(path_of(root, kubeconfig)).st_mode & 0o7777)
    return {'rke2': {'present': bool(binary or installed), 'binary': binary, 'version': version,
                     'version_plain': parse_version(version), 'units_installed': installed,
                     'units_enabled': enabled, 'unit_states': states, 'role': role, 'role_reason': reason,
                     'unit': ('rke2-' + role) if role else '', 'data_dir': data_dir,
                     'config_file': '/' + RKE2_CONFIG if config_text is not None else '',
                     'kubeconfig_mode': mode}}


# ---- disk -------------------------------------------------------------------------------------------

def disk(root, statvfs=os.statvfs):
    for relative in ('var/lib/dkms', 'var/lib', ''):
        path = path_of(root, relative) if relative else root
        if os.path.isdir(path):
            stat = statvfs(path)
            return {'dkms_disk_path': '/' + relative, 'dkms_disk_free_mb': stat.f_bavail * stat.f_frsize // (1024 * 1024)}
    return {'dkms_disk_path': '/', 'dkms_disk_free_mb': 0}


def gather(root, run, which, running_kernel, sections=SECTIONS, lspci_text=None, runtime_paths=()):
    """Every fact of ``sections``, as one flat dict (plus the nested ``rke2``)."""
    facts = {'container': in_container(root)}
    if 'pci' in sections:
        facts.update(pci(root, lspci_text))
    if 'modules' in sections:
        facts.update(modules(root))
    if 'secure_boot' in sections:
        facts.update(secure_boot(root, facts['container'], run))
    if 'kernels' in sections:
        facts.update(kernels(root, running_kernel))
        facts['running_kernel_is_host'] = facts['container']
        facts.update(kernel_packages(root, run, facts['installed_kernels']))
    if 'driver' in sections:
        facts.update(driver(root, run, which))
        if 'kernels' not in sections:
            facts.update(kernel_packages(root, run, kernels(root, running_kernel)['installed_kernels']))
    if 'rke2' in sections:
        facts.update(rke2(root, run))
    if 'runtimes' in sections:
        data_dir = (facts.get('rke2') or {}).get('data_dir') or RKE2_DATA_DIR
        facts.update(runtimes(root, run, which, data_dir, runtime_paths))
    if 'disk' in sections:
        facts.update(disk(root))
    return facts


# ---- fingerprint: has anything a reading depends on changed? ------------------------------------------
#
# What each section above reads, as cheap inputs: a file's content (small /proc, /sys and EFI files), a
# path's identity (lstat: type, size, mtime, inode; a symbolic link by its target; a directory by the
# identity of each entry), a glob's matches, or where a command is found. dpkg and rpm rewrite their
# database on every change (dpkg writes /var/lib/dpkg/status anew: another inode), so its identity stands
# for the answers of dpkg-query and rpm; a reboot changes boot_id, which stands for what only a boot
# changes (Secure Boot's state as mokutil reports it, the PCI functions). Not covered: runtimes, rke2 and
# disk (versions spawned from binaries, free space that moves all the time).
BOOT_ID = 'proc/sys/kernel/random/boot_id'
PACKAGE_DATABASES = ('var/lib/dpkg/status', 'var/lib/rpm', 'usr/lib/sysimage/rpm')
# modules() reads /proc/modules and the loaded driver's version files; driver() calls it for the version.
_MODULES = (('content', 'proc/modules'), ('content', 'proc/driver/nvidia/version'),
            ('content', 'sys/module/nvidia/version'))
_KERNELS = ((('path', 'boot'), ('path', 'lib/modules'), ('path', 'usr/lib/modules'), ('builds', 'lib/modules'),
             ('builds', 'usr/lib/modules')) + tuple(('path', p) for p in PACKAGE_DATABASES))
FINGERPRINT_INPUTS = {
    'pci': (('content', BOOT_ID), ('names', PCI_DIR)),
    'modules': _MODULES,
    'secure_boot': (('content', BOOT_ID), ('content', EFI_SECURE_BOOT), ('path', 'sys/firmware/efi')),
    'kernels': _KERNELS,
    # driver() reads the packages, modules() (for the loaded version), and (through kernel_packages) the kernels.
    # tests/unit/plugins/module_utils/test_node_facts.py traces what each section reads against this table.
    'driver': (('path', 'usr/bin/nvidia-uninstall'), ('path', 'var/log/nvidia-installer.log'),
               ('glob', 'var/lib/dkms/nvidia*/*/*/*/module'), ('which', 'nvidia-smi')) + _MODULES + _KERNELS,
}


def _identity(path):
    """A path's identity without reading it: type, size, mtime (ns), inode; a link's target; None if absent."""
    try:
        info = os.lstat(path)
    except (IOError, OSError):
        return None
    if stat_module.S_ISLNK(info.st_mode):
        try:
            return ['link', os.readlink(path)]
        except (IOError, OSError):
            return ['link', None]
    kind = 'dir' if stat_module.S_ISDIR(info.st_mode) else 'file'
    return [kind, info.st_size, getattr(info, 'st_mtime_ns', int(info.st_mtime * 1e9)), info.st_ino]


def _path_state(full):
    """A file's identity, or a directory's identity with each entry's (one level down)."""
    own = _identity(full)
    if own is None or own[0] != 'dir':
        return own
    try:
        names = sorted(os.listdir(full))
    except (IOError, OSError):
        return own + [None]
    return own + [[name, _identity(os.path.join(full, name))] for name in names]


def _input_state(root, kind, relative, which):
    full = path_of(root, relative)
    if kind == 'content':
        data = read(root, relative, binary=True)
        return None if data is None else hashlib.sha256(data).hexdigest()
    if kind == 'names':
        return sorted(os.listdir(full)) if os.path.isdir(full) else None
    if kind == 'builds':
        if not os.path.isdir(full):
            return None
        return [[name, _identity(os.path.join(full, name, 'build'))] for name in sorted(os.listdir(full))]
    if kind == 'glob':
        return sorted(os.path.relpath(p, root) for p in glob.glob(full))
    if kind == 'which':
        return which(relative) if which else None
    return _path_state(full)


def fingerprint(root, sections, paths=(), which=None):
    """A digest of what ``sections`` read (FINGERPRINT_INPUTS) and of ``paths`` (absolute, each as _path_state).

    Returns {'digest': sha256 of every input, 'inputs': {label: sha256 of that input}}: a later call that
    finds the same inputs gives the same dict; one input changed changes its label's value and the digest.
    Labels: '<kind>:/<path>' (for example 'path:/var/lib/dpkg/status', 'content:/proc/modules'). Reads no
    more than stats and a few small files, and runs no command.
    """
    unknown = [s for s in sections if s not in FINGERPRINT_INPUTS]
    if unknown:
        raise ValueError('no fingerprint for %s (only %s)' % (', '.join(unknown), ', '.join(sorted(FINGERPRINT_INPUTS))))
    wanted = []
    for section in sections:
        wanted.extend(FINGERPRINT_INPUTS[section])
    wanted.extend(('path', '/' + p.lstrip('/')) for p in paths)
    inputs = {}
    for kind, relative in wanted:
        label = '%s:/%s' % (kind, relative.lstrip('/')) if kind != 'which' else 'which:' + relative
        if label in inputs:
            continue
        state = json.dumps(_input_state(root, kind, relative, which), sort_keys=True)
        inputs[label] = hashlib.sha256(state.encode('utf-8')).hexdigest()
    digest = hashlib.sha256(json.dumps(inputs, sort_keys=True).encode('utf-8')).hexdigest()
    return {'digest': digest, 'inputs': inputs}


def fingerprint_changes(before, now):
    """Labels of the inputs whose state differs between two fingerprint() results (added or gone ones too)."""
    before = (before or {}).get('inputs') or {}
    now = (now or {}).get('inputs') or {}
    return sorted(label for label in set(before) | set(now) if before.get(label) != now.get(label))


# A role's own records beside the facts (nvidia_driver's decide): one module run instead of a stat, a find and a slurp
# per file, and dpkg's journal instead of a find.
DPKG_JOURNAL = 'var/lib/dpkg/updates'
DPKG_JOURNAL_ENTRY = re.compile(r'^[0-9]+$')


def records(root, directory):
    """The JSON records in ``directory`` (``*.json``, one level): (exists, {file name without .json: parsed data}).

    A record that is not JSON raises ValueError naming the file (a role cannot decide on it, and must not guess).
    """
    full = path_of(root, directory)
    if not os.path.isdir(full):
        return False, {}
    found = {}
    for name in sorted(os.listdir(full)):
        path = os.path.join(full, name)
        if not name.endswith('.json') or not os.path.isfile(path):
            continue
        data = read(root, os.path.join(directory, name))
        try:
            found[name[:-len('.json')]] = json.loads(data if data is not None else '')
        except ValueError as exc:
            raise ValueError('%s is not JSON (%s); it is a record of the role: delete it and run again'
                             % (os.path.join('/', directory.lstrip('/'), name), exc))
    return True, found


def dpkg_journal(root):
    """The entries of dpkg's journal (numbered files in /var/lib/dpkg/updates): present only while a dpkg run is in
    progress or after one was interrupted, when apt refuses to change anything until ``dpkg --configure -a``."""
    full = path_of(root, DPKG_JOURNAL)
    if not os.path.isdir(full):
        return []
    return sorted(name for name in os.listdir(full)
                  if DPKG_JOURNAL_ENTRY.match(name) and os.path.isfile(os.path.join(full, name)))


def path_stats(root, paths):
    """{path: {'exists', 'isdir', 'mtime'}} for each absolute path (lstat; mtime in seconds, None when absent)."""
    stats = {}
    for path in paths:
        try:
            info = os.lstat(path_of(root, path))
        except (IOError, OSError):
            stats[path] = {'exists': False, 'isdir': False, 'mtime': None}
            continue
        stats[path] = {'exists': True, 'isdir': stat_module.S_ISDIR(info.st_mode), 'mtime': info.st_mtime}
    return stats
