# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""MIG layouts as NVIDIA's mig-parted (the nvidia-mig-manager package) reads them, and what each GPU model offers.

A layout file is mig-parted's config, format ``v1`` (api/spec/v1/spec.go of NVIDIA/mig-parted v0.15.0)::

    version: v1
    mig-configs:
      <name>:
        - devices: all | [0, 1, ...]           # required
          device-filter: "0x233010DE" | [...]   # optional: the PCI device IDs the entry applies to
          mig-enabled: true | false             # required
          mig-devices: {"1g.10gb": 7, ...}      # required when mig-enabled, empty when not

``spec_errors`` refuses what mig-parted's parser refuses (so a layout is refused before any change, not by the
node's systemd unit at boot). ``layout_errors`` checks one named layout against the GPU model of a node: every profile
must be one the model offers, no more instances of it than the model allows, and all of them must fit the model's
compute and memory slices together. MODELS is written from mig-parted's published default configs
(deployments/systemd/config-default.yaml of v0.15.0: its device filters and the models named in its comments) and
NVIDIA's MIG user guide (supported profiles per GPU); tests/unit/plugins/module_utils/test_mig.py checks that every
layout of that file applies on each model of the table it names (by device filter, or by the comment above it). A
model not in the table is refused with its device ID, never guessed.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# A MIG profile as go-nvlib parses it: [<C>c.]<G>g.<MEM>gb[+attr[,attr...]|-attr], e.g. 1g.10gb, 1c.2g.20gb,
# 1g.10gb+me, 1g.24gb+me.all, 1g.24gb-me.
PROFILE = re.compile(r'^(?:(?P<c>[1-8])c\.)?(?P<g>[1-8])g\.(?P<mem>[1-9][0-9]*)gb'
                     r'(?:[+-](?P<attrs>[a-z][a-z.]*(?:,[a-z][a-z.]*)*))?$')
DEVICE_ID = re.compile(r'^0x[0-9A-Fa-f]{8}$')


def _model(name, slices, memory_slices, gb_per_slice, profiles):
    return {'name': name, 'slices': slices, 'memory_slices': memory_slices, 'gb_per_slice': gb_per_slice,
            'profiles': dict(profiles)}


# The profiles of each model family: {profile: the most instances of it one GPU holds}.
_A100_40 = _model('A100-40GB, A800-40GB', 7, 8, 5, {
    '1g.5gb': 7, '1g.5gb+me': 1, '1g.10gb': 4, '2g.10gb': 3, '3g.20gb': 2, '4g.20gb': 1, '7g.40gb': 1})
_H100_80 = _model('H100-80GB, H800-80GB, A100-80GB, A800-80GB', 7, 8, 10, {
    '1g.10gb': 7, '1g.10gb+me': 1, '1g.20gb': 4, '2g.20gb': 3, '3g.40gb': 2, '4g.40gb': 1, '7g.80gb': 1})
_H100_NVL = _model('H100 NVL, H800 NVL', 7, 8, 12, {
    '1g.12gb': 7, '1g.12gb+me': 1, '1g.24gb': 4, '1g.24gb+me': 1, '2g.24gb': 3, '3g.47gb': 2, '4g.47gb': 1, '7g.94gb': 1})
_H100_96 = _model('H100-96GB, PG506-96GB, GH200, H20', 7, 8, 12, {
    '1g.12gb': 7, '1g.12gb+me': 1, '1g.24gb': 4, '1g.24gb+me': 1, '2g.24gb': 3, '3g.48gb': 2, '4g.48gb': 1, '7g.96gb': 1})
_H200 = _model('H200-141GB, H200 NVL', 7, 8, 18, {
    '1g.18gb': 7, '1g.18gb+me': 1, '1g.35gb': 4, '2g.35gb': 3, '3g.71gb': 2, '4g.71gb': 1, '7g.141gb': 1})
_A30 = _model('A30-24GB', 4, 4, 6, {
    '1g.6gb': 4, '1g.6gb+me': 1, '2g.12gb': 2, '2g.12gb+me': 1, '4g.24gb': 1})

