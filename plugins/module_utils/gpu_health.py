# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure functions for the GPU health check: findings from nvidia-smi, the kernel log and DCGM, a verdict per
node, and the quarantine / release / remediation decisions taken from them.

Nothing here runs a command or touches Ansible. The module ``baremetal.gpu.gpu_health`` passes in what it read
(the parsed ``nvidia-smi -q -x``, the kernel log text, the ``dcgmi diag -j`` text, the GPUs on the PCI bus) and
gets plain data back. Every input may be missing, partial or garbage: that gives a finding saying so, never an
exception.

A finding is ``{gpu, pci_bus_id, check, severity, action, detail, source}``: ``gpu`` is nvidia-smi's index (None
for a node-wide finding or a device nvidia-smi does not list), ``severity`` one of info / warning / critical,
``action`` the catalog's immediate action (RESET_GPU, RESTART_BM, CONTACT_SUPPORT, ...) or one of this
collection's own (NONE, CHECK_MECHANICALS, CHECK_DRIVER, CHECK_FABRIC_MANAGER, RERUN). The node verdict is
``unhealthy`` with any critical finding, ``degraded`` with any warning, else ``healthy``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.baremetal.gpu.plugins.module_utils.maintenance_nodes import QUARANTINE_TAINT, RUN_ANNOTATION, TIME_ANNOTATION
from ansible_collections.baremetal.gpu.plugins.module_utils.maintenance_nodes import ours as engine_working_on
from ansible_collections.baremetal.gpu.plugins.module_utils.xid_catalog import (
    CATALOG_DATE,
    CATALOG_SOURCE,
    RECOVERY_ACTIONS,
    SXID_FATAL_ACTION,
    SXID_NONFATAL_ACTION,
    XID_CATALOG,
)

INFO = 'info'
WARNING = 'warning'
CRITICAL = 'critical'
SEVERITIES = (INFO, WARNING, CRITICAL)
HEALTHY = 'healthy'
DEGRADED = 'degraded'
UNHEALTHY = 'unhealthy'

SOURCE_SMI = 'nvidia-smi -q -x'
SOURCE_PCI = 'sysfs /sys/bus/pci/devices'
SOURCE_DCGM = 'dcgmi diag -j'

# What the collection does with each action: (severity, remediation). Remediation ``reset_gpu`` is a GPU reset
# when no process holds the GPU and a reboot otherwise; ``reboot`` is a reboot; None is left to a person.
ACTION_POLICY = {
    'NONE': (INFO, None),
    'IGNORE': (INFO, None),
    'WORKFLOW_XID_45': (INFO, None),          # preemptive cleanup after another Xid: that Xid carries the action
    'RESTART_APP': (WARNING, None),           # the application's failure; the GPU keeps working
    'CHECK_UVM': (WARNING, None),
    'UPDATE_SWFW': (WARNING, None),
    'CHECK_MECHANICALS': (WARNING, None),
    'FOLLOW_XID_154': (WARNING, None),        # only when the line names no recovery action
    'RERUN': (WARNING, None),                 # a source could not be read; run the check again
    'RESET_GPU': (CRITICAL, 'reset_gpu'),
    'WORKFLOW_XID_48': (CRITICAL, 'reset_gpu'),  # DBE: drain, reset the GPU, then service if it recurs
    'RESTART_BM': (CRITICAL, 'reboot'),
    'RESTART_VM': (CRITICAL, 'reboot'),       # on bare metal the VM is the machine
    'WORKFLOW_NVLINK_ERR': (CRITICAL, None),   # NVIDIA's workflow reads the error registers: a person's job
    'WORKFLOW_NVLINK5_ERR': (CRITICAL, None),
    'CONTACT_SUPPORT': (CRITICAL, None),
    'CHECK_DRIVER': (CRITICAL, None),
    'CHECK_FABRIC_MANAGER': (CRITICAL, None),
}

REMEDIATIONS = ('reset_gpu', 'reboot')

# Checks a user may skip (option skip_checks); every finding's check is one of these.
CHECKS = (
    'nvidia_smi', 'partial_output', 'gpu_count', 'gpu_not_visible', 'ecc_volatile_uncorrectable',
    'ecc_aggregate_uncorrectable', 'sram_threshold', 'unrepairable_memory', 'retired_pages_pending',
    'retired_pages_count', 'row_remap_pending', 'row_remap_failure', 'clocks_event', 'pcie_link_gen',
    'pcie_link_width', 'fabric', 'xid', 'sxid', 'fallen_off_bus', 'kernel_log', 'dcgm_diag',
)

# The clock event reasons that say the hardware slowed the GPU (the brief's HW slowdown, HW thermal, power brake).
HW_EVENT_REASONS = ('hw_slowdown', 'hw_thermal_slowdown', 'hw_power_brake_slowdown')


