# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Plan containerd's configuration for the NVIDIA runtime: pure functions, no I/O.

Used by the module baremetal.gpu.containerd_runtime_config. What containerd does with an imported
file was measured with the real binaries (tests/fixtures/containerd/SOURCE.md):

- containerd 1.6 and 1.7 merge an imported file one *plugin* at a time: an imported
  ``[plugins."io.containerd.grpc.v1.cri"...]`` table replaces the main config's whole CRI table
  (1.6.20 and 1.7.24: a drop-in holding only the nvidia runtime dropped the user's runc
  ``SystemdCgroup``). The drop-in therefore carries the user's whole CRI table with the runtime
  merged in.
- containerd 2.x merges imported plugin tables key by key (2.2.1 kept the user's runc options and
  added the nvidia runtime from a drop-in that holds only that runtime). The drop-in therefore holds
  only what the role adds, so that later changes to the main config still take effect.
- containerd 2.x migrates each file from *its own* version: a drop-in must use the main config's
  version. A version 3 drop-in under a version 2 main config makes 2.2.1 skip the migration of the
  main config, whose CRI settings are then silently ignored ("Ignoring unknown key").
- containerd 2.x reads ``imports`` from the main config only; with no config file the default's
  ``/etc/containerd/conf.d/*.toml`` is not read (2.2.1, ``config dump``), so the main config is
  created when missing.
- Config version 4 (containerd 2.3) is refused: no containerd 2.3 was available to prove what this
  module writes against it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import re

from ansible_collections.baremetal.gpu.plugins.module_utils import toml_compat
from ansible_collections.baremetal.gpu.plugins.module_utils.node_facts import parse_version

CRI_V2 = 'io.containerd.grpc.v1.cri'
CRI_V3 = 'io.containerd.cri.v1.runtime'
PLUGIN = {2: CRI_V2, 3: CRI_V3}
# containerd's CDI settings appeared in 1.7 (enable_cdi, off by default) and are on by default from 2.0.
CDI_FIRST = (1, 7)
CDI_DEFAULT_ON = (2, 0)
DEFAULT_CDI_SPEC_DIRS = ['/etc/cdi', '/var/run/cdi']
_BARE = re.compile(r'^[A-Za-z0-9_-]+$')
_HEADER = re.compile(r'^\s*\[')


# Keys whose values are credentials in containerd's registry settings (CRI registry.configs.<host>.auth and the
# deprecated registry.auths: username, password, auth, identitytoken) and in anything else a user may keep there.
SECRET_KEYS = ('password', 'auth', 'identitytoken', 'token', 'secret')


def secret_values(data):
    """The non-empty string values stored under a credential key (SECRET_KEYS) anywhere in ``data``."""
    found = []
    if isinstance(data, dict):
        for key, value in data.items():
            if str(key).lower() in SECRET_KEYS and isinstance(value, str) and value:
                found.append(value)
            else:
                found.extend(secret_values(value))
    elif isinstance(data, list):
        for item in data:
            found.extend(secret_values(item))
    return found


class PlanError(ValueError):
    """The configuration cannot be planned; the message says what was found and what to do."""


def containerd_version(text):
    """(version, major, minor) from ``containerd --version``; raises PlanError when there is none.

    'containerd github.com/containerd/containerd/v2 2.2.1 ' -> ('2.2.1', 2, 2)
    """
    version = parse_version(text)
    if not version:
        raise PlanError('no containerd version in %r' % (text or '')[:200])
    parts = [int(p) for p in version.split('.')]
    return version, parts[0], parts[1]


def toml_key(key):
    return key if _BARE.match(key) else json.dumps(key)


def toml_scalar(value):
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, list):
        return '[' + ', '.join(toml_scalar(item) for item in value) + ']'
    if isinstance(value, dict):
        return '{' + ', '.join('%s = %s' % (toml_key(k), toml_scalar(v)) for k, v in value.items()) + '}'
    return json.dumps(value if isinstance(value, str) else str(value))


def _table_list(value):
    return isinstance(value, list) and value and all(isinstance(item, dict) for item in value)


def emit_table(path, table, out):
    """Append TOML lines for ``table`` at ``path`` (a list of keys) to ``out``."""
    scalars = [key for key, value in table.items() if not isinstance(value, dict) and not _table_list(value)]
    if scalars or not table:
        # A table with only sub-tables needs no header of its own.
        out.append('')
        out.append('[%s]' % '.'.join(toml_key(p) for p in path))
    for key, value in table.items():
        if key in scalars:
            out.append('  %s = %s' % (toml_key(key), toml_scalar(value)))
    for key, value in table.items():
        if isinstance(value, dict):
            emit_table(path + [key], value, out)
        elif _table_list(value):
            for item in value:
                out.append('')
                out.append('[[%s]]' % '.'.join(toml_key(p) for p in path + [key]))
                for item_key, item_value in item.items():
                    out.append('  %s = %s' % (toml_key(item_key), toml_scalar(item_value)))


def deep_merge(base, over):
    """Merge ``over`` into ``base`` key by key (containerd 2.x import semantics); returns base."""
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            deep_merge(base[key], value)
        else:
            base[key] = copy.deepcopy(value)
    return base


def config_version(data, path, major):
    """The config version of a parsed main config (2 or 3), or PlanError with what to do."""
    version = data.get('version')
    if version is None:
        if data.get('plugins'):
            raise PlanError('%s has no `version` key but configures plugins (config version 1, deprecated): add '
                            '`version = 2` and rename the plugin tables (`containerd config migrate` prints the '
                            'result), then run again' % path)
        return 3 if major >= 2 else 2
    if version == 4 or (isinstance(version, int) and version > 4):
        raise PlanError(
            '%s is containerd config version %s (containerd 2.3 and later). This role writes containerd config '
            'versions 2 and 3 only and was not proven against a containerd that reads version %s, so it changes '
            'nothing. Either write the nvidia runtime yourself into a drop-in of the same version ([plugins.'
            "'io.containerd.cri.v1.runtime'.containerd.runtimes.nvidia] with options.BinaryName), or use a "
            'config of version 3 (containerd 2.3 migrates it), or set container_toolkit_runtime=none'
            % (path, version, version))
    if version not in PLUGIN:
        raise PlanError('%s: unsupported containerd config version %r (expected 2 or 3)' % (path, version))
    if version == 3 and major < 2:
        raise PlanError('%s is config version 3, which containerd %d.x cannot read (containerd 1.x reads version 2; '
                        'containerd 1.6 silently ignores version 3 plugin tables)' % (path, major))
    return version


def top_level(text):
    """Split text into (the part before the first table header, the rest)."""
    lines = text.splitlines(True)
    for index, line in enumerate(lines):
        if _HEADER.match(line):
            return ''.join(lines[:index]), ''.join(lines[index:])
    return text, ''


def add_import(text, data, version, entry, covered):
    """The main config's text with ``entry`` in its imports (and `version` when it had none)."""
    if covered and 'version' in data:
        return text
    head, rest = top_level(text)
    imports = list(data.get('imports') or [])
    new_imports = imports + ([] if covered else [entry])
    line = 'imports = %s\n' % toml_scalar(new_imports)
    if re.search(r'(?ms)^imports\s*=\s*\[.*?\]\s*$', head):
        head = re.sub(r'(?ms)^imports\s*=\s*\[.*?\][ \t]*\n?', lambda m: line, head, count=1)
    elif re.search(r'(?m)^version\s*=', head):
        head = re.sub(r'(?m)^(version\s*=.*\n?)', lambda m: m.group(1).rstrip('\n') + '\n' + line, head, count=1)
    else:
        head = head + ('' if not head or head.endswith('\n') else '\n') + 'version = %d\n%s' % (version, line)
    if 'version' not in data and re.search(r'(?m)^version\s*=', head) is None:
        head = 'version = %d\n' % version + head
    return head + ('\n' if rest and not head.endswith('\n') else '') + rest


def plan(config_path, config_text, imports, dropin_path, import_entry, runtime_name, binary, version_text,
         default_runtime=False, cdi_enabled=False, cdi_spec_dirs=None):
    """Plan the drop-in and the main config change.

    config_text: the main config's content, or None when it does not exist.
    imports: a list of (path, text) of the files the main config imports today, in containerd's
    order (globs expanded and sorted), without the role's own drop-in.
    version_text: the output of ``containerd --version``.
    Returns a dict: version, plugin, major, containerd_version, merge ('plugin' or 'key'), main_content,
    main_changed, config_exists, dropin_content, cri (the CRI table containerd will see), cdi (what the
    node's containerd does with CDI), credentials ({dropin, main}: whether that file holds credentials).
    Raises PlanError (the message names the file and what to do).
    """
    release, major, minor = containerd_version(version_text)
    if major < 1 or (major == 1 and minor < 5):
        raise PlanError('containerd %s is too old: config imports and the runc v2 shim options need containerd 1.5 '
                        'or later' % release)
    exists = config_text is not None
    text = config_text or ''
    try:
        data = toml_compat.loads(text)
    except ValueError as exc:
        raise PlanError('%s is not valid TOML: %s' % (config_path, exc))
    version = config_version(data, config_path, major)
    plugin = PLUGIN[version]
    key_merge = major >= 2

    # The CRI table containerd would see without the role's drop-in: the main config, then each import.
    cri = copy.deepcopy((data.get('plugins') or {}).get(plugin) or {})
    for path, part_text in imports:
        try:
            part = toml_compat.loads(part_text)
        except ValueError as exc:
            raise PlanError('%s (imported by %s) is not valid TOML: %s' % (path, config_path, exc))
        part_version = part.get('version', 1 if part.get('plugins') else version)
        if key_merge and part_version > version:
            raise PlanError('%s (imported by %s) is config version %s, higher than the main config\'s %s: '
                            'containerd %s refuses it or ignores the main config\'s settings. Give both the same '
                            'version' % (path, config_path, part_version, version, release))
        table = (part.get('plugins') or {}).get(plugin)
        if table is None:
            continue
        if key_merge:
            deep_merge(cri, table)
        else:
            cri = copy.deepcopy(table)  # containerd 1.x replaces the whole plugin table

    runtimes = cri.get('containerd', {}).get('runtimes', {})
    runc = runtimes.get('runc') or {}
    nvidia = copy.deepcopy(runtimes.get(runtime_name) or {})
    nvidia.setdefault('runtime_type', runc.get('runtime_type', 'io.containerd.runc.v2'))
    options = deep_merge(copy.deepcopy(runc.get('options') or {}), nvidia.get('options') or {})
    options['BinaryName'] = binary
    nvidia['options'] = options

    cdi = {'supported': (major, minor) >= CDI_FIRST, 'default_on': (major, minor) >= CDI_DEFAULT_ON,
           'requested': bool(cdi_enabled), 'written': False, 'spec_dirs': list(cdi_spec_dirs or DEFAULT_CDI_SPEC_DIRS)}
    if cdi_enabled and not cdi['supported']:
        raise PlanError('container_toolkit_cdi_enabled is true, but containerd %s cannot read CDI specs (CDI needs '
                        'containerd 1.7 or later, `enable_cdi`). Set container_toolkit_cdi_enabled=false to use the '
                        'nvidia runtime without CDI, or install containerd 1.7 or later' % release)
    if cdi_enabled and cri.get('enable_cdi') is False and key_merge:
        raise PlanError('container_toolkit_cdi_enabled is true, but %s (or a file it imports) sets enable_cdi = false '
                        'for containerd %s. Remove that setting (CDI is on by default in containerd 2), or set '
                        'container_toolkit_cdi_enabled=false' % (config_path, release))

    if key_merge:
        # containerd 2.x: only what the role adds; containerd merges it key by key.
        add = {'containerd': {'runtimes': {runtime_name: nvidia}}}
        if default_runtime:
            add['containerd']['default_runtime_name'] = runtime_name
        if cdi_enabled:
            dirs = cri.get('cdi_spec_dirs', DEFAULT_CDI_SPEC_DIRS)
            cdi['spec_dirs'] = list(dirs)
        header = ('# The %r runtime for containerd %s, which merges imported tables key by key.' % (runtime_name, release))
        dropin_table = add
        deep_merge(cri, add)
    else:
        # containerd 1.x: the whole CRI table (it replaces the main config's).
        cri.setdefault('containerd', {}).setdefault('runtimes', {})[runtime_name] = nvidia
        if 'runc' not in cri['containerd']['runtimes'] and cri['containerd'].get('default_runtime_name', 'runc') == 'runc':
            # The imported runtimes map replaces the plugin's default one: without runc, containerd 1.7.24's CRI
            # plugin fails to load ("no corresponding runtime configured in containerd.runtimes for default").
            cri['containerd']['runtimes']['runc'] = {'runtime_type': 'io.containerd.runc.v2'}
        if default_runtime:
            cri['containerd']['default_runtime_name'] = runtime_name
        if cdi_enabled:
            cri['enable_cdi'] = True
            cri['cdi_spec_dirs'] = list(cdi_spec_dirs or cri.get('cdi_spec_dirs') or DEFAULT_CDI_SPEC_DIRS)
            cdi['written'] = True
            cdi['spec_dirs'] = list(cri['cdi_spec_dirs'])
        header = ('# The CRI plugin table of %s (and its imports) with the %r runtime merged in: containerd %s\n'
                  '# replaces a plugin\'s whole table with an imported one, so this file carries all of it.'
                  % (config_path, runtime_name, release))
        dropin_table = cri
    out = [header, 'version = %d' % version]
    emit_table(['plugins', plugin], dropin_table, out)
    dropin_content = '\n'.join(out) + '\n'

    import_paths = list(data.get('imports') or [])
    covered = any(entry in (import_entry, dropin_path) for entry in import_paths) or bool(
        [p for p, _t in imports if p == dropin_path])
    main_content = add_import(text, data, version, import_entry, covered)
    # Credentials: containerd 1.x's drop-in carries the user's whole CRI table, registry passwords included; the
    # main config's text is the user's. A file that holds any is written 0600 and its content never shown.
    credentials = {'dropin': bool(secret_values({'plugins': {plugin: dropin_table}})),
                   'main': bool(secret_values(data))}
    return {
        'credentials': credentials,
        'containerd_version': release, 'major': major, 'minor': minor, 'version': version, 'plugin': plugin,
        'merge': 'key' if key_merge else 'plugin', 'config_exists': exists, 'imports': import_paths,
        'main_content': main_content, 'main_changed': main_content != text or not exists,
        'dropin_content': dropin_content, 'cri': cri, 'cdi': cdi,
    }


def runtime_binary(text, runtime_name):
    """The BinaryName of runtime ``runtime_name`` in a containerd configuration (RKE2's generated config.toml, any
    config version) or ``containerd config dump`` output: from the CRI plugin of version 3 and later
    (io.containerd.cri.v1.runtime) if it has the runtime, else of version 2. '' when the runtime or its BinaryName
    is absent, or the text is not TOML (a file being written: the caller reads it again)."""
    try:
        data = toml_compat.loads(text or '')
    except toml_compat.TOMLError:
        return ''
    for plugin in (CRI_V3, CRI_V2):
        runtime = ((((data.get('plugins') or {}).get(plugin) or {}).get('containerd') or {}).get('runtimes')
                   or {}).get(runtime_name)
        if runtime is not None:
            return str((runtime.get('options') or {}).get('BinaryName') or '')
    return ''


def file_version(text):
    """The top-level ``version`` of a containerd configuration file (an int), None when it has none or is not TOML."""
    try:
        version = toml_compat.loads(text or '').get('version')
    except toml_compat.TOMLError:
        return None
    return version if isinstance(version, int) and not isinstance(version, bool) else None


def dump_has_runtime(dump, runtime_name, binary):
    """Whether ``containerd config dump`` output has the runtime with that BinaryName."""
    return runtime_binary(dump, runtime_name) == binary


def dump_problems(dump, runtime_name, binary, cdi_wanted):
    """What ``containerd config dump`` output lacks before containerd may be restarted: the runtime, its BinaryName
    and, when CDI is wanted, ``enable_cdi = true`` in the CRI plugin. Empty when all is there."""
    problems = []
    found = runtime_binary(dump, runtime_name)
    if not found:
        problems.append('no runtime %s with a BinaryName' % runtime_name)
    elif found != binary:
        problems.append('runtime %s has BinaryName %s, not %s' % (runtime_name, found, binary))
    if cdi_wanted and not dump_cdi(dump)[0]:
        problems.append('the CRI plugin does not have enable_cdi = true')
    return problems


def dump_cdi(dump):
    """(enable_cdi, cdi_spec_dirs) of the CRI runtime plugin in ``containerd config dump`` output."""
    data = toml_compat.loads(dump)
    for plugin in (CRI_V3, CRI_V2):
        table = (data.get('plugins') or {}).get(plugin)
        if table is not None and ('enable_cdi' in table or plugin == CRI_V2):
            return bool(table.get('enable_cdi', False)), list(table.get('cdi_spec_dirs') or [])
    return False, []


def reads_cdi(version_text, config_text):
    """Whether a containerd reads CDI specs, from its ``containerd --version`` and the configuration it really runs
    on (for RKE2, the config.toml RKE2 generated): {reads_cdi: True, False or None (unknown), version, reason}.

    containerd before 1.7 has no CDI; 1.7 reads CDI only with ``enable_cdi = true`` in its CRI plugin; 2.0 and later
    read it unless ``enable_cdi = false``. Without a version, a configuration of version 3 or later is containerd 2
    (version 2 files are read by 1.x and 2.x alike, so they leave it unknown)."""
    try:
        version, major, minor = containerd_version(version_text)
    except PlanError:
        version, major, minor = None, None, None
    try:
        data = toml_compat.loads(config_text or '')
    except toml_compat.TOMLError:
        data = {}
    enable = None
    for plugin in (CRI_V3, CRI_V2):
        table = (data.get('plugins') or {}).get(plugin)
        if isinstance(table, dict) and 'enable_cdi' in table:
            enable = bool(table['enable_cdi'])
            break
    if version is None:
        if (file_version(config_text) or 0) >= 3:
            major, minor, version = 2, 0, '2.x (config version %s)' % file_version(config_text)
        else:
            return {'reads_cdi': None, 'version': '',
                    'reason': 'unknown: no containerd version could be read, and the configuration does not tell'}
    if (major, minor) < CDI_FIRST:
        return {'reads_cdi': False, 'version': version,
                'reason': 'containerd %s reads no CDI specs (CDI came with containerd 1.7)' % version}
    if (major, minor) < CDI_DEFAULT_ON:
        return {'reads_cdi': bool(enable), 'version': version,
                'reason': 'containerd %s reads CDI specs only with enable_cdi = true in its CRI plugin: %s'
                          % (version, 'set' if enable else ('false' if enable is False else 'not set (off by default)'))}
    if enable is False:
        return {'reads_cdi': False, 'version': version,
                'reason': 'containerd %s, but its configuration sets enable_cdi = false' % version}
    return {'reads_cdi': True, 'version': version, 'reason': 'containerd %s reads CDI specs (on by default)' % version}