# PCI device ID (as mig-parted's device-filter writes it: device, then vendor 10DE) -> model.
MODELS = {
    '0x20B010DE': _A100_40, '0x20B110DE': _A100_40, '0x20F110DE': _A100_40, '0x20F610DE': _A100_40,
    '0x233010DE': _H100_80, '0x233110DE': _H100_80, '0x232210DE': _H100_80, '0x232410DE': _H100_80,
    '0x20B210DE': _H100_80, '0x20B510DE': _H100_80, '0x20F310DE': _H100_80, '0x20F510DE': _H100_80,
    '0x232110DE': _H100_NVL, '0x233A10DE': _H100_NVL,
    '0x234210DE': _H100_96, '0x233D10DE': _H100_96, '0x20B610DE': _H100_96, '0x232910DE': _H100_96,
    '0x233510DE': _H200, '0x233B10DE': _H200,
    '0x20B710DE': _A30,
}


def device_id(pci_device_id):
    """mig-parted's form of a PCI device ID (``0x233010DE``) from nvidia-smi's ``pci_device_id`` (``0x233010DE``,
    any case; ``-q -x`` prints it without 0x), lspci's ``10de:2330`` or gpu_node_facts' ``0x2330`` (an NVIDIA GPU's);
    '' when it is none of them."""
    text = (pci_device_id or '').strip()
    match = re.match(r'^([0-9a-fA-F]{4}):([0-9a-fA-F]{4})$', text)
    if match:
        return '0x%s%s' % (match.group(2).upper(), match.group(1).upper())
    match = re.match(r'^0x([0-9a-fA-F]{4})$', text)
    if match:   # gpu_node_facts' device_id (sysfs): the device alone, of vendor 10DE
        return '0x%s10DE' % match.group(1).upper()
    if re.match(r'^[0-9a-fA-F]{8}$', text):   # nvidia-smi -q -x's <pci_device_id>: 233010DE
        return '0x' + text.upper()
    return '0x' + text[2:].upper() if DEVICE_ID.match(text) else ''


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _entry_errors(where, entry):
    if not isinstance(entry, dict):
        return ['%s: an entry is a mapping (devices, mig-enabled, mig-devices, device-filter)' % where]
    errors = ['%s: missing required field %s' % (where, key) for key in ('devices', 'mig-enabled') if key not in entry]
    errors += ['%s: unexpected field %s' % (where, key)
               for key in sorted(entry) if key not in ('devices', 'device-filter', 'mig-enabled', 'mig-devices')]
    devices = entry.get('devices', 'all')
    if devices != 'all' and not (isinstance(devices, list) and devices and all(_is_int(d) and d >= 0 for d in devices)):
        errors.append('%s: devices is "all" or a list of GPU indexes, not %r' % (where, devices))
    if 'device-filter' in entry:
        wanted = entry['device-filter']
        wanted = [wanted] if isinstance(wanted, str) else wanted
        valid = isinstance(wanted, list) and wanted and all(isinstance(w, str) and DEVICE_ID.match(w.strip())
                                                            for w in wanted)
        if not valid:
            errors.append('%s: device-filter is a PCI device ID such as 0x233010DE, or a list of them' % where)
    enabled = entry.get('mig-enabled')
    if 'mig-enabled' in entry and not isinstance(enabled, bool):
        errors.append('%s: mig-enabled is true or false, not %r' % (where, enabled))
    profiles = entry.get('mig-devices')
    if enabled is True and profiles is None:
        errors.append("%s: mig-devices is required when mig-enabled is true ({} for none)" % where)
    if profiles is not None:
        if not isinstance(profiles, dict):
            errors.append('%s: mig-devices maps each profile to a count' % where)
            return errors
        if enabled is False and profiles:
            errors.append('%s: MIG devices given while mig-enabled is false' % where)
        for name, count in sorted(profiles.items(), key=lambda kv: str(kv[0])):
            if not isinstance(name, str) or not PROFILE.match(name):
                errors.append('%s: %r is no MIG profile (such as 1g.10gb, 3g.40gb, 1g.10gb+me)' % (where, name))
            if not _is_int(count) or count < 0:
                errors.append('%s: the count of %s is a whole number of instances, not %r' % (where, name, count))
        if profiles and all(_is_int(c) and c == 0 for c in profiles.values()):
            errors.append('%s: every count in mig-devices is 0' % where)
    return errors