def finding(check, severity, action, detail, source, gpu=None, pci_bus_id=None):
    return {'gpu': gpu, 'pci_bus_id': pci_bus_id, 'check': check, 'severity': severity, 'action': action,
            'detail': detail, 'source': source}


def policy_finding(check, action, detail, source, gpu=None, pci_bus_id=None):
    """A finding whose severity is the one ACTION_POLICY gives its action."""
    severity = ACTION_POLICY.get(action, (CRITICAL, None))[0]
    return finding(check, severity, action, detail, source, gpu, pci_bus_id)


# ---- PCI addresses -------------------------------------------------------------------------------

_PCI_RE = re.compile(r'^(?:(?P<domain>[0-9a-f]+):)?(?P<bus>[0-9a-f]{1,2}):(?P<dev>[0-9a-f]{1,2})(?:\.(?P<fn>[0-9a-f]))?$',
                     re.I)


def pci_key(address):
    """A comparable 'dddd:bb:dd' for any PCI address form: nvidia-smi's '00000000:CB:00.0', sysfs's
    '0000:cb:00.0', the kernel log's '0000:cb:00'. None when it is not a PCI address."""
    if not address:
        return None
    match = _PCI_RE.match(address.strip())
    if not match:
        return None
    domain = int(match.group('domain') or '0', 16)
    return '%04x:%02x:%02x' % (domain, int(match.group('bus'), 16), int(match.group('dev'), 16))


# ---- nvidia-smi ---------------------------------------------------------------------------------------

def _busy(health):
    """True when the GPU is at full clocks (P0) and not idle: only then is a lower PCIe link a fault."""
    return health.get('performance_state') == 'P0' and not health.get('clocks_event_reasons', {}).get('gpu_idle')


# The NVLink fabric registration still running (nvidia-smi's fabric state while Fabric Manager registers the GPUs,
# right after a boot or a Fabric Manager start): a state to wait for, not a fault (gpu_health's fabric_wait).
FABRIC_PENDING = ('in progress',)


def _fabric_in_progress(state):
    return (state or '').strip().lower() in FABRIC_PENDING


def fabric_pending(facts):
    """The indexes of the GPUs whose NVLink fabric registration is still in progress, in a parsed ``nvidia-smi -q -x``
    (health=True); empty when none is (or the system has no NVSwitch fabric)."""
    return [gpu.get('index') for gpu in (facts or {}).get('gpus') or []
            if _fabric_in_progress((gpu.get('health') or {}).get('fabric_state'))]


