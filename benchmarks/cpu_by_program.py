# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark (not a test): where a command's CPU goes, by program, test nodes included.

Runs the command with the kernel's process accounting on (accton, from the acct package; root only): every process
that exits while it runs, on this machine and inside the podman test nodes (their pid namespaces report to this one),
writes its name and CPU seconds (user + system). The table groups them: Ansible's controller (ansible-playbook and
the workers it forks), the module runs (the Python that a task starts on a node or, connection local, here), the
compilers of the DKMS builds, apt/dpkg/initramfs, podman, the rest. Processes still running at the end are not in it,
nor is other work on the machine during the run (run it on an idle machine).

    python3 benchmarks/cpu_by_program.py -- make test
    python3 benchmarks/cpu_by_program.py --read /var/tmp/pacct    (an accounting file written before)
"""

from __future__ import absolute_import, division, print_function

import argparse
import collections
import os
import shutil
import subprocess
import sys
import tempfile

COMPILE = {'cc1', 'as', 'ld', 'ld.bfd', 'objtool', 'modpost', 'genksyms', 'gendwarfksyms', 'pahole', 'sign-file',
           'fixdep', 'make'}
PACKAGES = ('dpkg', 'apt', 'http', 'https', 'gpgv', 'sqv', 'store', 'gzip', 'xz', 'unxz', 'zstd', 'update-initramf',
            'mkinitramfs', 'cpio', 'depmod', 'ldconfig', 'frontend', 'debconf', 'debootstrap', 'deb-systemd-',
            'update-alternat', 'apt-cacher-ng', 'lsinitramfs', 'tar', 'perl')
PODMAN = ('podman', 'conmon', 'runc', 'crun', 'buildah', 'fuse-overlayfs', 'slirp4netns', 'nsenter', 'netavark',
          'catatonit', 'exe')


def group(comm):
    """The table's row of a process name (the kernel keeps its first 15 characters)."""
    if comm.startswith('ansible-playboo'):
        return "Ansible's controller (ansible-playbook and its workers)"
    if comm == 'python' or comm.startswith('python3'):
        return 'Python: module runs, pytest, testinfra'
    if comm in COMPILE or comm.startswith(('gcc', 'x86_64-linux-gn')):
        return 'compilers and make (DKMS builds)'
    if comm.startswith(PACKAGES):
        return 'apt, dpkg, initramfs, debootstrap'
    if comm.startswith(PODMAN):
        return 'podman'
    if comm.startswith(('ansible', 'molecule', 'antsibull', 'yamllint', 'shellcheck', 'pip', 'git')):
        return 'static checks and tools (ansible-lint, ansible-test, antsibull, pip, git)'
    return 'the rest'


def records(path):
    """(name, CPU seconds) of each process in an accounting file (dump-acct: ticks of 1/100 s)."""
    out = subprocess.run(['dump-acct', path], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        fields = [field.strip() for field in line.split('|')]
        if len(fields) > 3:
            yield fields[0], (float(fields[2]) + float(fields[3])) / 100.0


def table(path):
    rows, names = collections.Counter(), collections.defaultdict(collections.Counter)
    for comm, cpu in records(path):
        rows[group(comm)] += cpu
        names[group(comm)][comm] += cpu
    total = sum(rows.values()) or 1.0
    print('| group | CPU s | share | largest programs |')
    print('|---|---|---|---|')
    for name, cpu in rows.most_common():
        top = ', '.join('%s %.0f' % item for item in names[name].most_common(4))
        print('| %s | %.0f | %.1f %% | %s |' % (name, cpu, 100.0 * cpu / total, top))
    print('| all exited processes | %.0f | 100 %% | |' % total)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--read', help='an accounting file written before: print its table only')
    parser.add_argument('command', nargs='*')
    args = parser.parse_args()
    if args.read:
        table(args.read)
        return 0
    if not args.command or not shutil.which('accton') or os.geteuid() != 0:
        sys.exit('cpu_by_program: needs root, accton and dump-acct (apt-get install acct), and a command after --')
    handle, path = tempfile.mkstemp(prefix='pacct-', dir='/var/tmp')
    os.close(handle)
    subprocess.run(['accton', path], check=True, stdout=subprocess.DEVNULL)
    try:
        status = subprocess.run(args.command, check=False).returncode
    finally:
        subprocess.run(['accton', 'off'], check=True, stdout=subprocess.DEVNULL)
    table(path)
    print('accounting file kept: %s' % path)
    return status


if __name__ == '__main__':
    sys.exit(main())
