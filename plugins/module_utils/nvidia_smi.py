# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure helpers for ``nvidia-smi -q -x``: parse the XML, classify failures, check expectations.

Nothing here runs a command or touches Ansible: the module ``baremetal.gpu.nvidia_smi`` passes
the command's rc, stdout and stderr in and gets plain data (or an exception) back.

Output is taken as bytes. Bytes that are not UTF-8 (a corrupted or localized ``nvidia-smi``)
never crash anything: the XML is parsed with them replaced by U+FFFD and ``utf8_problem`` says
where they were, and messages show them as ``\\xNN`` escapes (``to_text``).

The parser tolerates every layout seen in real captures (tests/fixtures/nvidia-smi-xml):
DTD v9 to v13 or no DOCTYPE at all, ``N/A``, ``Not Supported`` and
``Requested functionality has been deprecated`` values, padded values, trimmed files
(fewer <gpu> elements than attached_gpus, fields missing), MIG shown as the text ``None``
or as <mig_device> elements, GPUs listed out of minor-number order, and vGPU guests.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
import xml.etree.ElementTree as ET

from ansible.module_utils.parsing.convert_bool import boolean

# Values nvidia-smi prints when it has no value; they are returned as None.
UNAVAILABLE_VALUES = frozenset([
    '',
    'n/a',
    '[n/a]',
    'not supported',
    '[not supported]',
    'not available',
    'unknown error',
    '[unknown error]',
    'requested functionality has been deprecated',
])

# Where nvidia-smi is looked for after PATH (the GPU Operator's driver container included).
SMI_SEARCH_DIRS = ['/usr/bin', '/usr/local/bin', '/usr/local/nvidia/bin', '/run/nvidia/driver/usr/bin',
                   '/opt/nvidia/bin']

# How many bytes of unparseable output an error message quotes.
QUOTE_BYTES = 200

STATUS_OK = 'ok'
STATUS_NO_DRIVER = 'no_driver_communication'
STATUS_NVML_INIT = 'nvml_init_failed'
STATUS_NO_DEVICES = 'no_devices'

# exit codes documented in nvidia-smi(1) "RETURN VALUE" and seen on real machines
RC_NO_DEVICES = 6
RC_DRIVER_NOT_LOADED = 9
RC_OTHER = 255

NO_DRIVER_TEXT = "couldn't communicate with the nvidia driver"
NVML_INIT_TEXT = 'failed to initialize nvml'
NO_DEVICES_TEXT = 'no devices were found'

NO_DRIVER_CAUSES = (
    'Likely causes: the nvidia kernel module is not loaded (check `lsmod | grep nvidia`, '
    '`modprobe nvidia`); the nouveau driver is loaded and holds the GPU (blacklist nouveau and '
    'rebuild the initramfs); a reboot is pending after the driver install or a kernel upgrade; '
    'Secure Boot refused the unsigned nvidia module (check `mokutil --sb-state` and '
    '`dmesg | grep -i -e nvidia -e "key was rejected"`); or this machine has no NVIDIA GPU.'
)
NVML_INIT_CAUSES = (
    'NVML could not initialize. "Unknown Error" is seen when /dev/nvidiactl exists but no nvidia '
    'kernel module is loaded (driver packages installed, module not loaded, or no GPU); '
    '"Driver/library version mismatch" means the loaded module and the user-space libraries '
    'differ (reboot, or reload the module, after a driver upgrade).'
)
NO_DEVICES_CAUSES = (
    'The driver answered but lists no GPU: no NVIDIA GPU on the PCI bus, the GPU fell off the bus '
    '(check dmesg for Xid 79), or the device nodes are not visible (container without /dev/nvidia*).'
)


class NvidiaSmiError(Exception):
    """A failure with a status the module can report; ``status`` is one of the STATUS_* values."""

    def __init__(self, message, status=None):
        super(NvidiaSmiError, self).__init__(message)
        self.message = message
        self.status = status


class NvidiaSmiParseError(NvidiaSmiError):
    """nvidia-smi printed something that is not an nvidia_smi_log XML document."""


def clean(value):
    """Strip padding; return None for the values nvidia-smi prints when it has none."""
    if value is None:
        return None
    value = value.strip()
    if value.lower() in UNAVAILABLE_VALUES:
        return None
    return value


def _text(elem, path):
    if elem is None:
        return None
    found = elem.find(path)
    if found is None:
        return None
    return clean(found.text)