def gpu_findings(gpu, retired_pages_limit=60, fabric_waited=None):
    """Findings for one parsed GPU (``nvidia_smi.parse_nvidia_smi_xml(..., health=True)``). ``fabric_waited``: the
    seconds the caller waited for a fabric registration in progress (named in the finding when it still is)."""
    out = []
    health = gpu.get('health') or {}
    index, bus_id = gpu.get('index'), gpu.get('pci_bus_id')

    def add(check, severity, action, detail):
        out.append(finding(check, severity, action, detail, SOURCE_SMI, index, bus_id))

    volatile = health.get('ecc_volatile_uncorrectable')
    if volatile:
        add('ecc_volatile_uncorrectable', CRITICAL, 'RESET_GPU',
            '%d uncorrectable ECC error(s) since the driver loaded (volatile); the memory they hit is retired or '
            'remapped only after a GPU reset' % volatile)
    aggregate = health.get('ecc_aggregate_uncorrectable')
    if aggregate and not volatile:
        add('ecc_aggregate_uncorrectable', WARNING, 'NONE',
            '%d uncorrectable ECC error(s) over the GPU\'s life (aggregate), none since the driver loaded; watch '
            'the retired pages and remapped rows' % aggregate)
    if health.get('sram_threshold_exceeded'):
        add('sram_threshold', CRITICAL, 'CONTACT_SUPPORT', 'SRAM uncorrectable error threshold exceeded')
    if health.get('unrepairable_memory'):
        add('unrepairable_memory', CRITICAL, 'CONTACT_SUPPORT', 'nvidia-smi reports unrepairable memory')
    if health.get('retired_pages_pending'):
        add('retired_pages_pending', CRITICAL, 'RESET_GPU',
            'pages are pending retirement; they are retired at the next GPU reset or reboot')
    retired = [v for v in (health.get('retired_pages_sbe'), health.get('retired_pages_dbe')) if v is not None]
    if retired and retired_pages_limit:
        total = sum(retired)
        if total >= retired_pages_limit:
            add('retired_pages_count', CRITICAL, 'CONTACT_SUPPORT',
                '%d retired pages, at or above the limit of %d' % (total, retired_pages_limit))
        elif total * 5 >= retired_pages_limit * 4:
            add('retired_pages_count', WARNING, 'NONE',
                '%d retired pages, near the limit of %d (80 %% or more)' % (total, retired_pages_limit))
    if health.get('remapped_rows_failure'):
        add('row_remap_failure', CRITICAL, 'CONTACT_SUPPORT',
            'row remapping failed: the memory has no spare row left for a bad one (remapped: %s correctable, %s '
            'uncorrectable)' % (health.get('remapped_rows_correctable'), health.get('remapped_rows_uncorrectable')))
    if health.get('remapped_rows_pending'):
        add('row_remap_pending', CRITICAL, 'RESET_GPU',
            'a row remapping is pending; it takes effect at the next GPU reset (remapped: %s correctable, %s '
            'uncorrectable)' % (health.get('remapped_rows_correctable'), health.get('remapped_rows_uncorrectable')))
    reasons = health.get('clocks_event_reasons') or {}
    active = [name for name in HW_EVENT_REASONS if reasons.get(name)]
    if active:
        add('clocks_event', WARNING, 'CHECK_MECHANICALS',
            'the hardware is slowing the clocks: %s (cooling, power supply or power brake signal)' % ', '.join(active))
    if reasons.get('sw_thermal_slowdown'):
        add('clocks_event', INFO, 'NONE', 'the driver is slowing the clocks for temperature (sw_thermal_slowdown)')
    state = health.get('performance_state') or 'unknown'
    for check, what, cur_key, max_key in (('pcie_link_gen', 'generation', 'pcie_gen_current', 'pcie_gen_max'),
                                          ('pcie_link_width', 'width', 'pcie_width_current', 'pcie_width_max')):
        cur, top = health.get(cur_key), health.get(max_key)
        if cur is None or top is None or cur >= top:
            continue
        if _busy(health):
            add(check, WARNING, 'CHECK_MECHANICALS',
                'PCIe link %s %s below its maximum %s while the GPU is busy (%s): reseat the card or check the '
                'slot and riser' % (what, cur, top, state))
        else:
            add(check, INFO, 'NONE',
                'PCIe link %s %s below its maximum %s with the GPU idle (%s): normal power saving; check again '
                'under load' % (what, cur, top, state))
    fabric_state = health.get('fabric_state')
    if fabric_state is not None:
        status = health.get('fabric_status')
        if fabric_state.lower() != 'completed' or (status is not None and status.lower() != 'success'):
            waited = (' (still in progress after a wait of %s s)' % fabric_waited
                      if fabric_waited is not None and _fabric_in_progress(fabric_state) else '')
            add('fabric', CRITICAL, 'CHECK_FABRIC_MANAGER',
                'NVLink fabric registration state %s, status %s%s (expected Completed, Success): is '
                'nvidia-fabricmanager running at the driver\'s version?' % (fabric_state, status or 'N/A', waited))
    return out


def smi_findings(facts, retired_pages_limit=60, fabric_waited=None):
    """Findings for a parsed ``nvidia-smi -q -x`` (health=True): every GPU, plus a partial output."""
    out = []
    attached = facts.get('attached_gpus')
    if attached is not None and attached != facts.get('gpu_count'):
        out.append(finding('partial_output', WARNING, 'RERUN',
                           'nvidia-smi reports attached_gpus=%s but lists %s GPU(s): the output is partial, the '
                           'GPUs not listed were not checked' % (attached, facts.get('gpu_count')), SOURCE_SMI))
    for gpu in facts.get('gpus') or []:
        out.extend(gpu_findings(gpu, retired_pages_limit, fabric_waited))
    return out


def smi_failure_finding(status, message, pci_gpus):
    """The finding for an nvidia-smi that gave no GPU data. ``status`` is the nvidia_smi module's status."""
    if status == 'timeout':
        return finding('nvidia_smi', CRITICAL, 'RESTART_BM',
                       'nvidia-smi hung (a GPU or the driver is stuck; usually only a reboot clears it): %s' % message,
                       SOURCE_SMI)
    if status == 'no_devices' and pci_gpus:
        return finding('nvidia_smi', CRITICAL, 'RESTART_BM',
                       'the driver sees no GPU but the PCI bus has %d: %s' % (len(pci_gpus), message), SOURCE_SMI)
    if status in ('no_driver_communication', 'nvml_init_failed', 'binary_missing'):
        return finding('nvidia_smi', CRITICAL, 'CHECK_DRIVER', message, SOURCE_SMI)
    return finding('nvidia_smi', WARNING, 'RERUN', 'nvidia-smi gave no usable output (%s): %s' % (status, message),
                   SOURCE_SMI)


