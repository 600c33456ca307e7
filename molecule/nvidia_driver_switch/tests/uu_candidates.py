"""TEST ONLY (tests/test_unattended_upgrades.py): run on the node, a local apt repository
with a newer version of every NVIDIA and CUDA package the node has.

Each package of the repository is an empty package of the same name, its version the installed one with
'+baremetaltest1' appended, its Depends, Pre-Depends and Provides those of the installed package with the versions
of the packages in the set bumped the same way: a consistent upgrade of the whole set, which unattended-upgrades
takes unless something keeps it off. Written to /var/tmp/baremetal-test-uu-repo, listed in
/etc/apt/sources.list.d/baremetal-test-uu.list ([trusted=yes], origin baremetal-test) and allowed to
unattended-upgrades by /etc/apt/apt.conf.d/52baremetal-test-uu. Prints the packages, one per line.
"""
import os
import re
import subprocess
import sys

REPO = '/var/tmp/baremetal-test-uu-repo'
SUFFIX = '+baremetaltest1'
FIELDS = ('Package', 'Version', 'Architecture', 'Depends', 'Pre-Depends', 'Provides')


def installed():
    fmt = '\\t'.join('${%s}' % f for f in FIELDS) + '\\t${db:Status-Abbrev}\\n'
    out = subprocess.run(['dpkg-query', '-W', '-f', fmt], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        values = line.split('\t')
        if values[-1][1:2] == 'i' and re.search(r'nvidia|cuda', values[0]):
            yield dict(zip(FIELDS, values[:-1]))


def bump(relations, versions):
    def repl(match):
        name, op, version = match.group(1), match.group(2), match.group(3)
        if versions.get(name.split(':')[0]) == version:
            version += SUFFIX
        return '%s (%s %s)' % (name, op, version)
    return re.sub(r'([a-z0-9][a-z0-9+.:-]*) \((=|>=|<=|<<|>>) ([^)]+)\)', repl, relations)


def main():
    packages = list(installed())
    versions = dict((p['Package'], p['Version']) for p in packages)
    os.makedirs(REPO, exist_ok=True)
    for pkg in packages:
        root = os.path.join(REPO, 'build', pkg['Package'])
        os.makedirs(os.path.join(root, 'DEBIAN'), exist_ok=True)
        lines = ['Package: %s' % pkg['Package'], 'Version: %s%s' % (pkg['Version'], SUFFIX),
                 'Architecture: %s' % pkg['Architecture'], 'Maintainer: baremetal.gpu tests <tests@invalid>',
                 'Description: TEST ONLY: an empty newer %s for unattended-upgrades\' dry run' % pkg['Package']]
        for field in ('Depends', 'Pre-Depends', 'Provides'):
            if pkg[field]:
                lines.append('%s: %s' % (field, bump(pkg[field], versions)))
        with open(os.path.join(root, 'DEBIAN', 'control'), 'w') as handle:
            handle.write('\n'.join(lines) + '\n')
        subprocess.run(['dpkg-deb', '--build', root, os.path.join(REPO, '%s.deb' % pkg['Package'])], check=True,
                       capture_output=True)
    subprocess.run('cd %s && apt-ftparchive packages . > Packages && apt-ftparchive -o APT::FTPArchive::Release::Origin=baremetal-test '
                   '-o APT::FTPArchive::Release::Label=baremetal-test -o APT::FTPArchive::Release::Suite=baremetal-test '
                   '-o APT::FTPArchive::Release::Codename=baremetal-test release . > Release' % REPO, shell=True,
                   check=True)
    with open('/etc/apt/sources.list.d/baremetal-test-uu.list', 'w') as handle:
        handle.write('deb [trusted=yes] file:%s ./\n' % REPO)
    with open('/etc/apt/apt.conf.d/52baremetal-test-uu', 'w') as handle:
        # Only this repository: the node's own security updates are not what the test asks about.
        handle.write('#clear Unattended-Upgrade::Allowed-Origins;\n#clear Unattended-Upgrade::Origins-Pattern;\n'
                     'Unattended-Upgrade::Origins-Pattern { "origin=baremetal-test"; };\n')
    subprocess.run(['apt-get', 'update', '-qq'], check=True)
    print('\n'.join(sorted(versions)))


def remove():
    """Take the repository, its source and its unattended-upgrades setting off again."""
    subprocess.run(['rm', '-rf', REPO, '/etc/apt/sources.list.d/baremetal-test-uu.list',
                    '/etc/apt/apt.conf.d/52baremetal-test-uu'], check=True)
    subprocess.run(['apt-get', 'update', '-qq'], check=True)


if __name__ == '__main__':
    sys.exit(remove() if sys.argv[1:] == ['remove'] else main())