def parse_int(value):
    """'4' -> 4; None or anything not an integer -> None."""
    value = clean(value)
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        return None


_MIB_RE = re.compile(r'^\s*(\d+)\s*(MiB)?\s*$', re.IGNORECASE)


def parse_mib(value):
    """'81920 MiB' -> 81920; None, 'N/A' or an unknown unit -> None."""
    value = clean(value)
    if value is None:
        return None
    match = _MIB_RE.match(value)
    if not match:
        return None
    return int(match.group(1))


def driver_branch(version):
    """'535.54.03' -> '535' (the major version, which is the branch); None -> None."""
    if not version:
        return None
    return version.split('.', 1)[0]


def to_bytes(data):
    """``data`` as bytes; a str holding surrogate escapes (undecodable bytes) gets its bytes back."""
    if data is None:
        return b''
    if isinstance(data, bytes):
        return data
    return data.encode('utf-8', 'surrogateescape')


def to_text(data):
    """``data`` as text that is valid UTF-8: bytes that are not UTF-8 become ``\\xNN`` escapes."""
    return to_bytes(data).decode('utf-8', 'backslashreplace')


def utf8_problem(data):
    """None when ``data`` is valid UTF-8, else a sentence saying what was found and where."""
    raw = to_bytes(data)
    try:
        raw.decode('utf-8')
        return None
    except UnicodeDecodeError as exc:
        first = exc.start
    bad = sum(1 for char in raw.decode('utf-8', 'surrogateescape') if u'\udc80' <= char <= u'\udcff')
    return ('%d byte(s) that are not UTF-8, the first at offset %d: %s in %s'
            % (bad, first, to_text(raw[first:first + 1]), quote(raw[max(first - 20, 0):first + 20])))


_ESCAPED_SURROGATE = re.compile(r'\\udc([89a-f][0-9a-f])')


def quote(data):
    """``data`` as a Python-style quoted string; bytes that are not UTF-8 appear as \\xNN."""
    return _ESCAPED_SURROGATE.sub(r'\\x\1', repr(to_bytes(data).decode('utf-8', 'surrogateescape')))


def quote_head(data, limit=QUOTE_BYTES):
    """The first ``limit`` bytes of ``data``, quoted (see ``quote``), for error messages."""
    return quote(to_bytes(data)[:limit])


# Large sections the parser never reads; on real machines <supported_clocks> alone is about 90 %
# of the document (about 110 kB per GPU). They are cut out before parsing, which keeps an 8-GPU
# document well inside the parse budget (benchmarks/bench_nvidia_smi_parse.py).
UNUSED_SECTIONS = (b'supported_clocks', b'processes', b'accounted_processes')


def drop_unused_sections(raw, keep=()):
    """Remove <tag>...</tag> for each UNUSED_SECTIONS tag not in ``keep``; anything unexpected is left as is."""
    for tag in UNUSED_SECTIONS:
        if tag in keep:
            continue
        opening, closing = b'<' + tag + b'>', b'</' + tag + b'>'
        if opening not in raw:
            continue
        parts = []
        pos = 0
        while True:
            start = raw.find(opening, pos)
            if start < 0:
                break
            end = raw.find(closing, start)
            if end < 0:
                break
            parts.append(raw[pos:start])
            pos = end + len(closing)
        parts.append(raw[pos:])
        raw = b''.join(parts)
    return raw


def _parse_gpu(index, gpu):
    mig_devices = gpu.find('mig_devices')
    mig_count = 0
    if mig_devices is not None:
        mig_count = len(mig_devices.findall('mig_device'))
    pci_bus_id = _text(gpu, 'pci/pci_bus_id') or clean(gpu.get('id'))
    return {
        'index': index,
        'name': _text(gpu, 'product_name'),
        'uuid': _text(gpu, 'uuid'),
        'pci_bus_id': pci_bus_id,
        'pci_device_id': _text(gpu, 'pci/pci_device_id'),
        'minor_number': parse_int(_text(gpu, 'minor_number')),
        'memory_total_mib': parse_mib(_text(gpu, 'fb_memory_usage/total')),
        'persistence_mode': _text(gpu, 'persistence_mode'),
        'mig_mode': _text(gpu, 'mig_mode/current_mig'),
        'mig_mode_pending': _text(gpu, 'mig_mode/pending_mig'),
        'ecc_mode': _text(gpu, 'ecc_mode/current_ecc'),
        'compute_mode': _text(gpu, 'compute_mode'),
        'virtualization_mode': _text(gpu, 'gpu_virtualization_mode/virtualization_mode'),
        'mig_devices': mig_count,
        'architecture': _text(gpu, 'product_architecture'),
        'fabric_state': _text(gpu, 'fabric/state'),
        'fabric_status': _text(gpu, 'fabric/status'),
        'fabric_clique_id': _text(gpu, 'fabric/cliqueId'),
        'fabric_cluster_uuid': _text(gpu, 'fabric/clusterUuid'),
    }