def pci_findings(pci_gpus, smi_gpus, expected_gpu_count=None):
    """GPUs the PCI bus has and nvidia-smi does not list, and a GPU count below the expected one.

    ``pci_gpus``: [{'address': '0000:b3:00.0', 'driver': 'nvidia' or 'vfio-pci' or None, ...}] (sysfs);
    ``smi_gpus``: the parsed GPUs, or None when nvidia-smi gave nothing (then only the count is checked).
    GPUs bound to vfio-pci (passed through to a VM) are not expected to be seen by the driver.
    """
    out = []
    listed = None if smi_gpus is None else set(pci_key(g.get('pci_bus_id')) for g in smi_gpus)
    host_gpus = [g for g in pci_gpus or [] if (g.get('driver') or '') != 'vfio-pci']
    if listed is not None:
        for gpu in host_gpus:
            if pci_key(gpu['address']) in listed:
                continue
            driver = gpu.get('driver')
            out.append(finding(
                'gpu_not_visible', CRITICAL, 'RESTART_BM',
                'GPU %s (%s) is on the PCI bus but nvidia-smi does not list it (kernel driver: %s): it fell off the '
                'bus or the driver failed to bind it' % (gpu['address'], gpu.get('device_id') or 'NVIDIA',
                                                         driver or 'none'),
                SOURCE_PCI, None, gpu['address']))
    if expected_gpu_count is not None:
        seen = len(smi_gpus) if smi_gpus is not None else 0
        if seen < expected_gpu_count:
            out.append(finding(
                'gpu_count', CRITICAL, 'RESTART_BM',
                'nvidia-smi lists %d GPU(s), expected %d (the PCI bus shows %d); a GPU missing from the PCI bus too '
                'needs a power cycle, and support if it does not come back'
                % (seen, expected_gpu_count, len(host_gpus)), SOURCE_SMI))
    return out


# ---- kernel log ---------------------------------------------------------------------------------------

XID_RE = re.compile(r'NVRM: Xid \((?:PCI:)?(?P<pci>[0-9a-fA-F:.]+)\): (?P<xid>\d+),\s*(?P<rest>.*)$')
SXID_RE = re.compile(r'(?P<dev>nvidia-nvswitch\d+): SXid \(PCI:(?P<pci>[0-9a-fA-F:.]+)\): (?P<sxid>\d+), '
                     r'(?P<fatal>Fatal|Non-fatal),\s*(?P<rest>.*)$')
FALLEN_RE = re.compile(r'NVRM: (?:GPU (?P<pci1>[0-9a-fA-F:.]+): GPU has fallen off the bus'
                       r'|The NVIDIA GPU (?P<pci2>[0-9a-fA-F:.]+)\s*$)')
NONFATAL_NVLINK_RE = re.compile(r'\bNon-?fatal\b', re.I)
RECOVERY_RE = re.compile(r'to 0x(?P<code>[0-9a-fA-F]+)')
CAUSED_BY_RE = re.compile(r'caused by previous Xid (?P<xid>\d+)')
NVLINK5_XIDS = frozenset(range(144, 151))


def _prefix(line, match):
    """The text before the match (the timestamp, host and 'kernel:' that journalctl or dmesg print)."""
    return line[:match.start()].strip()


def parse_kernel_log(text):
    """Xid, SXid and fallen-off-the-bus events in a kernel log (journalctl -k or dmesg, any prefix).

    Returns a list of events {kind: xid|sxid|fallen_off_bus, code, pci, fatal, line, when}, in log order.
    Lines that are neither are ignored; so are the SXid detail lines ('Data {...}', 'Severity ...').
    """
    events = []
    lines = (text or '').splitlines()
    for number, line in enumerate(lines):
        match = XID_RE.search(line)
        if match:
            events.append({'kind': 'xid', 'code': int(match.group('xid')), 'pci': match.group('pci'),
                           'fatal': None, 'line': line.strip(), 'when': _prefix(line, match),
                           'rest': match.group('rest')})
            continue
        match = SXID_RE.search(line)
        if match:
            events.append({'kind': 'sxid', 'code': int(match.group('sxid')), 'pci': match.group('pci'),
                           'fatal': match.group('fatal') == 'Fatal', 'line': line.strip(),
                           'when': _prefix(line, match), 'rest': match.group('rest'), 'device': match.group('dev')})
            continue
        match = FALLEN_RE.search(line)
        if match:
            pci = match.group('pci1') or match.group('pci2')
            if match.group('pci2'):
                # "The NVIDIA GPU <addr>" starts a multi-line message; it is a fall only if the next lines say so.
                following = ' '.join(lines[number + 1:number + 3])
                if 'fallen off the bus' not in following:
                    continue
            events.append({'kind': 'fallen_off_bus', 'code': None, 'pci': pci, 'fatal': True, 'line': line.strip(),
                           'when': _prefix(line, match), 'rest': ''})
    return events


