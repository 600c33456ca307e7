# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kernel modules, read as text: ``dkms status``, DKMS build errors and ``modinfo``.

Pure functions, used by the filters of plugins/filter/driver.py and unit-tested on outputs captured
from real nodes (tests/fixtures/dkms/): dkms 2.8.7 (Ubuntu 22.04), 3.0.10 (Debian 12), 3.0.11
(Ubuntu 24.04) and 3.2.2 (Debian 13).

``dkms status`` lines, by dkms version:
- 3.x and Ubuntu's 2.8.7: ``nvidia/580.178.04, 6.8.0-149-generic, x86_64: installed``;
- upstream 2.8 and older: ``nvidia, 535.261.03, 6.1.0-50-amd64, x86_64: installed``;
- a module added (source registered) but built for no kernel: ``nvidia-current-open/550.163.01: added``;
- a state may be followed by a note in parentheses, e.g. ``installed (original_module exists)`` or
  ``built (WARNING! Diff between built and installed module!)``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

STATUS_LINE = re.compile(
    r'^(?P<module>[^\s,/:]+)(?:/|,\s*)(?P<version>[^\s,:]+)'
    r'(?:,\s*(?P<kernel>[^\s,:]+),\s*(?P<arch>[^\s,:]+))?'
    r':\s*(?P<state>[A-Za-z-]+)(?:\s*\((?P<note>.*)\))?\s*$')
MAKE_LOG = re.compile(r'(/\S+/make\.log)')


def parse_status(text):
    """Parse ``dkms status`` output: a list of dicts module, version, kernel, arch, state, note.

    ``kernel`` and ``arch`` are None for a module that is only added. Lines that are not status lines
    (warnings printed by dkms itself) are skipped.
    """
    out = []
    for raw in (text or '').splitlines():
        match = STATUS_LINE.match(raw.strip())
        if not match:
            continue
        out.append({'module': match.group('module'), 'version': match.group('version'),
                    'kernel': match.group('kernel'), 'arch': match.group('arch'),
                    'state': match.group('state').lower(), 'note': (match.group('note') or '').strip()})
    return out


def installed_kernels(entries, module):
    """{kernel: version} of the kernels ``module`` is installed for (state ``installed``)."""
    return dict((e['kernel'], e['version']) for e in entries
                if e['module'] == module and e['kernel'] and e['state'] == 'installed')


def summary(entries, module, kernels):
    """What ``dkms status`` says about ``module`` for each of ``kernels``.

    Returns a dict: built ({kernel: version}, installed ones), missing (kernels without an installed
    build), versions (sorted versions installed), states (one 'module/version, kernel: state' line
    per entry of that module, for messages).
    """
    built = installed_kernels(entries, module)
    missing = [k for k in kernels if k not in built]
    versions = sorted(set(built.values()))
    states = ['%s/%s%s: %s%s' % (e['module'], e['version'], (', ' + e['kernel']) if e['kernel'] else '',
                                 e['state'], (' (%s)' % e['note']) if e['note'] else '')
              for e in entries if e['module'] == module]
    return {'built': built, 'missing': missing, 'versions': versions, 'states': states}


def make_logs(text):
    """The DKMS build logs a failed build points at ("Consult /var/lib/dkms/.../make.log ..."), in order."""
    found = []
    for match in MAKE_LOG.finditer(text or ''):
        if match.group(1) not in found:
            found.append(match.group(1))
    return found


def build_errors(text):
    """The "Error! ..." lines of dkms (and the "E:" lines of apt around it), for a failure message."""
    out = []
    for raw in (text or '').splitlines():
        line = raw.strip()
        if line.startswith('Error!') or line.startswith('E: ') or 'Bad return status' in line:
            if line not in out:
                out.append(line)
    return out


def parse_modinfo(text):
    """Parse ``modinfo`` output into a dict: each field's value (repeated fields become lists).

    Continuation lines (a signature split over several lines) are appended to the previous field.
    """
    fields = {}
    last = None
    for raw in (text or '').splitlines():
        if raw[:1] in ('\t', ' ') and last:
            value = fields[last]
            if isinstance(value, list):
                value[-1] += raw.strip()
            else:
                fields[last] = value + raw.strip()
            continue
        name, sep, value = raw.partition(':')
        if not sep or not re.match(r'^[a-z_]+$', name):
            continue
        value = value.strip()
        if name in fields:
            if not isinstance(fields[name], list):
                fields[name] = [fields[name]]
            fields[name].append(value)
        else:
            fields[name] = value
        last = name
    return fields


# The license each flavour of the NVIDIA kernel module declares (modinfo -F license).
FLAVOUR_LICENSES = {'open': 'Dual MIT/GPL', 'proprietary': 'NVIDIA'}


def flavour_of_license(license_text):
    """'open' for "Dual MIT/GPL", 'proprietary' for "NVIDIA", '' otherwise."""
    for flavour, name in FLAVOUR_LICENSES.items():
        if (license_text or '').strip() == name:
            return flavour
    return ''