def yes_no(value):
    """'Yes' -> True, 'No' -> False, anything else (N/A, missing) -> None."""
    value = clean(value)
    if value is None:
        return None
    value = value.lower()
    if value == 'yes':
        return True
    if value == 'no':
        return False
    return None


_LEADING_INT_RE = re.compile(r'^\s*(\d+)')


def parse_leading_int(value):
    """'16x' -> 16, '4' -> 4, '2560 bank(s)' -> 2560; None or no leading digits -> None."""
    value = clean(value)
    if value is None:
        return None
    match = _LEADING_INT_RE.match(value)
    return int(match.group(1)) if match else None


def _sum_known(values):
    """The sum of the values that are integers; None when none is."""
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _uncorrectable(ecc, scope):
    """Uncorrectable ECC errors of one scope (volatile or aggregate), whatever the DTD version names them.

    DTD v12/v13: dram_uncorrectable + sram_uncorrectable_parity + sram_uncorrectable_secded (or
    sram_uncorrectable); older DTDs: double_bit/total. None when nothing is reported (GeForce: N/A).
    """
    if ecc is None:
        return None
    node = ecc.find(scope)
    if node is None:
        return None
    newer = [parse_int(_text(node, tag)) for tag in
             ('dram_uncorrectable', 'sram_uncorrectable', 'sram_uncorrectable_parity', 'sram_uncorrectable_secded')]
    total = _sum_known(newer)
    if total is not None:
        return total
    return parse_int(_text(node, 'double_bit/total'))


def _event_reasons(gpu):
    """{'hw_slowdown': True, ...} from <clocks_event_reasons> (DTD v12+) or <clocks_throttle_reasons>."""
    reasons = {}
    for section in ('clocks_event_reasons', 'clocks_throttle_reasons'):
        node = gpu.find(section)
        if node is None:
            continue
        for child in node:
            name = child.tag.split('_reason_', 1)[-1]
            value = clean(child.text)
            if value is None:
                continue
            reasons[name] = value.lower() == 'active'
    return reasons


def _processes(gpu):
    """Number of <process_info> entries, or None when <processes> is missing or N/A."""
    node = gpu.find('processes')
    if node is None:
        return None
    found = node.findall('process_info')
    if not found and clean(node.text) is None and (node.text or '').strip():
        return None
    return len(found)


def _parse_health(gpu):
    """The fields a health check reads from one <gpu> element; every value may be None (N/A)."""
    ecc = gpu.find('ecc_errors')
    return {
        'ecc_volatile_uncorrectable': _uncorrectable(ecc, 'volatile'),
        'ecc_aggregate_uncorrectable': _uncorrectable(ecc, 'aggregate'),
        'sram_threshold_exceeded': yes_no(_text(gpu, 'ecc_errors/aggregate/sram_threshold_exceeded')),
        'unrepairable_memory': yes_no(_text(gpu, 'ecc_errors/unrepairable_memory')),
        'retired_pages_sbe': parse_int(_text(gpu, 'retired_pages/multiple_single_bit_retirement/retired_count')),
        'retired_pages_dbe': parse_int(_text(gpu, 'retired_pages/double_bit_retirement/retired_count')),
        'retired_pages_pending': _any_true(yes_no(_text(gpu, 'retired_pages/pending_retirement')),
                                           yes_no(_text(gpu, 'retired_pages/pending_blacklist'))),
        'remapped_rows_correctable': parse_int(_text(gpu, 'remapped_rows/remapped_row_corr')),
        'remapped_rows_uncorrectable': parse_int(_text(gpu, 'remapped_rows/remapped_row_unc')),
        'remapped_rows_pending': yes_no(_text(gpu, 'remapped_rows/remapped_row_pending')),
        'remapped_rows_failure': yes_no(_text(gpu, 'remapped_rows/remapped_row_failure')),
        'clocks_event_reasons': _event_reasons(gpu),
        'performance_state': _text(gpu, 'performance_state'),
        'pcie_gen_max': parse_leading_int(_text(gpu, 'pci/pci_gpu_link_info/pcie_gen/max_link_gen')),
        'pcie_gen_current': parse_leading_int(_text(gpu, 'pci/pci_gpu_link_info/pcie_gen/current_link_gen')),
        'pcie_width_max': parse_leading_int(_text(gpu, 'pci/pci_gpu_link_info/link_widths/max_link_width')),
        'pcie_width_current': parse_leading_int(_text(gpu, 'pci/pci_gpu_link_info/link_widths/current_link_width')),
        'pcie_replay_counter': parse_int(_text(gpu, 'pci/replay_counter')),
        'fabric_state': _text(gpu, 'fabric/state'),
        'fabric_status': _text(gpu, 'fabric/status'),
        'processes': _processes(gpu),
    }