def classify_xid(code, rest=''):
    """(action, mnemonic, note) for an Xid, from the catalog; ``rest`` is the text after the code."""
    entry = XID_CATALOG.get(code)
    if entry is None:
        return 'CONTACT_SUPPORT', None, 'not in the Xid catalog carried (%s, read %s)' % (CATALOG_SOURCE, CATALOG_DATE)
    action, note = entry['action'], ''
    cause = CAUSED_BY_RE.search(rest or '')
    if action == 'WORKFLOW_XID_45' and cause and int(cause.group('xid')) != code:
        # Xid 45 is the cleanup after another Xid; when the line names it, that Xid's action applies.
        cause_action, cause_mnemonic, _note = classify_xid(int(cause.group('xid')))
        return cause_action, entry['mnemonic'], 'caused by Xid %s %s' % (cause.group('xid'), cause_mnemonic)
    if action == 'FOLLOW_XID_154':
        match = RECOVERY_RE.search(rest or '')
        if match and int(match.group('code'), 16) in RECOVERY_ACTIONS:
            action = RECOVERY_ACTIONS[int(match.group('code'), 16)]
            note = 'recovery action 0x%s' % match.group('code')
    if code in NVLINK5_XIDS and NONFATAL_NVLINK_RE.search(rest or ''):
        return 'IGNORE', entry['mnemonic'], 'non-fatal NVLink event'
    return action, entry['mnemonic'], note


def xids_by_code_alone(severity):
    """The Xids whose code alone gives ``severity``: what an alert on dcgm-exporter's DCGM_FI_DEV_XID_ERRORS (the
    code, without the kernel-log line) can judge as the module does. Left out: Xids whose finding depends on the
    line (45 names the Xid it cleans up after, 154 the recovery action, NVLink5 Xids 144-150 say Non-fatal)."""
    if severity not in SEVERITIES:
        raise ValueError('severity must be one of %s, got %r' % (', '.join(SEVERITIES), severity))
    out = []
    for code in sorted(XID_CATALOG):
        action = XID_CATALOG[code]['action']
        if action in ('WORKFLOW_XID_45', 'FOLLOW_XID_154') or code in NVLINK5_XIDS:
            continue
        if ACTION_POLICY.get(action, (CRITICAL, None))[0] == severity:
            out.append(code)
    return out


def kernel_log_findings(events, smi_gpus, source):
    """One finding per (kind, code, device), with the count, the first and last time and the first line."""
    by_pci = dict((pci_key(g.get('pci_bus_id')), g) for g in smi_gpus or [])
    groups = {}
    order = []
    for event in events:
        if event['kind'] == 'fallen_off_bus' and any(
                e['kind'] == 'xid' and e['code'] == 79 and pci_key(e['pci']) == pci_key(event['pci']) for e in events):
            continue  # the Xid 79 line says the same
        key = (event['kind'], event['code'], pci_key(event['pci']) or event['pci'])
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(event)
    out = []
    for key in order:
        group = groups[key]
        first = group[0]
        gpu = by_pci.get(key[2])
        index = gpu.get('index') if gpu else None
        bus_id = gpu.get('pci_bus_id') if gpu else first['pci']
        times = ' (first %s, last %s)' % (first['when'] or '?', group[-1]['when'] or '?') if len(group) > 1 else ''
        count = '%d line(s)%s; first: %s' % (len(group), times, first['line'])
        if first['kind'] == 'xid':
            action, mnemonic, note = classify_xid(first['code'], first['rest'])
            detail = 'Xid %d %s%s: %s' % (first['code'], mnemonic or '(no mnemonic)',
                                          ' (%s)' % note if note else '', count)
            out.append(policy_finding('xid', action, detail, source, index, bus_id))
        elif first['kind'] == 'sxid':
            fatal = any(e['fatal'] for e in group)
            action = SXID_FATAL_ACTION if fatal else SXID_NONFATAL_ACTION
            severity = CRITICAL if fatal else WARNING
            detail = 'NVSwitch %s SXid %d %s: %s' % (first.get('device'), first['code'],
                                                     'Fatal' if fatal else 'Non-fatal', count)
            out.append(finding('sxid', severity, action, detail, source, None, first['pci']))
        else:
            out.append(policy_finding('fallen_off_bus', 'RESTART_BM',
                                      'the kernel says the GPU fell off the bus: %s' % count, source, index, bus_id))
    return out


# ---- DCGM diagnostics -----------------------------------------------------------------------------

def _json_document(text):
    """The JSON object in ``text`` (dcgmi may print a line before it); None when there is none."""
    text = text or ''
    start, end = text.find('{'), text.rfind('}')
    if start < 0 or end <= start:
        return None
    try:
        return json.loads(text[start:end + 1])
    except ValueError:
        return None


