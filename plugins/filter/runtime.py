# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for the container runtime roles; documented in the .yml files beside."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import calendar
import datetime
import re

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.baremetal.gpu.plugins.plugin_utils.lazy import LazyModule

cdi = LazyModule('cdi')
containerd = LazyModule('containerd')
node_facts = LazyModule('node_facts')

# systemctl show --timestamp=us+utc: "Sun 2026-11-23 05:14:34.817431 UTC"
_SYSTEMD_TS = re.compile(r'(?P<date>[0-9]{4}-[0-9]{2}-[0-9]{2}) (?P<time>[0-9]{2}:[0-9]{2}:[0-9]{2})(?:\.(?P<us>[0-9]{1,6}))? UTC')


def runtime_version(text):
    """The first x.y.z version in a ``--version`` line ('' when none), as gpu_node_facts reads it."""
    return node_facts.parse_version(text or '')


def containerd_runtime_binary(text, runtime_name='nvidia'):
    """BinaryName of a runtime in a containerd configuration or config dump ('' when absent)."""
    return containerd.runtime_binary(text or '', runtime_name)


def containerd_reads_cdi(config_text, version_text=''):
    """Whether the containerd of that configuration and version reads CDI specs: {reads_cdi, version, reason}."""
    return containerd.reads_cdi(version_text or '', config_text or '')


def containerd_file_version(text):
    """The ``version`` of a containerd configuration file, None without one."""
    return containerd.file_version(text or '')


def containerd_dump_problems(dump, runtime_name, binary, cdi_wanted=False):
    """What a ``containerd config dump`` lacks: the runtime with that BinaryName, enable_cdi when wanted."""
    return containerd.dump_problems(dump or '', runtime_name, binary, boolean(cdi_wanted, strict=False))


def docker_cdi(text):
    """What a Docker Engine does with CDI, from ``dockerd --version`` output."""
    return cdi.docker_cdi(text or '')


def systemd_timestamp(text):
    """Seconds since the epoch (float) of a UTC timestamp from ``systemctl show --timestamp=us+utc``; 0.0 if unset."""
    text = (text or '').strip()
    if text in ('', 'n/a', '0'):
        return 0.0
    match = _SYSTEMD_TS.search(text)
    if not match:
        raise AnsibleFilterError('baremetal.gpu.systemd_timestamp: not a systemd UTC timestamp: %r' % text)
    moment = datetime.datetime.strptime(match.group('date') + ' ' + match.group('time'), '%Y-%m-%d %H:%M:%S')
    micro = int((match.group('us') or '0').ljust(6, '0'))
    return calendar.timegm(moment.timetuple()) + micro / 1e6


# What `systemctl is-enabled` prints for a unit that starts at boot or with what pulls it in (systemctl(1)).
ENABLED_STATES = ('enabled', 'enabled-runtime', 'static', 'indirect', 'alias')


def systemd_not_enabled(units, lines):
    """The units of ``units`` that ``systemctl is-enabled UNIT...`` (its stdout ``lines``, one per unit in the order
    asked) does not report enabled. A unit systemd does not know gets no line, only an error on stderr, so when the
    count differs no line can be matched to its unit: every unit is reported."""
    units = list(units or [])
    lines = [str(line).strip() for line in (lines or [])]
    if len(lines) != len(units):
        return units
    return [unit for unit, state in zip(units, lines) if state not in ENABLED_STATES]


def service_restart_reason(show_text, stat_results, changed_now=False):
    """Why a service must restart, from ``systemctl show --timestamp=us+utc -p LoadState -p ActiveState -p
    ActiveEnterTimestamp UNIT`` output and the ``stat`` results (loop over the configuration files): '' when the unit
    is not loaded and active (it reads its configuration when it starts), 'configuration changed in this run', or
    the files newer than its start (a run stopped between the change and the restart), else ''."""
    show = {}
    for line in (show_text or '').splitlines():
        if '=' in line:
            key, value = line.split('=', 1)
            show[key] = value
    if show.get('LoadState') != 'loaded' or show.get('ActiveState') != 'active':
        return ''
    if boolean(changed_now, strict=False):
        return 'configuration changed in this run'
    started = systemd_timestamp(show.get('ActiveEnterTimestamp', ''))
    newer = [result.get('item') for result in stat_results or []
             if (result.get('stat') or {}).get('exists') and (result['stat'].get('mtime') or 0) > started]
    if newer:
        return '%s newer than its start (a run stopped before the restart)' % ', '.join(newer)
    return ''


def files_by_marker(results, marker):
    """Sort the files a slurp loop read into those carrying ``marker`` (``own``) and the others (``user``).

    A file that could not be read (absent: no ``content``) is in neither list. Returns {'own': [...], 'user': [...]}
    of the loop items, in the loop's order.
    """
    out = {'own': [], 'user': []}
    for result in results or []:
        if result.get('content') is None:
            continue
        text = base64.b64decode(result['content']).decode('utf-8', 'replace')
        out['own' if marker in text else 'user'].append(result.get('item'))
    return out


class FilterModule(object):

    def filters(self):
        return {
            'runtime_version': runtime_version,
            'containerd_runtime_binary': containerd_runtime_binary,
            'containerd_reads_cdi': containerd_reads_cdi,
            'containerd_file_version': containerd_file_version,
            'containerd_dump_problems': containerd_dump_problems,
            'docker_cdi': docker_cdi,
            'systemd_timestamp': systemd_timestamp,
            'systemd_not_enabled': systemd_not_enabled,
            'service_restart_reason': service_restart_reason,
            'files_by_marker': files_by_marker,
        }
