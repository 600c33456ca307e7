# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""apt, read as text: sources files, the components a node lacks, ``apt-get --simulate`` and ``apt-cache policy``.

Pure functions (no I/O), used by the module baremetal.gpu.apt_sources_info and the filters of
plugins/filter/driver.py, unit-tested on outputs captured from real Debian 12/13 and Ubuntu
22.04/24.04 nodes (tests/fixtures/apt/).

Formats, as sources.list(5) describes them:
- one-line: ``deb [ opt=value opt2=value ] URI SUITE [COMPONENT...]`` in /etc/apt/sources.list and
  /etc/apt/sources.list.d/*.list;
- deb822: paragraphs of ``Field: value`` in /etc/apt/sources.list.d/*.sources (Types, URIs, Suites,
  Components, Enabled and the options, e.g. Signed-By, which may also hold an inline key block on
  continuation lines).

apt refuses every operation node-wide when two entries for the same URI and suite disagree on
Signed-By ("Conflicting values set for option Signed-By regarding source ..."); entries added for a
node's own mirror therefore carry the options of the node's own entry for it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# One-line option name -> deb822 field name (lower case), sources.list(5).
ONE_LINE_OPTIONS = {
    'arch': 'architectures',
    'lang': 'languages',
    'target': 'targets',
    'pdiffs': 'pdiffs',
    'by-hash': 'by-hash',
    'allow-insecure': 'allow-insecure',
    'allow-weak': 'allow-weak',
    'allow-downgrade-to-insecure': 'allow-downgrade-to-insecure',
    'trusted': 'trusted',
    'signed-by': 'signed-by',
    'check-valid-until': 'check-valid-until',
    'valid-until-min': 'valid-until-min',
    'valid-until-max': 'valid-until-max',
    'check-date': 'check-date',
    'date-max-future': 'date-max-future',
    'inrelease-path': 'inrelease-path',
    'snapshot': 'snapshot',
}
# deb822 options whose one-line form is a comma-separated list (space-separated in deb822).
LIST_OPTIONS = ('architectures', 'languages', 'targets', 'architectures-add', 'architectures-remove',
                'languages-add', 'languages-remove', 'targets-add', 'targets-remove')
# How deb822 spells the fields (sources.list(5)); others are title-cased per dash-separated word.
FIELD_NAMES = {
    'types': 'Types', 'uris': 'URIs', 'suites': 'Suites', 'components': 'Components', 'enabled': 'Enabled',
    'signed-by': 'Signed-By', 'architectures': 'Architectures', 'languages': 'Languages', 'targets': 'Targets',
    'pdiffs': 'PDiffs', 'by-hash': 'By-Hash', 'inrelease-path': 'InRelease-Path',
}
STRUCTURAL = ('types', 'uris', 'suites', 'components', 'enabled')


class SourcesError(ValueError):
    """A sources file apt itself would refuse."""


def field_name(key):
    """The deb822 spelling of a lower-case field name."""
    return FIELD_NAMES.get(key, '-'.join(part.capitalize() for part in key.split('-')))


def _entry(kind, uri, suite, components, options, path, fmt):
    return {'type': kind, 'uri': uri, 'suite': suite, 'components': list(components), 'options': dict(options),
            'file': path, 'format': fmt}


def parse_one_line(text, path=''):
    """Entries of a one-line sources file: one dict per line (type, uri, suite, components, options, file)."""
    entries = []
    for number, raw in enumerate((text or '').splitlines(), 1):
        line = raw.split('#', 1)[0].strip()
        if not line:
            continue
        kind = line.split(None, 1)[0]
        if kind not in ('deb', 'deb-src'):
            continue
        rest = line[len(kind):].strip()
        options = {}
        if rest.startswith('['):
            end = rest.find(']')
            if end < 0:
                raise SourcesError('%s:%d: "[" without "]" in %r' % (path or 'sources', number, raw))
            for item in rest[1:end].split():
                key, sep, value = item.partition('=')
                if not sep:
                    raise SourcesError('%s:%d: option %r has no value' % (path or 'sources', number, item))
                suffix = ''
                if key.endswith('+'):
                    key, suffix = key[:-1], '-add'
                elif key.endswith('-'):
                    key, suffix = key[:-1], '-remove'
                name = ONE_LINE_OPTIONS.get(key.lower(), key.lower()) + suffix
                if name in LIST_OPTIONS:
                    value = ' '.join(v for v in value.split(',') if v)
                options[name] = value
            rest = rest[end + 1:].strip()
        words = rest.split()
        if len(words) < 2:
            raise SourcesError('%s:%d: expected "URI SUITE [COMPONENT...]" in %r' % (path or 'sources', number, raw))
        entries.append(_entry(kind, words[0], words[1], words[2:], options, path, 'one-line'))
    return entries


def parse_deb822_paragraphs(text):
    """The paragraphs of a deb822 file as dicts of lower-case field -> value.

    A multi-line value (continuation lines start with a space or a tab; " ." is an empty line) is
    kept with its lines joined by newlines, the first line being what followed the colon.
    """
    paragraphs = []
    fields = {}
    key = None
    for raw in (text or '').splitlines():
        if raw.startswith('#'):
            continue
        if not raw.strip():
            if fields:
                paragraphs.append(fields)
            fields, key = {}, None
            continue
        if raw[0] in ' \t':
            if key is None:
                raise SourcesError('continuation line without a field: %r' % raw)
            line = raw.strip()
            fields[key] += '\n' + ('' if line == '.' else line)
            continue
        name, sep, value = raw.partition(':')
        if not sep:
            raise SourcesError('not a "Field: value" line: %r' % raw)
        key = name.strip().lower()
        fields[key] = value.strip()
    if fields:
        paragraphs.append(fields)
    return paragraphs


def parse_deb822(text, path=''):
    """Entries of a deb822 sources file: one dict per (type, URI, suite) of each enabled paragraph."""
    entries = []
    for fields in parse_deb822_paragraphs(text):
        if fields.get('enabled', 'yes').strip().lower() in ('no', 'false', '0'):
            continue
        options = dict((k, v) for k, v in fields.items() if k not in STRUCTURAL)
        for kind in fields.get('types', '').split():
            for uri in fields.get('uris', '').split():
                for suite in fields.get('suites', '').split():
                    entries.append(_entry(kind, uri, suite, fields.get('components', '').split(), options, path,
                                          'deb822'))
    return entries


def parse_sources(files):
    """Entries of several files: ``files`` is a list of dicts with ``path`` and ``content``.

    ``*.sources`` files are deb822, everything else (sources.list, ``*.list``) one-line.
    """
    entries = []
    for item in files:
        path = item['path']
        if path.endswith('.sources'):
            entries.extend(parse_deb822(item['content'], path))
        else:
            entries.extend(parse_one_line(item['content'], path))
    return entries


def _uri_key(uri):
    return uri.rstrip('/') + '/'


def missing_sources(entries, release, suffixes, components):
    """The apt entries a node lacks for ``components`` in ``release`` + each of ``suffixes``.

    The mirrors are the URIs of the node's own ``deb`` entries for ``release`` (in the order they
    appear). For each mirror and suite, the components not yet enabled there are returned as one
    entry, with the options (Signed-By, Architectures, ...) of the node's own entry for that URI and
    suite, or else of its entry for ``release``: apt refuses two entries of one source that disagree
    on Signed-By. Returns ``{'mirrors': [uri, ...], 'missing': [entry, ...]}``.
    """
    debs = [e for e in entries if e['type'] == 'deb']
    mirrors = []
    seen = set()
    for entry in debs:
        if entry['suite'] == release and _uri_key(entry['uri']) not in seen:
            seen.add(_uri_key(entry['uri']))
            mirrors.append(entry)
    missing = []
    for reference in mirrors:
        for suffix in suffixes:
            suite = release + suffix
            same = [e for e in debs if _uri_key(e['uri']) == _uri_key(reference['uri']) and e['suite'] == suite]
            present = set()
            for entry in same:
                present.update(entry['components'])
            lacking = [c for c in components if c not in present]
            if lacking:
                options = (same[0] if same else reference)['options']
                missing.append(_entry('deb', reference['uri'], suite, lacking, options, '', 'deb822'))
    return {'mirrors': [m['uri'] for m in mirrors], 'missing': missing}


def _render_value(value):
    lines = value.split('\n')
    out = (' ' + lines[0]) if lines[0] else ''
    for line in lines[1:]:
        out += '\n ' + (line if line else '.')
    return out


def render_deb822(entries):
    """deb822 text for ``entries``; entries that differ only in their suite share one paragraph."""
    groups = []
    for entry in entries:
        key = (entry['type'], entry['uri'], tuple(entry['components']), tuple(sorted(entry['options'].items())))
        for group in groups:
            if group[0] == key:
                group[1].append(entry['suite'])
                break
        else:
            groups.append((key, [entry['suite']]))
    paragraphs = []
    for (kind, uri, comps, options), suites in groups:
        lines = ['Types: %s' % kind, 'URIs: %s' % uri, 'Suites: %s' % ' '.join(suites)]
        if comps:
            lines.append('Components: %s' % ' '.join(comps))
        for name, value in options:
            lines.append('%s:%s' % (field_name(name), _render_value(value)))
        paragraphs.append('\n'.join(lines))
    return '\n\n'.join(paragraphs) + ('\n' if paragraphs else '')


def render_one_line(entries):
    """One-line text for ``entries`` (only for entries without multi-line options)."""
    lines = []
    for entry in entries:
        opts = []
        for name, value in sorted(entry['options'].items()):
            if '\n' in value:
                raise SourcesError('option %s of %s %s has several lines; use deb822'
                                   % (name, entry['uri'], entry['suite']))
            short = dict((v, k) for k, v in ONE_LINE_OPTIONS.items()).get(name, name)
            if name in LIST_OPTIONS:
                value = ','.join(value.split())
            opts.append('%s=%s' % (short, value))
        lines.append(' '.join([entry['type']] + (['[%s]' % ' '.join(opts)] if opts else [])
                              + [entry['uri'], entry['suite']] + entry['components']))
    return '\n'.join(lines) + ('\n' if lines else '')


# ---- apt-get install --simulate ------------------------------------------------------------------

SIM_LINE = re.compile(r'^(?P<action>Inst|Remv|Purg|Conf)\s+(?P<name>\S+)'
                      r'(?:\s+\[(?P<old>[^\]]+)\])?(?:\s+\((?P<new>\S+)(?:\s+(?P<origin>[^\[)]*?))?(?:\s+\[[^\]]+\])?\))?')


def parse_simulation(text):
    """Parse ``apt-get install --simulate`` (LC_ALL=C) output.

    Returns a dict:
      install: [{'name', 'version', 'old_version', 'origin'}] (Inst lines: new packages and upgrades),
      remove: [{'name', 'version', 'purge'}] (Remv/Purg lines),
      held_changed: names listed under "The following held packages will be changed:",
      already: names apt reports as "already the newest version",
      errors: the "E:" lines.
    """
    out = {'install': [], 'remove': [], 'held_changed': [], 'already': [], 'errors': []}
    block = None
    for raw in (text or '').splitlines():
        if block and raw.startswith('  '):
            if block == 'held':
                out['held_changed'].extend(raw.split())
            continue
        block = None
        if raw.startswith('The following held packages will be changed:'):
            block = 'held'
            continue
        if raw.startswith('The following '):
            block = 'other'
            continue
        if raw.startswith('E: '):
            out['errors'].append(raw[3:].strip())
            continue
        match = re.match(r'^(\S+) is already the newest version', raw)
        if match:
            out['already'].append(match.group(1))
            continue
        match = SIM_LINE.match(raw)
        if not match:
            continue
        action = match.group('action')
        if action == 'Inst':
            out['install'].append({'name': match.group('name'), 'version': match.group('new') or '',
                                   'old_version': match.group('old') or '',
                                   'origin': (match.group('origin') or '').strip()})
        elif action in ('Remv', 'Purg'):
            out['remove'].append({'name': match.group('name'), 'version': match.group('old') or '',
                                  'purge': action == 'Purg'})
    return out


BRANCH_OF_VERSION = re.compile(r'^(?:[0-9]+:)?([0-9]{3})\.[0-9]+')


def branch_of(version):
    """'580' for '580.178.04-0ubuntu0.24.04.1' (or '1:550.163.01-2'); '' when it is not a driver version."""
    match = BRANCH_OF_VERSION.match(version or '')
    return match.group(1) if match else ''


def resolved_branches(simulation, name_regex):
    """The driver branches of the packages apt would install whose names match ``name_regex``.

    Returns a dict: packages ('name=version' of those Inst lines), branches (sorted, unique), final
    (the highest branch: where a chain of transitional packages ends, e.g. 525 -> 535 -> 580), or ''.
    """
    pattern = re.compile(name_regex)
    picked = [p for p in simulation['install'] if pattern.search(p['name']) and branch_of(p['version'])]
    branches = sorted(set(branch_of(p['version']) for p in picked), key=int)
    return {'packages': ['%s=%s' % (p['name'], p['version']) for p in picked], 'branches': branches,
            'final': branches[-1] if branches else ''}


def _branch_in_name(package, branch):
    """Where ``branch`` sits in ``package``'s name, as a whole '-'-separated part (a match object), else None."""
    return re.search(r'-%s(?=-|$)' % re.escape(str(branch)), package or '')


def branch_stem(package, branch):
    """A regex matching ``package``'s name with any branch number in place of ``branch`` (the number as group 1): for
    ('nvidia-driver-580-open', '580') it matches nvidia-driver-595-open, not nvidia-driver-595. '' when the name
    carries no branch (Debian's nvidia-driver)."""
    match = _branch_in_name(package, branch)
    if not match:
        return ''
    return '^%s-([0-9]+)%s$' % (re.escape(package[:match.start()]), re.escape(package[match.end():]))


def branch_family(install, branch):
    """The driver's metapackage among ``install`` (a plan's packages, 'name' or 'name=version'): the first whose name
    carries ``branch``, without its version, and the prefix its name shares with the other branches' packages (what
    ``apt-cache pkgnames`` lists them by). Both '' when no name carries the branch (Debian)."""
    for entry in install or []:
        name = entry.split('=', 1)[0]
        match = _branch_in_name(name, branch)
        if match:
            return {'package': name, 'prefix': name[:match.start() + 1]}
    return {'package': '', 'prefix': ''}


# A dependency line of ``apt-cache depends`` (' |' marks an or-group's member), the package named in group 1.
DEPENDS_LINE = re.compile(r'^ [ |]Depends: <?([^>\s]+)>?')


def parse_depends(text):
    """Parse ``apt-cache depends PACKAGE...`` (LC_ALL=C): {package: [names it depends on]}, alternatives of an
    or-group included, the providers apt lists under a virtual package left out."""
    out = {}
    name = None
    for raw in (text or '').splitlines():
        if not raw.strip() or raw.startswith('#'):
            continue
        if not raw[0].isspace():
            name = raw.strip()
            out[name] = []
            continue
        match = DEPENDS_LINE.match(raw)
        if name is not None and match:
            out[name].append(match.group(1))
    return out


def cut_depends(text, prefix):
    """``apt-cache depends`` output cut to what parse_depends needs about packages named ``prefix``*: each such
    package's line and its direct Depends on a package with the same prefix (the alternatives and providers apt
    lists under a dependency, and every other dependency, left out)."""
    out = []
    keep = False
    for raw in (text or '').splitlines():
        if raw and not raw[0].isspace():
            keep = raw.strip().startswith(prefix)
            if keep:
                out.append(raw.strip())
            continue
        match = DEPENDS_LINE.match(raw)
        if keep and match and match.group(1).startswith(prefix):
            out.append(raw.rstrip())
    return '\n'.join(out) + ('\n' if out else '')


def real_branches(depends_text, package, branch):
    """The branches the archive really ships for ``package`` (whose name carries ``branch``): of the packages of
    the same name with another branch number in ``depends_text`` (apt-cache depends), those that are not a
    transitional package, i.e. do not depend on the same name with another branch. Sorted by number."""
    stem = branch_stem(package, branch)
    if not stem:
        return []
    pattern = re.compile(stem)
    real = set()
    for name, depends in parse_depends(depends_text).items():
        match = pattern.match(name)
        if not match:
            continue
        others = set(dep.group(1) for dep in map(pattern.match, depends) if dep) - set([match.group(1)])
        if not others:
            real.add(match.group(1))
    return sorted(real, key=int)


# ---- apt-cache policy ------------------------------------------------------------------------------

def parse_policy(text):
    """Parse ``apt-cache policy NAME...`` (LC_ALL=C).

    Returns {name: {'installed': version or None, 'candidate': version or None, 'versions': [...]}} where
    versions lists the version table in apt's order (highest first). Packages apt does not know are
    absent from the result (apt prints nothing, or an "N: Unable to locate package" line, for them).
    """
    out = {}
    name = None
    in_table = False
    for raw in (text or '').splitlines():
        if raw and not raw[0].isspace() and raw.rstrip().endswith(':') and not raw.startswith(('N:', 'W:', 'E:')):
            name = raw.rstrip()[:-1]
            out[name] = {'installed': None, 'candidate': None, 'versions': []}
            in_table = False
            continue
        if name is None or not raw.strip():
            continue
        line = raw.strip()
        lowered = line.lower()
        if lowered.startswith('installed:') or lowered.startswith('candidate:'):
            field, value = line.split(':', 1)
            value = value.strip()
            out[name][field.lower()] = None if value in ('(none)', '') else value
            continue
        if lowered.startswith('version table:'):
            in_table = True
            continue
        if in_table:
            words = line.replace('***', ' ').split()
            # A version line is "VERSION PRIORITY"; an origin line is "PRIORITY URL ..." or "PRIORITY /var/lib/dpkg/status".
            if len(words) == 2 and re.match(r'^-?[0-9]+$', words[1]) and not re.match(r'^-?[0-9]+$', words[0]):
                out[name]['versions'].append(words[0])
    return out


_INDEX_LINE = re.compile(r'^\s*-?\d+\s+\S+.*\sPackages\s*$')


def policy_has_indexes(text):
    """Whether ``apt-cache policy`` without arguments (LC_ALL=C) lists a package index besides dpkg's status, i.e.
    whether the node's own apt lists hold anything (an image or a node that never ran ``apt-get update`` lists only
    ``/var/lib/dpkg/status``, and every package looks unknown there)."""
    for line in (text or '').splitlines():
        if line.startswith('Pinned packages:'):
            break
        if _INDEX_LINE.match(line):
            return True
    return False


_FETCH_ERROR = re.compile(r'^E: Failed to fetch (\S+)\s+(.*?)\s*(?:\[IP: [^]]*\])?\s*$', re.M)


def fetch_error(text):
    """Why ``apt-get download`` (LC_ALL=C) could not fetch a package, from its output: "<HTTP status> (<URL>)",
    for example "404 Not Found (http://archive.ubuntu.com/.../x.deb)"; the first E: line otherwise; '' when
    there is none."""
    match = _FETCH_ERROR.search(text or '')
    if match:
        return '%s (%s)' % (' '.join(match.group(2).split()), match.group(1))
    for line in (text or '').splitlines():
        if line.startswith('E: '):
            return line[3:].strip()
    return ''


def parse_showhold(text):
    """Names from ``apt-mark showhold`` (one per line; an arch qualifier is kept as apt prints it)."""
    return [line.strip() for line in (text or '').splitlines() if line.strip()]


def gpg_primary_fingerprints(colons):
    """The primary keys' fingerprints in ``gpg --show-keys --with-colons`` output (the fpr line after each pub)."""
    found = []
    after_pub = False
    for line in (colons or '').splitlines():
        fields = line.split(':')
        if fields[0] == 'pub':
            after_pub = True
        elif fields[0] == 'sub':
            after_pub = False
        elif fields[0] == 'fpr' and after_pub and len(fields) > 9:
            found.append(fields[9].upper())
            after_pub = False
    return found