def spec_errors(spec):
    """What mig-parted's v1 parser refuses in ``spec`` (the parsed layout file), as messages naming the layout."""
    if not isinstance(spec, dict):
        return ['the layout file is a mapping with version and mig-configs']
    errors = []
    if spec.get('version') != 'v1':
        errors.append('version is v1 (mig-parted reads no other), not %r' % (spec.get('version'),))
    errors += ['unexpected field %s (version and mig-configs only)' % key
               for key in sorted(spec) if key not in ('version', 'mig-configs')]
    configs = spec.get('mig-configs')
    if not isinstance(configs, dict) or not configs:
        return errors + ['mig-configs needs at least one layout']
    for name in sorted(configs, key=str):
        entries = configs[name]
        if not isinstance(entries, list) or not entries:
            errors.append('mig-configs.%s needs at least one entry' % name)
            continue
        for index, entry in enumerate(entries):
            errors += _entry_errors('mig-configs.%s[%d]' % (name, index), entry)
    return errors


def applies_to(entry, device):
    """Whether a layout entry applies to a GPU with PCI device ID ``device`` (mig-parted's form)."""
    wanted = entry.get('device-filter')
    if wanted is None:
        return True
    wanted = [wanted] if isinstance(wanted, str) else wanted
    return device_id(device) in [device_id(w) for w in wanted]


def profile_slices(profile, model):
    """(compute slices, memory slices) one instance of ``profile`` takes on ``model``. A compute-instance profile
    (1c.2g.20gb) counts as its whole GPU instance: a layout that shares one GPU instance between compute instances
    is counted larger than it is, and refused rather than guessed."""
    match = PROFILE.match(profile)
    memory = int(match.group('mem'))
    return int(match.group('g')), max(1, int(round(float(memory) / model['gb_per_slice'])))


def layout_errors(spec, name, device):
    """Why layout ``name`` of ``spec`` cannot be applied to a GPU with PCI device ID ``device``, as messages."""
    configs = spec.get('mig-configs') or {}
    if name not in configs:
        return ['no layout %r in the layout file (it has: %s)' % (name, ', '.join(sorted(configs)) or 'none')]
    entries = [e for e in configs[name] if applies_to(e, device) and e.get('mig-enabled') is True]
    if not entries:
        return []
    model = MODELS.get(device_id(device))
    if model is None:
        return ['layout %s: the GPU with PCI device ID %s is not in the MIG table (plugins/module_utils/mig.py MODELS)'
                % (name, device or 'unknown')]
    errors = []
    for entry in entries:
        wanted = entry.get('mig-devices') or {}
        slices = memory = 0
        for profile, count in sorted(wanted.items()):
            base = re.sub(r'^[1-8]c\.', '', profile)
            if base not in model['profiles']:
                errors.append('layout %s: %s is not a MIG profile of %s (%s offers %s)' % (
                    name, profile, device, model['name'], ', '.join(sorted(model['profiles']))))
                continue
            if count > model['profiles'][base]:
                errors.append('layout %s: %d x %s, at most %d on %s'
                              % (name, count, profile, model['profiles'][base], model['name']))
            used = profile_slices(base, model)
            slices += used[0] * count
            memory += used[1] * count
        if slices > model['slices'] or memory > model['memory_slices']:
            errors.append('layout %s: the instances need %d compute and %d memory slices; %s has %d and %d' % (
                name, slices, memory, model['name'], model['slices'], model['memory_slices']))
    return errors


# ---- the site's layouts (baremetal_gpu_mig_layouts) ---------------------------------------------------------------

# The inventory variable with the site's layouts: mig-parted's ``mig-configs`` (layout name -> entries), defined once
# for the cluster; the device plugin's MIG profiles, preflight and verify read it.
LAYOUTS_VAR = 'baremetal_gpu_mig_layouts'
# The layout that turns MIG off on every GPU: added to the site's file when the site does not define it, so that a
# node leaving a MIG pool is taken back to whole GPUs by the same tool.
DISABLED = 'all-disabled'
DISABLED_ENTRIES = [{'devices': 'all', 'mig-enabled': False}]
# How the device plugin advertises a MIG profile's instances when the profile says nothing (its mig_strategy).
DEFAULT_STRATEGY = 'single'


def profile_strategy(profile):
    """The MIG strategy of a sharing profile (sharing mig): its mig_strategy, DEFAULT_STRATEGY when unset."""
    return str((profile or {}).get('mig_strategy') or DEFAULT_STRATEGY)


def layout_file(layouts):
    """The layout file (mig-parted's v1 config) of the site's layouts, with DISABLED added when it is missing."""
    configs = dict(layouts) if isinstance(layouts, dict) else {}
    configs.setdefault(DISABLED, [dict(e) for e in DISABLED_ENTRIES])
    return {'version': 'v1', 'mig-configs': configs}


