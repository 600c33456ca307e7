# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure functions the host layer's uninstall decides with (no I/O); used by the filters in plugins/filter/uninstall.py.

- apt_history_installed: which packages the role's own apt transactions installed (apt's history.log),
  so that an uninstall removes those and never a package the node had before.
- containerd_config_restore: the main containerd config without the imports entry the role added.
- docker_daemon_restore: daemon.json without the runtime entries the role merged in.
- toolkit_packages_to_purge: the NVIDIA Container Toolkit packages an uninstall purges (container_toolkit's
  uninstall and the maintenance engine's uninstall plan ask the same question).
- dpkg_not_purged: of the packages a killed purge was taking off, those dpkg still knows as more than "not installed".
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.baremetal.gpu.plugins.module_utils import toml_compat
from ansible_collections.baremetal.gpu.plugins.module_utils.support import TOOLKIT_PACKAGES

# "nvidia-driver:amd64 (535.261.03-1~deb12u1), dkms:amd64 (3.0.10-8+deb12u1, automatic)"
_PKG = re.compile(r'([^\s,():]+)(?::[^\s,()]+)? \(([^)]*)\)')
_START = re.compile(r'^Start-Date:\s*(.+?)\s*$')


def history_entries(text):
    """apt history.log text (several files may be concatenated, in any order) -> entries sorted by Start-Date.

    Each entry is a dict of its "Key: value" lines; lines of an entry follow one another, entries are
    separated by blank lines.
    """
    entries, current = [], {}
    for line in (text or '').splitlines():
        if not line.strip():
            if current:
                entries.append(current)
            current = {}
            continue
        if ': ' in line:
            key, value = line.split(': ', 1)
            if key == 'Start-Date' and current:
                entries.append(current)
                current = {}
            current[key.strip()] = value.strip()
    if current:
        entries.append(current)
    # "2026-11-23  08:30:01": one format, so the text sorts as the time does; stable for equal dates.
    return sorted(entries, key=lambda e: re.sub(r'\s+', ' ', e.get('Start-Date', '')))


def history_packages(value):
    """Package names of an Install:/Remove:/... value, without the architecture."""
    return [match.group(1) for match in _PKG.finditer(value or '')]


def history_versions(value):
    """{name: version} of an Install:/Upgrade:/... value ("name:arch (version[, automatic])"; for an upgrade,
    "old, new": the new one)."""
    out = {}
    for match in _PKG.finditer(value or ''):
        words = [w.strip() for w in match.group(2).split(',') if w.strip() and w.strip() != 'automatic']
        if words:
            out[match.group(1)] = words[-1]
    return out


def apt_history_installed(text, commandline_regex):
    """Packages that apt transactions whose Commandline matches ``commandline_regex`` installed, and that
    no later transaction removed or installed again on its own (then they are someone else's).

    Returns a dict: packages (sorted names), versions ({name: every version the matching transactions installed or
    upgraded it to}), transactions (how many matched), first/last (their Start-Date).
    """
    pattern = re.compile(commandline_regex)
    ours = set()
    versions = {}
    matched = []
    for entry in history_entries(text):
        installed = history_packages(entry.get('Install')) + history_packages(entry.get('Reinstall'))
        gone = history_packages(entry.get('Remove')) + history_packages(entry.get('Purge'))
        if pattern.search(entry.get('Commandline', '')):
            matched.append(entry.get('Start-Date', ''))
            ours.update(installed)
            for key in ('Install', 'Reinstall', 'Upgrade', 'Downgrade'):
                for name, version in history_versions(entry.get(key)).items():
                    versions.setdefault(name, [])
                    if version not in versions[name]:
                        versions[name].append(version)
        else:
            ours.difference_update(installed)
        ours.difference_update(gone)
    return {'packages': sorted(ours), 'versions': versions, 'transactions': len(matched),
            'first': matched[0] if matched else '', 'last': matched[-1] if matched else ''}


# dpkg-query --showformat '${db:Status-Abbrev}${binary:Package}\n': "rc nvidia-compute-utils-580",
# "ii libnvidia-compute-580:amd64". The second letter is the package's state; "n" is not installed.
_STATUS = re.compile(r'^([a-z?])([a-zA-Z?])([a-zA-Z ]?)\s*(\S+?)(?::[^\s:]+)?\s*$')


def dpkg_not_purged(text):
    """Packages whose line of ``dpkg-query --show --showformat '${db:Status-Abbrev}${binary:Package}\\n'`` says
    dpkg still has something of them: installed, half-installed or half-configured (a dpkg run killed in the middle),
    or removed with their configuration files left ("rc"), which apt's package list no longer shows as installed.
    Sorted names, without the architecture. Lines of dpkg-query's errors (a package it never knew) are not status
    lines and are skipped."""
    names = set()
    for line in (text or '').splitlines():
        match = _STATUS.match(line)
        if match and match.group(2) != 'n':
            names.add(match.group(4))
    return sorted(names)


def _upstream(version):
    """The upstream part of a Debian version: no epoch, no revision (580.178.04-0ubuntu0.24.04.1 -> 580.178.04)."""
    return re.sub(r'-[^-]*$', '', re.sub(r'^[0-9]+:', '', version or ''))


def dkms_builds_to_remove(builds, versions):
    """Of the NVIDIA DKMS builds a purge left in /var/lib/dkms (gpu_node_facts' driver_dkms_modules: module, version,
    kernel), those of the role: their version is the upstream version of a DKMS package the role's own apt
    transactions installed (``versions``: apt_history_installed's). Another build (a .run installer's, someone
    else's package) stays.

    Returns a dict: remove (paths under /var/lib/dkms: the module's whole directory when none of its builds stays,
    else "module/version") and keep ("module/version"), each sorted.
    """
    ours = set()
    for name, seen in (versions or {}).items():
        if 'dkms' in name:
            ours.update(_upstream(v) for v in seen)
    mine, keep = set(), set()
    for build in builds or []:
        key = (build.get('module', ''), build.get('version', ''))
        (mine if build.get('version') in ours else keep).add(key)
    kept_modules = set(module for module, _version in keep)
    remove = set(module if module not in kept_modules else '%s/%s' % (module, version) for module, version in mine)
    return {'remove': sorted(remove), 'keep': sorted('%s/%s' % k for k in keep)}


def _imports_line(entries):
    return 'imports = [%s]\n' % ', '.join('"%s"' % e.replace('\\', '\\\\').replace('"', '\\"') for e in entries)


def containerd_config_restore(text, import_entry, dropin, others=None, modified=False):
    """What to do with the main containerd config once the role's drop-in is gone.

    text: the main config's content (None when missing); import_entry: the imports entry the role adds
    (e.g. /etc/containerd/conf.d/*.toml); dropin: the role's drop-in path; others: files the entry still
    matches once the drop-in is removed (they belong to someone, so the entry stays); modified: whether
    the role changed an existing config (the install keeps a backup, ``config.toml.<pid>.<date>~``, when it
    does). The role either adds the entry to an existing config (with `version` when it had none), or
    creates the file as ``version = N`` + ``imports = [entry]``. So: with ``modified`` the entry is removed
    (the whole line when it was the only one); without it, a file that is only ``version = N`` once the entry
    is out was created by the role and is removed; any other file had the entry before the role came, and
    is kept. A `version` line the role added to an existing config stays (the version containerd assumed),
    and so does nothing else but the entry's line: ``imports = []`` comes back as no imports line.
    Returns a dict: action ('keep', 'write' or 'remove'), content (for 'write'), reason.
    """
    if text is None:
        return {'action': 'keep', 'content': '', 'reason': 'no main config'}
    try:
        data = toml_compat.loads(text)
    except ValueError as exc:
        return {'action': 'keep', 'content': '', 'reason': 'not valid TOML, left alone: %s' % exc}
    imports = list(data.get('imports') or [])
    ours = [entry for entry in imports if entry in (import_entry, dropin)]
    if not ours:
        return {'action': 'keep', 'content': '', 'reason': 'no imports entry of the role'}
    if others:
        return {'action': 'keep', 'content': '',
                'reason': '%s still imports %s' % (import_entry, ', '.join(sorted(others)))}
    rest = [entry for entry in imports if entry not in ours]
    line = _imports_line(rest) if rest else ''
    new, count = re.subn(r'(?ms)^imports\s*=\s*\[.*?\][ \t]*(?:#[^\n]*)?\n?', lambda m: line, text, count=1)
    if count == 0:
        return {'action': 'keep', 'content': '', 'reason': 'imports is not a one-key array this role wrote'}
    only_version = re.sub(r'\s+', ' ', new).strip() in ('version = 2', 'version = 3')
    if modified:
        return {'action': 'write', 'content': new, 'reason': 'imports entry %s removed' % ', '.join(ours)}
    if only_version:
        return {'action': 'remove', 'content': '', 'reason': 'the role created it (only version and its entry)'}
    return {'action': 'keep', 'content': '',
            'reason': 'the entry was there before the role (it kept no backup of this file)'}


def docker_daemon_restore(data, runtime_name, binary):
    """daemon.json (a dict) without the role's runtime, and the default-runtime naming it.

    Returns a dict: changed, content (the new dict), empty (nothing left: the file can go), removed (keys).
    ``features.cdi`` stays: it reads every CDI spec, not only NVIDIA's, and the user may rely on it.
    """
    new = dict(data or {})
    removed = []
    runtimes = dict(new.get('runtimes') or {})
    runtime = runtimes.get(runtime_name)
    if isinstance(runtime, dict) and runtime.get('path') == binary:
        del runtimes[runtime_name]
        removed.append('runtimes.%s' % runtime_name)
        if runtimes:
            new['runtimes'] = runtimes
        else:
            new.pop('runtimes', None)
    if new.get('default-runtime') == runtime_name and runtime_name not in (new.get('runtimes') or {}):
        del new['default-runtime']
        removed.append('default-runtime')
    return {'changed': bool(removed), 'content': new, 'empty': not new, 'removed': removed}


def toolkit_packages_to_purge(installed, enabled=True, recorded=None):
    """The toolkit packages (support.TOOLKIT_PACKAGES, in that order) that are installed and that the role installed
    (``recorded``: the names container_toolkit's install recorded on the node before installing them; None, no record:
    none is known to be the role's), when ``enabled`` (container_toolkit_uninstall_packages); ``installed`` is
    package_facts' dict or a list of names. A toolkit the node had before the role came is never in the record."""
    if not enabled or recorded is None:
        return []
    names = set(installed or []) & set(recorded)
    return [name for name in TOOLKIT_PACKAGES if name in names]