def _dcgm_results(doc):
    """(test name, gpu id or None, status, messages) for every result, DCGM 3.x and 4.x layouts alike.

    DCGM 3.x: {"DCGM GPU Diagnostic": {"test_categories": [{"category", "tests": [{"name", "results":
    [{"gpu_ids"|"gpu_id", "status", "warnings", "info"}]}]}]}} (the layout documented in DCGM's JsonOutput.h);
    4.x moves "tests" up and names entities ("entity_id"). Any list of dicts with a "status" under a test with a
    "name" is read.
    """
    found = []
    stack = [doc]
    while stack:
        node = stack.pop(0)
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, dict):
            continue
        results = node.get('results')
        if isinstance(node.get('name'), str) and isinstance(results, list):
            for result in results:
                if not isinstance(result, dict) or not isinstance(result.get('status'), str):
                    continue
                gpu = result.get('gpu_ids', result.get('gpu_id', result.get('entity_id')))
                messages = []
                for key in ('warnings', 'errors'):
                    for item in result.get(key) or []:
                        if isinstance(item, dict):
                            messages.append(str(item.get('warning') or item.get('error') or json.dumps(item)))
                        else:
                            messages.append(str(item))
                found.append((node['name'], gpu, result['status'], messages))
            continue
        stack.extend(node.values())
    return found


def dcgm_findings(level, rc, stdout, stderr, smi_gpus):
    """Findings from ``dcgmi diag -r <level> -j``: a failed test is critical, a warning a warning."""
    doc = _json_document(stdout)
    if doc is None:
        said = ('%s %s' % (stdout or '', stderr or '')).strip()[:400]
        return [finding('dcgm_diag', WARNING, 'RERUN',
                        'dcgmi diag -r %s -j gave no JSON (rc %s): %s' % (level, rc, said), SOURCE_DCGM)]
    results = _dcgm_results(doc)
    if not results:
        return [finding('dcgm_diag', WARNING, 'RERUN',
                        'dcgmi diag -r %s -j printed JSON with no test results (rc %s)' % (level, rc), SOURCE_DCGM)]
    by_index = dict((str(g.get('index')), g) for g in smi_gpus or [])
    out = []
    for test, gpu, status, messages in results:
        status_l = status.lower()
        if status_l in ('pass', 'skip', 'skipped', 'not run', 'notrun'):
            continue
        gpu_text = str(gpu) if gpu is not None else None
        smi = by_index.get(gpu_text) if gpu_text and ',' not in gpu_text else None
        where = ' on GPU %s' % gpu_text if gpu_text else ''
        said = ': ' + '; '.join(messages) if messages else ''
        detail = 'DCGM diag level %s test %s: %s%s%s' % (level, test, status, where, said)
        severity, action = (CRITICAL, 'CONTACT_SUPPORT') if status_l == 'fail' else (WARNING, 'NONE')
        out.append(finding('dcgm_diag', severity, action, detail, SOURCE_DCGM,
                           smi.get('index') if smi else None, smi.get('pci_bus_id') if smi else None))
    return out


# ---- verdict ----------------------------------------------------------------------------------------

def verdict(findings):
    severities = set(f['severity'] for f in findings)
    if CRITICAL in severities:
        return UNHEALTHY
    if WARNING in severities:
        return DEGRADED
    return HEALTHY


def summarize(findings, smi_gpus, skip_checks=()):
    """The module's result: findings (skipped checks dropped), verdict, per-GPU verdicts, counts."""
    kept = [f for f in findings if f['check'] not in skip_checks]
    gpus = []
    for gpu in smi_gpus or []:
        mine = [f for f in kept if f['gpu'] == gpu.get('index')]
        gpus.append({'index': gpu.get('index'), 'pci_bus_id': gpu.get('pci_bus_id'), 'name': gpu.get('name'),
                     'uuid': gpu.get('uuid'), 'processes': (gpu.get('health') or {}).get('processes'),
                     'verdict': verdict(mine), 'findings': len(mine)})
    counts = dict((s, len([f for f in kept if f['severity'] == s])) for s in SEVERITIES)
    worst = [f for f in kept if f['severity'] == CRITICAL] or [f for f in kept if f['severity'] == WARNING]
    return {'verdict': verdict(kept), 'findings': kept, 'gpus': gpus, 'counts': counts,
            'reason': worst[0]['check'] if worst else ''}


# ---- quarantine, release, remediation (decisions only; the maintenance engine applies them) -------------

TAINT_KEY = QUARANTINE_TAINT
TAINT_EFFECT = 'NoSchedule'
LABEL_KEY = 'baremetal.gpu/gpu-health'
ANNOTATION_KEY = 'baremetal.gpu/gpu-health-findings'
_LABEL_VALUE_RE = re.compile(r'[^A-Za-z0-9_.-]')


def our_taint(taint):
    """True for the taint this collection sets; every other taint is someone else's and is never touched."""
    return isinstance(taint, dict) and taint.get('key') == TAINT_KEY


def taint_for(reason):
    """The quarantine taint for a node whose first critical check is ``reason`` (a valid label value)."""
    value = _LABEL_VALUE_RE.sub('_', reason or 'unhealthy')[:63].strip('_.-') or 'unhealthy'
    return {'key': TAINT_KEY, 'value': value, 'effect': TAINT_EFFECT}