def _any_true(*values):
    known = [v for v in values if v is not None]
    if not known:
        return None
    return any(known)


def parse_nvidia_smi_xml(data, health=False):
    """Parse the output of ``nvidia-smi -q -x`` (bytes or str) into a plain dict.

    Returns ``driver_version``, ``driver_branch``, ``cuda_version``, ``attached_gpus`` (as printed,
    or None), ``gpu_count`` (the number of <gpu> elements), ``dtd_version`` and ``gpus``: one dict
    per <gpu> element in document order, ``index`` being that position (nvidia-smi's own index).
    With ``health=True`` each GPU also has ``health``: the ECC, page retirement, row remapping,
    clock event, PCIe link, fabric and process fields (``_parse_health``), and <processes> is read.
    Raises NvidiaSmiParseError, quoting the first bytes, when ``data`` is not such a document.
    """
    raw = to_bytes(data)
    if not raw.strip():
        raise NvidiaSmiParseError('nvidia-smi -q -x printed nothing (empty output)')
    keep = (b'processes',) if health else ()
    try:
        root = ET.fromstring(drop_unused_sections(raw, keep))
    except ET.ParseError as exc:
        problem = utf8_problem(raw)
        if problem is None:
            raise NvidiaSmiParseError(
                'cannot parse nvidia-smi -q -x output as XML (%s); it starts with: %s'
                % (exc, quote_head(raw)))
        # Not UTF-8 (a corrupted or localized nvidia-smi): parse with the bad bytes replaced.
        try:
            root = ET.fromstring(drop_unused_sections(raw.decode('utf-8', 'replace').encode('utf-8'), keep))
        except ET.ParseError as exc2:
            raise NvidiaSmiParseError(
                'cannot parse nvidia-smi -q -x output as XML (%s); it has %s; it starts with: %s'
                % (exc2, problem, quote_head(raw)))
    if root.tag != 'nvidia_smi_log':
        raise NvidiaSmiParseError(
            'nvidia-smi -q -x output has root element <%s>, expected <nvidia_smi_log>; it starts with: %s'
            % (root.tag, quote_head(raw)))
    dtd = re.search(br'nvsmi_device_v(\d+)\.dtd', raw[:512])
    version = _text(root, 'driver_version')
    gpus = []
    for i, gpu in enumerate(root.findall('gpu')):
        parsed = _parse_gpu(i, gpu)
        if health:
            parsed['health'] = _parse_health(gpu)
        gpus.append(parsed)
    return {
        'driver_version': version,
        'driver_branch': driver_branch(version),
        'cuda_version': _text(root, 'cuda_version'),
        'attached_gpus': parse_int(_text(root, 'attached_gpus')),
        'gpu_count': len(gpus),
        'dtd_version': int(dtd.group(1)) if dtd else None,
        'gpus': gpus,
    }


MIG_STRATEGIES = ('none', 'single', 'mixed')