def layouts_errors(layouts):
    """spec_errors() of the site's layouts, naming the variable."""
    if not isinstance(layouts, dict):
        return ['%s must be a dict of layout name -> mig-parted entries (mig-configs), got %s'
                % (LAYOUTS_VAR, type(layouts).__name__)]
    return ['%s: %s' % (LAYOUTS_VAR, e) for e in spec_errors(layout_file(layouts))]


def layout_profiles(layouts, name):
    """The MIG profiles the entries of layout ``name`` create (those with at least one instance), sorted."""
    entries = (layouts or {}).get(name) or []
    return sorted(set(p for e in entries if isinstance(e, dict) and e.get('mig-enabled') is True
                      for p, count in (e.get('mig-devices') or {}).items() if _is_int(count) and count > 0))


def node_layout_errors(layouts, name, device_ids):
    """Why layout ``name`` of the site's layouts cannot be applied on a node whose GPUs have the PCI device IDs
    ``device_ids`` (nvidia-smi's or lspci's form, one per GPU): layout_errors() once per model."""
    spec = layout_file(layouts)
    errors = []
    for device in sorted(set(device_id(d) or str(d) for d in device_ids or [])):
        errors += [e for e in layout_errors(spec, name, device) if e not in errors]
    if name not in spec['mig-configs']:
        errors = errors or layout_errors(spec, name, '')
    return errors


def node_plan(profiles, default_profile, host_profile, layouts, device_ids, ours=False):
    """The MIG layout a GPU node's sharing profile asks for, and why it cannot be applied there.

    ``profiles``: device_plugin_sharing_profiles; ``default_profile``: device_plugin_sharing_default_profile;
    ``host_profile``: the node's baremetal_gpu_sharing_profile; ``layouts``: LAYOUTS_VAR; ``device_ids``: the PCI
    device IDs of its GPUs; ``ours``: mig_manager configured the node before (its drop-in is there). Returns
    {profile, layout, strategy, config, errors}: layout is the profile's; DISABLED (whole GPUs) on a node of ours whose
    profile is no MIG profile any more; '' on any other node (its MIG is the site's). strategy is how the device
    plugin advertises it; config the layout file (layout_file()); each error names the variables to change. An
    unknown profile is the device plugin's refusal (sharing_plan), not repeated."""
    name = str(host_profile or default_profile or '')
    profile = (profiles or {}).get(name) if isinstance(profiles, dict) else None
    config = layout_file(layouts)
    if not isinstance(profile, dict) or profile.get('sharing') != 'mig':
        return {'profile': name, 'layout': DISABLED if ours else '', 'strategy': DEFAULT_STRATEGY, 'config': config,
                'errors': []}
    layout = str(profile.get('mig_layout') or '')
    variable = 'baremetal_gpu_sharing_profile' if host_profile else 'device_plugin_sharing_default_profile'
    where = '%s %s' % (variable, name)
    errors = layouts_errors(layouts if layouts is not None else {})
    if not errors:
        errors = node_layout_errors(layouts, layout, device_ids)
    return {'profile': name, 'layout': layout, 'strategy': profile_strategy(profile), 'config': config,
            'errors': ['%s (mig_layout %s of %s): %s' % (where, layout, LAYOUTS_VAR, e) for e in errors]}


def _matches_devices(entry, index):
    devices = entry.get('devices', 'all')
    return devices == 'all' or (isinstance(devices, list) and index in devices)


def expected_instances(layouts, name, device_ids):
    """What layout ``name`` makes of a node whose GPUs, in index order, have the PCI device IDs ``device_ids``, as
    mig-parted walks a layout (assert and apply: every entry in order, for every GPU its devices and device-filter
    select; a later entry wins): {gpus: [{index, mig_enabled, devices: {profile: count}}, ...], unmatched: [indexes
    no entry selects (mig-parted's assert fails on them)], profiles: {profile: instances on the node}, mig_gpus: GPUs
    with MIG on, whole_gpus: GPUs with MIG off, instances: all instances}."""
    entries = [e for e in (layout_file(layouts)['mig-configs'].get(name) or []) if isinstance(e, dict)]
    gpus, unmatched, profiles = [], [], {}
    for index, device in enumerate(device_ids or []):
        chosen = None
        for entry in entries:
            if applies_to(entry, device) and _matches_devices(entry, index):
                chosen = entry
        if chosen is None:
            unmatched.append(index)
            continue
        enabled = chosen.get('mig-enabled') is True
        devices = dict((p, c) for p, c in (chosen.get('mig-devices') or {}).items() if enabled and _is_int(c) and c > 0)
        gpus.append({'index': index, 'mig_enabled': enabled, 'devices': devices})
        for profile, count in devices.items():
            profiles[profile] = profiles.get(profile, 0) + count
    return {'gpus': gpus, 'unmatched': unmatched, 'profiles': profiles,
            'mig_gpus': len([g for g in gpus if g['mig_enabled']]),
            'whole_gpus': len([g for g in gpus if not g['mig_enabled']]),
            'instances': sum(profiles.values())}