def quarantine_plan(nodes, max_quarantined, release_only=False):
    """Which nodes to taint and which to release.

    ``nodes``: {name: {'verdict': healthy|degraded|unhealthy|None (not checked), 'reason': check,
    'taints': the node's spec.taints}}. Returns {'quarantine': [(name, taint)], 'release': [name],
    'keep': [name], 'stop': bool, 'message': str, 'quarantined_after': int, 'quarantined': [name]}
    ('quarantined': the nodes under our taint after the run, the ones gpu_health_drain empties of GPU pods):
      - an unhealthy node without our taint is to be quarantined with taint_for(its reason);
      - a node with our taint that is healthy now is released (only our taint is removed); degraded, unhealthy
        or not checked, it stays quarantined;
      - when the quarantined nodes would then exceed ``max_quarantined``, nothing is quarantined (stop=True) and
        the message says why: that many failures at once is more likely a monitoring fault. Releases still go
        ahead: they only return healthy nodes to service;
      - ``release_only`` (after a remediation, gpu_health_action=remediate): nothing new is quarantined, only our
        quarantine of the nodes healthy now is released;
      - a node the maintenance engine is working on (``engine``: one of its state labels says upgrading) is left to
        the engine, neither quarantined nor released (``left``): read mid-change, its health says nothing yet; it
        counts, with the quarantined ones, against ``max_quarantined`` (it is out of service all the same).
    """
    if max_quarantined < 1:
        raise ValueError('max_quarantined must be at least 1, got %s' % max_quarantined)
    quarantine, release, keep, left = [], [], [], []
    for name in sorted(nodes):
        node = nodes[name] or {}
        ours = any(our_taint(t) for t in node.get('taints') or [])
        state = node.get('verdict')
        if node.get('engine'):
            left.append(name)
        elif ours:
            (release if state == HEALTHY else keep).append(name)
        elif state == UNHEALTHY and not release_only:
            quarantine.append((name, taint_for(node.get('reason'))))
    after = len(keep) + len(quarantine) + len(left)
    stop = bool(quarantine) and after > max_quarantined
    message = ''
    if stop:
        message = ('%d node(s) unhealthy now (%s) and %d already quarantined%s: %d would be quarantined, above '
                   'gpu_health_max_quarantined=%d. Nothing was quarantined: that many GPU failures at once is more '
                   'likely a monitoring or driver fault; check the report, then quarantine by hand or raise the '
                   'limit.' % (len(quarantine), ', '.join(n for n, _t in quarantine), len(keep),
                               (', and %d out of service for maintenance (%s)' % (len(left), ', '.join(left)))
                               if left else '', after, max_quarantined))
        quarantine = []
    return {'quarantine': quarantine, 'release': release, 'keep': keep, 'left': left, 'stop': stop, 'message': message,
            'quarantined_after': len(keep) + len(quarantine),
            'quarantined': sorted(keep + [name for name, _taint in quarantine])}


def quarantine_patches(cluster_nodes, results, max_quarantined, run_id='', now='', release_only=False):
    """The Node changes of a quarantine run, from the cluster's Nodes and this run's verdicts.

    ``cluster_nodes``: the Node objects (k8s_info resources); ``results``: {Node name: the gpu_health result of the
    inventory host that maps to it (verdict, reason, findings)}; Nodes without a result were not checked this run.
    Returns quarantine_plan()'s dict plus ``patches``: [{'name', 'action': quarantine|release, 'patch'}], each
    ``patch`` a JSON merge patch (RFC 7386: lists are replaced, null deletes) of the Node that carries the
    resourceVersion read, so a Node changed since is refused with 409 Conflict instead of being overwritten, and
    the whole list of taints with every other taint kept as it was:
      - quarantine: our taint (taint_for(reason)) added, label ``baremetal.gpu/gpu-health=quarantined``, the
        annotation ``baremetal.gpu/gpu-health-findings`` with the critical findings (JSON), and the run and time;
      - release: our taint, label and annotation removed, nothing else.
    """
    by_name = {}
    for node in cluster_nodes or []:
        name = ((node or {}).get('metadata') or {}).get('name')
        if name:
            by_name[name] = node
    states = {}
    for name, node in by_name.items():
        result = (results or {}).get(name) or {}
        states[name] = {'verdict': result.get('verdict'), 'reason': result.get('reason') or '',
                        'taints': (node.get('spec') or {}).get('taints') or [], 'engine': engine_working_on(node)}
    plan = quarantine_plan(states, max_quarantined, release_only)
    patches = []
    for name, taint in plan['quarantine']:
        node = by_name[name]
        critical = [dict((k, f.get(k)) for k in ('gpu', 'pci_bus_id', 'check', 'action', 'detail'))
                    for f in (results[name].get('findings') or []) if f.get('severity') == CRITICAL]
        patches.append({'name': name, 'action': 'quarantine', 'patch': {
            'metadata': {'resourceVersion': node['metadata'].get('resourceVersion'),
                         'labels': {LABEL_KEY: 'quarantined'},
                         'annotations': {ANNOTATION_KEY: json.dumps(critical, sort_keys=True),
                                         RUN_ANNOTATION: run_id, TIME_ANNOTATION: now}},
            'spec': {'taints': list(states[name]['taints']) + [taint]}}})
    for name in plan['release']:
        node = by_name[name]
        kept = [t for t in states[name]['taints'] if not our_taint(t)]
        patches.append({'name': name, 'action': 'release', 'patch': {
            # The run and time annotations are left as they are: the engine's record of its last change of the Node.
            'metadata': {'resourceVersion': node['metadata'].get('resourceVersion'),
                         'labels': {LABEL_KEY: None},
                         'annotations': {ANNOTATION_KEY: None}},
            'spec': {'taints': kept or None}}})
    plan['patches'] = patches
    return plan