def device_plugin_gpus(gpus):
    """How many ``nvidia.com/gpu`` the NVIDIA device plugin advertises for these GPUs, per MIG strategy.

    ``gpus`` are the parsed GPUs (``mig_mode``, ``mig_devices``). The counts are before time-slicing
    replicas. The rules are the device plugin's (internal/rm/device_map.go):
      - ``none``: every GPU, MIG or not;
      - ``single``: every MIG device when every GPU has MIG on, every GPU when none has; None when
        MIG is on for some GPUs only ("all devices on the node must be configured with the same
        migEnabled value") or a GPU has MIG on without MIG devices (the plugin refuses the node);
      - ``mixed``: the GPUs with MIG off (MIG devices are advertised as ``nvidia.com/mig-<profile>``);
        None when a GPU has MIG on without MIG devices.
    """
    mig_on = [g for g in gpus if (g.get('mig_mode') or '').lower() == 'enabled']
    broken = [g for g in mig_on if not g.get('mig_devices')]
    single = None
    if not broken:
        if not mig_on:
            single = len(gpus)
        elif len(mig_on) == len(gpus):
            single = sum(g['mig_devices'] for g in mig_on)
    return {
        'none': len(gpus),
        'single': single,
        'mixed': None if broken else len(gpus) - len(mig_on),
    }


def count_warnings(facts):
    """Warnings about the parsed facts (attached_gpus disagreeing with the listed GPUs)."""
    warnings = []
    attached = facts.get('attached_gpus')
    if attached is not None and attached != facts['gpu_count']:
        warnings.append(
            'nvidia-smi reports attached_gpus=%d but lists %d <gpu> element(s); '
            'gpu_count is the number listed' % (attached, facts['gpu_count']))
    return warnings


def _cmd_text(cmd):
    if isinstance(cmd, (list, tuple)):
        return ' '.join(cmd)
    return cmd


def describe_run(cmd, rc, stdout, stderr):
    """'command: ... rc: ... stdout: ... stderr: ...' for failure messages (bytes or text)."""
    return 'command: %s; rc: %s; stdout: %s; stderr: %s' % (
        _cmd_text(cmd), rc, to_text(stdout).strip()[:QUOTE_BYTES * 5] or '(empty)',
        to_text(stderr).strip()[:QUOTE_BYTES * 5] or '(empty)')


def classify_failure(cmd, rc, stdout, stderr):
    """Turn a failed nvidia-smi run into an NvidiaSmiError with a status and a clear message.

    Only called when rc != 0, or when rc == 0 but the output names a known failure.
    """
    stdout, stderr = to_text(stdout), to_text(stderr)
    both = ('%s\n%s' % (stdout, stderr)).lower()
    where = describe_run(cmd, rc, stdout, stderr)
    if NO_DRIVER_TEXT in both or rc == RC_DRIVER_NOT_LOADED:
        return NvidiaSmiError(
            "nvidia-smi couldn't communicate with the NVIDIA driver (rc %s). %s %s"
            % (rc, NO_DRIVER_CAUSES, where), STATUS_NO_DRIVER)
    if NVML_INIT_TEXT in both:
        line = [ln.strip() for ln in ('%s\n%s' % (stdout, stderr)).splitlines()
                if NVML_INIT_TEXT in ln.lower()][0]
        return NvidiaSmiError(
            'nvidia-smi: %s (rc %s). %s %s' % (line, rc, NVML_INIT_CAUSES, where), STATUS_NVML_INIT)
    if NO_DEVICES_TEXT in both:
        return NvidiaSmiError(
            'nvidia-smi: No devices were found (rc %s). %s %s' % (rc, NO_DEVICES_CAUSES, where),
            STATUS_NO_DEVICES)
    return NvidiaSmiError('nvidia-smi failed (rc %s). %s' % (rc, where))


def interpret_run(cmd, rc, stdout, stderr, health=False):
    """Parse a finished ``nvidia-smi -q -x`` run, or raise NvidiaSmiError explaining the failure.

    ``health`` is passed to ``parse_nvidia_smi_xml``.
    """
    if rc != 0:
        raise classify_failure(cmd, rc, stdout, stderr)
    head = to_text(stdout).lstrip()[:300].lower()
    if not head.startswith('<') and (NO_DRIVER_TEXT in head or NVML_INIT_TEXT in head
                                     or NO_DEVICES_TEXT in head):
        raise classify_failure(cmd, rc, stdout, stderr)
    try:
        return parse_nvidia_smi_xml(stdout, health=health)
    except NvidiaSmiParseError as exc:
        raise NvidiaSmiParseError('%s. %s' % (exc.message, describe_run(cmd, rc, '', stderr)))


def _matches_version(expected, found):
    return found == expected or found.startswith(expected + '.')