def capacity(layouts, name, strategy, device_ids):
    """What the device plugin advertises on a node once layout ``name`` is applied to its GPUs (PCI device IDs
    ``device_ids``, in index order) with MIG strategy ``strategy``: advertised() of expected_instances()."""
    return advertised(expected_instances(layouts, name, device_ids), strategy)


def advertised(want, strategy):
    """What the device plugin advertises for ``want`` (expected_instances()' answer) with MIG strategy ``strategy``:
    [{resource, count}]. single: the instances as nvidia.com/gpu (the GPUs when MIG is off on all of them); mixed:
    each profile as nvidia.com/mig-<profile> and the GPUs with MIG off as nvidia.com/gpu. Resources with none are
    left out."""
    if strategy == 'single':
        count = want['instances'] if want['mig_gpus'] else want['whole_gpus']
        return [{'resource': 'nvidia.com/gpu', 'count': count}] if count else []
    out = [{'resource': 'nvidia.com/mig-%s' % p, 'count': c} for p, c in sorted(want['profiles'].items())]
    if want['whole_gpus']:
        out.append({'resource': 'nvidia.com/gpu', 'count': want['whole_gpus']})
    return out


# What nvidia-mig-parted assert prints when the GPUs are readable but do not have the layout (assert.go).
ASSERT_MISMATCH = 'assertion failure: selected configuration not currently applied'


def assert_reasons(result, layout, parted='nvidia-mig-parted'):
    """Why a node's GPUs must change, from the result of ``nvidia-mig-parted assert`` (a command task's result, or a
    skipped one where the tool is not installed yet): [] when the GPUs have ``layout`` or the node has none. Any other
    failure of the tool (the layouts refused, the GPUs not readable) raises ValueError with its message: the GPUs'
    state is unknown, and nothing is changed on a guess."""
    if not layout:
        return []
    result = result or {}
    if result.get('skipped') or 'rc' not in result:
        return ['%s is not installed: MIG layout %s to apply once nvidia-mig-manager is (mig_manager_package)'
                % (parted, layout)]
    if result['rc'] == 0:
        return []
    said = '\n'.join(x for x in (result.get('stderr') or '', result.get('stdout') or '') if x).strip()
    if ASSERT_MISMATCH in said:
        return ['the GPUs do not have MIG layout %s (nvidia-mig-parted assert)' % layout]
    lines = [line.strip() for line in said.splitlines() if line.strip()]
    raise ValueError('%s assert could not read the GPUs or the layouts (rc %s): %s' % (
        parted, result['rc'], ' / '.join(lines[-3:]) if lines else 'no output'))


MIG_MODES = ('Enabled', 'Disabled')


def pending_modes(gpus):
    """The MIG mode changes that wait for the GPUs' next reset or boot, from the GPUs the baremetal.gpu.nvidia_smi
    module read (``nvidia-smi -q -x``: <mig_mode><current_mig> and <pending_mig>): one line per GPU whose pending mode
    is not its current one, as after a mode change nvidia-mig-parted set but could not reset the GPU for (apply.go:
    the mode set, then "error resetting all GPUs"). A GPU without MIG (N/A, or no <mig_mode>) has none."""
    out = []
    for gpu in gpus or []:
        current, pending = gpu.get('mig_mode'), gpu.get('mig_mode_pending')
        if current in MIG_MODES and pending in MIG_MODES and current != pending:
            out.append('GPU %s (%s): MIG mode %s pending, %s now' % (
                gpu.get('index'), gpu.get('pci_bus_id') or 'no PCI address', pending, current))
    return out