def remediation_plan(result):
    """What to do on one node from its gpu_health result: {'step': none|reset_gpu|reboot, 'gpus': [index],
    'commands': [[...]], 'manual': [finding], 'reasons': [str]}.

    Each critical finding's action has a remediation in ACTION_POLICY: ``reset_gpu`` resets that GPU
    (``nvidia-smi -r -i <index>``) when no process holds it, and needs a reboot when a process does, when the
    process count is unknown, or when the finding names no GPU nvidia-smi lists; ``reboot`` reboots. Findings
    without a remediation (CONTACT_SUPPORT, NVLink workflows, driver, fabric manager) are listed in ``manual``.
    One reboot covers everything, so a reboot replaces any GPU reset.
    """
    processes = dict((g.get('index'), g.get('processes')) for g in result.get('gpus') or [])
    resets, reasons, manual = [], [], []
    reboot = False
    for item in result.get('findings') or []:
        if item.get('severity') != CRITICAL:
            continue
        remedy = ACTION_POLICY.get(item.get('action'), (CRITICAL, None))[1]
        where = 'GPU %s' % item['gpu'] if item.get('gpu') is not None else (item.get('pci_bus_id') or 'node')
        if remedy is None:
            manual.append(item)
        elif remedy == 'reboot':
            reboot = True
            reasons.append('%s: %s (%s) needs a reboot' % (where, item['check'], item['action']))
        elif item.get('gpu') is None or item['gpu'] not in processes:
            reboot = True
            reasons.append('%s: %s (%s) names no GPU nvidia-smi lists; a reboot resets them all'
                           % (where, item['check'], item['action']))
        elif processes[item['gpu']] != 0:
            reboot = True
            reasons.append('%s: %s (%s) needs a GPU reset, but %s process(es) hold the GPU; a reboot instead'
                           % (where, item['check'], item['action'],
                              'an unknown number of' if processes[item['gpu']] is None else processes[item['gpu']]))
        else:
            if item['gpu'] not in resets:
                resets.append(item['gpu'])
            reasons.append('%s: %s (%s) needs a GPU reset; no process holds the GPU'
                           % (where, item['check'], item['action']))
    if reboot:
        return {'step': 'reboot', 'gpus': [], 'commands': [], 'manual': manual, 'reasons': reasons}
    if resets:
        return {'step': 'reset_gpu', 'gpus': sorted(resets),
                'commands': [['nvidia-smi', '-r', '-i', str(i)] for i in sorted(resets)], 'manual': manual,
                'reasons': reasons}
    return {'step': 'none', 'gpus': [], 'commands': [], 'manual': manual, 'reasons': reasons}


# coreutils' timeout exits 124 when it stopped the command with TERM, 128+9 when it had to KILL it.
TIMEOUT_EXITS = (124, 137)


def reset_failures(results, timeout):
    """The GPU resets of a remediation that did not succeed, one line each ('GPU <index>: ...'), from the registered
    loop results of ``timeout <timeout> nvidia-smi -r -i <index>`` (skipped results are ignored)."""
    failures = []
    for result in results or []:
        if result.get('skipped') or result.get('rc') == 0:
            continue
        rc = result.get('rc')
        if rc in TIMEOUT_EXITS:
            failures.append('GPU %s: the reset did not finish within gpu_health_reset_timeout (%s s) and was killed'
                            % (result.get('item'), timeout))
        else:
            said = ' '.join(str(result.get('stderr') or result.get('stdout') or result.get('msg') or '').split())
            failures.append('GPU %s: the reset failed (nvidia-smi -r exited %s%s)'
                            % (result.get('item'), rc, (': ' + said[:200]) if said else ''))
    return failures