# The expectations check_expectations knows, with the type the module's options give them.
EXPECTATION_TYPES = (('driver_branch', 'str'), ('driver_version', 'str'), ('gpu_count', 'int'),
                     ('min_gpu_count', 'int'), ('product', 'str'), ('persistence_mode', 'str'), ('mig_mode', 'str'),
                     ('fabric_complete', 'bool'))


def result_mismatches(result, expect):
    """check_expectations on a baremetal.gpu.nvidia_smi result read earlier in the run (the fact ``nvidia_smi``
    the nvidia_driver role publishes), as the module checks them: only when the result's status is ``ok`` (a
    no-GPU state has no GPUs to compare; the caller reports it). An expectation that is None or '' is not
    checked; the others take the module option's type (``'580'`` and ``580`` are the same branch)."""
    if not isinstance(result, dict):
        raise TypeError('the nvidia_smi result must be a dict, got %s' % type(result).__name__)
    types = dict(EXPECTATION_TYPES)
    unknown = sorted(set(expect) - set(types))
    if unknown:
        raise ValueError('unknown expectation(s) %s; known: %s'
                         % (', '.join(unknown), ', '.join(key for key, kind in EXPECTATION_TYPES)))
    if result.get('status') != STATUS_OK:
        return []
    typed = {}
    for key, value in expect.items():
        if value is None or value == '':
            continue
        kind = types[key]
        if kind == 'int':
            typed[key] = int(value)
        elif kind == 'bool':
            typed[key] = boolean(value, strict=True)
        else:
            typed[key] = str(value)
    facts = dict(result)
    facts.setdefault('gpus', [])
    facts['gpu_count'] = int(facts.get('gpu_count') or 0)
    return check_expectations(facts, typed)


def check_expectations(facts, expect):
    """Compare parsed facts with the expectations; return every mismatch as a string.

    ``expect`` keys (None means not checked): driver_branch, driver_version (exact, or a prefix
    ending at a dot: '535.54' matches '535.54.03'), gpu_count, min_gpu_count, product (a regular
    expression searched in each GPU's name), persistence_mode and mig_mode ('Enabled'/'Disabled',
    compared with every GPU's current mode), fabric_complete (True: every Hopper-or-newer GPU's NVLink
    fabric is Completed with status Success, see fabric_problems).
    """
    problems = []
    want = expect.get('driver_branch')
    if want is not None and str(want) != str(facts.get('driver_branch')):
        problems.append('driver_branch: expected %s, found %s' % (want, facts.get('driver_branch')))
    want = expect.get('driver_version')
    if want is not None:
        found = facts.get('driver_version')
        if found is None or not _matches_version(str(want), found):
            problems.append('driver_version: expected %s (exact or prefix), found %s' % (want, found))
    want = expect.get('gpu_count')
    if want is not None and want != facts['gpu_count']:
        problems.append('gpu_count: expected %s, found %s' % (want, facts['gpu_count']))
    want = expect.get('min_gpu_count')
    if want is not None and facts['gpu_count'] < want:
        problems.append('min_gpu_count: expected at least %s, found %s' % (want, facts['gpu_count']))
    want = expect.get('product')
    if want is not None:
        pattern = re.compile(want)
        for gpu in facts['gpus']:
            if not pattern.search(gpu.get('name') or ''):
                problems.append('GPU %s (%s) product: expected to match %r, found %r'
                                % (gpu['index'], gpu['pci_bus_id'], want, gpu.get('name')))
    for key in ('persistence_mode', 'mig_mode'):
        want = expect.get(key)
        if want is None:
            continue
        for gpu in facts['gpus']:
            found = gpu.get(key)
            if (found or '').lower() != want.lower():
                problems.append('GPU %s (%s) %s: expected %s, found %s'
                                % (gpu['index'], gpu['pci_bus_id'], key, want,
                                   found if found is not None else 'N/A'))
    if expect.get('fabric_complete'):
        problems.extend(fabric_problems(facts))
    return problems


# ---- NVLink fabric (NVSwitch systems) -----------------------------------------------------------
#
# nvidia-smi -q -x reports per GPU a <fabric> element (DTD v12 and later): <state> and <status>, N/A where
# the GPU has no fabric to join (PCIe GPUs, and every GPU before Hopper: the real captures in
# tests/fixtures/nvidia-smi-xml, A100 SXM4 included, all say N/A). On an NVSwitch system with Hopper or
# newer GPUs the state goes "Not Started" / "In Progress" / "Completed" and the status reads "Success" once
# NVIDIA Fabric Manager has configured the switches (nvidia-smi -q on an HGX: "Fabric / State: Completed /
# Status: Success"); CUDA fails with error 802 "system not yet initialized" until then.
FABRIC_ARCHITECTURES = ('hopper', 'blackwell')
FABRIC_DONE_STATE = 'completed'
FABRIC_DONE_STATUS = 'success'


