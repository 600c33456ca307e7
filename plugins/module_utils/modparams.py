# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVIDIA kernel module parameters (``NVreg_*``): checked, written as one modprobe.d line, compared.

Pure functions (no I/O), used by the filters baremetal.gpu.nvidia_module_params and
baremetal.gpu.nvidia_params_mismatches (roles/nvidia_driver/tasks/module-params.yml, verify).

The nvidia module reads its parameters at load time from ``options nvidia NVreg_Name=value`` in
/etc/modprobe.d (and from the initramfs copy of it when the module is loaded from there); a change
takes effect at the next load of the module, that is the next boot. The loaded module prints what it
runs with in /proc/driver/nvidia/params: one line per parameter, ``Name: value`` without the ``NVreg_``
prefix, integers as unsigned decimal and the string parameters in double quotes (NVIDIA
open-gpu-kernel-modules, kernel-open/nvidia/nv-procfs.c, nv_procfs_read_params).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

VARIABLE = 'nvidia_driver_module_params'
NAME = re.compile(r'^NVreg_[A-Za-z0-9_]+$')
# A value modprobe passes as one word: no whitespace, no quote or "#" that would change the line's meaning.
VALUE = re.compile(r'^[^\s"\'#\\]+$')
MODULE = 'nvidia'
PARAMS_LINE = re.compile(r'^(?P<name>[A-Za-z0-9_]+): (?P<value>.*)$')


def _text(value):
    if isinstance(value, bool):
        return '1' if value else '0'
    return str(value)


def check(params):
    """Validate ``params`` (a dict NVreg_Name -> value). Returns (normalised dict of strings, errors).

    Each error names the variable and the offending entry: a name that is not NVreg_<Name>, or a value
    that is empty or holds whitespace, a newline, a quote, "#" or a backslash.
    """
    errors = []
    if params is None:
        return {}, errors
    if not isinstance(params, dict):
        return {}, ['%s must be a dictionary of NVreg_* parameters to values, got %s'
                    % (VARIABLE, type(params).__name__)]
    out = {}
    for name in sorted(params, key=str):
        value = params[name]
        if not NAME.match(str(name)):
            errors.append('%s: %r is not an NVIDIA module parameter name (NVreg_<Name>, letters, digits and "_")'
                          % (VARIABLE, name))
            continue
        if value is None or isinstance(value, (dict, list)):
            errors.append('%s: %s must be a number or a word, got %r' % (VARIABLE, name, value))
            continue
        text = _text(value)
        if not VALUE.match(text):
            errors.append('%s: the value of %s must be one word without spaces, newlines, quotes, "#" or "\\", got %r'
                          % (VARIABLE, name, text))
            continue
        out[str(name)] = text
    return out, errors


def options_line(params):
    """'options nvidia NVreg_A=1 NVreg_B=x' for the checked dict (sorted); '' when empty."""
    if not params:
        return ''
    return 'options %s %s' % (MODULE, ' '.join('%s=%s' % (k, params[k]) for k in sorted(params)))


def parse_proc_params(text):
    """{'EnableStreamMemOPs': '1', 'TemporaryFilePath': '/var/tmp', ...} from /proc/driver/nvidia/params."""
    out = {}
    for line in (text or '').splitlines():
        match = PARAMS_LINE.match(line.strip())
        if match:
            value = match.group('value').strip()
            if len(value) >= 2 and value[0] == value[-1] == '"':
                value = value[1:-1]
            out[match.group('name')] = value
    return out


def _kernel_uint(text):
    """A number as the kernel reads a module parameter (kstrtouint with base 0): 0x... hexadecimal, a leading 0
    octal (NVreg_DeviceFileMode=0666 is 438, which /proc/driver/nvidia/params prints), else decimal."""
    text = text.strip()
    if text[:2].lower() == '0x':
        return int(text[2:], 16)
    if len(text) > 1 and text[0] == '0':
        return int(text[1:], 8)
    return int(text, 10)


def _same(want, got):
    if want == got:
        return True
    try:
        return _kernel_uint(want) == _kernel_uint(got)
    except ValueError:
        return False


def mismatches(requested, proc_text):
    """Every requested parameter the loaded module does not run with, as sentences (empty when all match)."""
    loaded = parse_proc_params(proc_text)
    problems = []
    for name in sorted(requested or {}):
        short = name[len('NVreg_'):]
        if short not in loaded:
            problems.append('%s: the loaded nvidia module has no parameter %s (/proc/driver/nvidia/params)'
                            % (name, short))
        elif not _same(str(requested[name]), loaded[short]):
            problems.append('%s: asked %s, the loaded module runs with %s (applied at the next module load: reboot)'
                            % (name, requested[name], loaded[short]))
    return problems