def fabric_gpus(facts):
    """The parsed GPUs that take part in an NVLink fabric (Hopper or newer by <product_architecture>)."""
    out = []
    for gpu in facts.get('gpus') or []:
        arch = (gpu.get('architecture') or '').lower()
        if any(arch.startswith(a) for a in FABRIC_ARCHITECTURES):
            out.append(gpu)
    return out


def fabric_problems(facts):
    """Every Hopper-or-newer GPU whose fabric is not "Completed" with status "Success", as sentences.

    Call it only for an NVSwitch system: elsewhere N/A is the right answer. Pre-Hopper GPUs (A100 HGX)
    report N/A on every system and are not judged here.
    """
    problems = []
    for gpu in fabric_gpus(facts):
        state, status = gpu.get('fabric_state'), gpu.get('fabric_status')
        if (state or '').lower() != FABRIC_DONE_STATE or (status or '').lower() != FABRIC_DONE_STATUS:
            problems.append('GPU %s (%s, %s): fabric state %s, status %s (expected Completed, Success: is '
                            'nvidia-fabricmanager running at the driver\'s version?)'
                            % (gpu['index'], gpu.get('pci_bus_id'), gpu.get('name'), state or 'N/A', status or 'N/A'))
    return problems


# The device nodes a CUDA container needs (what the NVIDIA Container Toolkit mounts into it): the control device, the
# unified-memory pair, which exist only once nvidia-uvm is loaded and its nodes created (nvidia-modprobe -u -c=0, or
# udev), and /dev/nvidia<minor> per GPU. Missing nodes make a GPU pod fail after a run that said the GPU is there
# (NVIDIA/gpu-operator#2685: a validator passed while /dev/nvidia-uvm* were missing).
CONTROL_DEVICE_NODES = ('/dev/nvidiactl', '/dev/nvidia-uvm', '/dev/nvidia-uvm-tools')


def device_nodes(result, present):
    """What a node's /dev lacks for a CUDA container, from a nvidia_smi result and the paths /dev holds.

    Returns {checked, expected, missing, message}. Checked only when nvidia-smi saw GPUs (status ok): without a
    GPU the per-GPU nodes cannot be named and nothing is loaded to create the others; the message says what was
    not checked. A GPU without a minor number (a vGPU guest may not report one) is named in the message, not
    guessed."""
    if not isinstance(result, dict):
        raise TypeError('the nvidia_smi result must be a dict, got %s' % type(result).__name__)
    present = set(str(path) for path in (present or []))
    gpus = result.get('gpus') or []
    if result.get('status') != STATUS_OK or not gpus:
        return {'checked': False, 'expected': list(CONTROL_DEVICE_NODES), 'missing': [],
                'message': 'not checked: no GPU visible (nvidia-smi: %s), so the device nodes a CUDA container needs '
                           '(%s and /dev/nvidia<minor> per GPU) could not be checked'
                           % (result.get('status') or 'not run', ', '.join(CONTROL_DEVICE_NODES))}
    expected, unnamed = list(CONTROL_DEVICE_NODES), []
    for gpu in gpus:
        minor = gpu.get('minor_number')
        if minor is None:
            unnamed.append(str(gpu.get('index')))
        else:
            expected.append('/dev/nvidia%d' % int(minor))
    missing = [path for path in expected if path not in present]
    notes = []
    if missing:
        notes.append('missing: %s' % ', '.join(missing))
        if any(path.startswith('/dev/nvidia-uvm') for path in missing):
            notes.append('the unified-memory nodes appear once nvidia-uvm is loaded and its nodes created '
                         '(modprobe nvidia-uvm; nvidia-modprobe -u -c=0)')
    if unnamed:
        notes.append('GPU(s) %s report no minor number: their /dev/nvidia<minor> was not checked' % ', '.join(unnamed))
    message = ('%d of %d device nodes present' % (len(expected) - len(missing), len(expected))
               + ('; ' + '; '.join(notes) if notes else ''))
    return {'checked': True, 'expected': expected, 'missing': missing, 'message': message}
