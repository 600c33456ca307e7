#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: apt_sources_info
short_description: Read a node's apt sources, the components it lacks, and what apt knows about some packages
version_added: 0.2.0
description:
  - Reads the node's apt sources (C(/etc/apt/sources.list), C(/etc/apt/sources.list.d/*.list) one-line files and
    C(*.sources) deb822 files) and returns, for the node's own mirror of O(release), the entries that would enable
    O(components) in O(release) and each of O(suite_suffixes). Each such entry carries the options (C(Signed-By),
    C(Architectures), ...) of the node's own entry for that mirror, because apt refuses every operation when two
    entries of one source disagree on C(Signed-By).
  - Asks apt (C(apt-cache policy)) which versions of O(packages) are installed and available. When the lacking
    entries are not yet in place (O(own_file) does not hold them) and O(probe) is true, the answer comes from a
    private copy of apt's state that includes them (their indices are downloaded into a temporary directory, which is
    removed afterwards), so the node's apt configuration and lists are not changed.
  - Also returns the packages on hold (C(apt-mark showhold)). Nothing on the node changes; it runs in check mode too.
  - With O(fetch), downloads the named packages' files into a temporary directory (removed afterwards) to tell a
    listed package the archive cannot serve from one it can.
author:
  - baremetal.gpu maintainers (@baremetal-gpu)
requirements:
  - Debian or Ubuntu (apt, apt-cache, apt-mark, coreutils C(timeout)).
extends_documentation_fragment:
  - baremetal.gpu.attributes
attributes:
  platform:
    platforms: debian
options:
  release:
    description: The release suite whose mirror is extended, for example C(noble) or C(trixie).
    type: str
    required: true
  suite_suffixes:
    description: Suites to cover, as suffixes of O(release); the empty string is O(release) itself.
    type: list
    elements: str
    default: ['']
  components:
    description: The components every covered suite must have on the node's mirror, for example C(main) and C(restricted).
    type: list
    elements: str
    default: []
  own_file:
    description:
      - The deb822 file the caller writes the lacking entries to. It is left out when the lacking entries are worked
        out, and compared with them (RV(in_place)).
    type: path
  exclude:
    description: Further sources files to leave out (for example one an older release of the caller wrote).
    type: list
    elements: path
    default: []
  packages:
    description: Packages to ask apt about.
    type: list
    elements: str
    default: []
  probe:
    description:
      - When the lacking entries are not in place yet, ask about O(packages) against a private apt state that
        includes them (downloads their indices into a temporary directory). False asks the node's own apt lists only.
    type: bool
    default: true
  timeout:
    description: Seconds the private C(apt-get update) may take before it is stopped and the module fails.
    type: int
    default: 300
  fetch:
    description:
      - Of O(packages), those whose candidate file is downloaded to prove the archive serves it (C(apt-get download)
        into a temporary directory, removed afterwards; the same private apt state as the answer about O(packages)).
        An index can list a package whose file the archive does not serve (seen on noble-updates on 2026-11-25 for
        C(linux-modules-nvidia-580-open-6.8.0-151-generic), answered 404). Installed packages and packages without a candidate
        are not downloaded. The result is RV(fetch_errors).
    type: list
    elements: str
    default: []
  node_packages:
    description:
      - Packages asked of the node's own apt lists (C(apt-cache policy), read-only) whatever O(probe) does. These are
        packages the node's present sources carry, which a private probe of the lacking entries alone does not see
        (the Secure Boot signing tools C(mokutil) and C(openssl) from the main component on a first run). The result
        is RV(node_packages).
      - Only lists that hold a package index answer (RV(node_lists)); on a node that never ran C(apt-get update) every
        package would look unknown, so RV(node_packages) stays empty there.
    type: list
    elements: str
    default: []
    version_added: 0.4.0
  depends_prefix:
    description:
      - A package name prefix, for example C(nvidia-driver-). Every package whose name starts with it (C(apt-cache pkgnames)) is
        asked what it depends on (C(apt-cache depends), the same apt state as the answer about O(packages)), so that a
        caller can tell the branches the archive really ships from its transitional packages. The result is
        RV(branch_depends).
    type: str
    version_added: 0.5.0
notes:
  - The private probe uses C(-o Dir::Etc::SourceList), C(Dir::Etc::SourceParts), C(Dir::State::Lists) and C(Dir::Cache)
    pointing into a temporary directory; the installed state comes from the node's dpkg status as usual.
seealso:
  - plugin: baremetal.gpu.driver_plan
    plugin_type: filter
"""

EXAMPLES = r"""
- name: What Ubuntu 24.04 lacks for the NVIDIA driver, and whether a prebuilt module exists for its kernel
  baremetal.gpu.apt_sources_info:
    release: noble
    suite_suffixes: ['', -updates, -security]
    components: [main, restricted, universe, multiverse]
    own_file: /etc/apt/sources.list.d/baremetal-gpu-nvidia-driver.sources
    packages: [linux-modules-nvidia-580-open-6.8.0-149-generic]
  register: apt_info
"""

RETURN = r"""
files:
  description: The sources files read (after O(own_file) and O(exclude) were left out).
  returned: always
  type: list
  elements: str
  sample: [/etc/apt/sources.list.d/ubuntu.sources]
mirrors:
  description: The URIs of the node's own entries for O(release).
  returned: always
  type: list
  elements: str
  sample: [http://archive.ubuntu.com/ubuntu]
missing:
  description: The entries that would complete the node's sources (type, uri, suite, components, options).
  returned: always
  type: list
  elements: dict
deb822:
  description: RV(missing) as the text of a deb822 sources file; empty when nothing lacks.
  returned: always
  type: str
  sample: |
    Types: deb
    URIs: http://archive.ubuntu.com/ubuntu
    Suites: noble noble-updates noble-security
    Components: restricted multiverse
    Signed-By: /usr/share/keyrings/ubuntu-archive-keyring.gpg
in_place:
  description: True when O(own_file) already holds exactly RV(missing) (or nothing lacks and it is absent).
  returned: always
  type: bool
packages:
  description: What apt knows about each of O(packages) it knows (unknown packages are absent).
  returned: always
  type: dict
  sample: {"linux-modules-nvidia-580-open-6.8.0-149-generic": {"installed": null, "candidate": "6.8.0-149.149",
           "versions": ["6.8.0-149.149"]}}
package_source:
  description: Where RV(packages) came from, V(node) (the node's apt lists), V(private) (a private probe) or V(none).
  returned: always
  type: str
held:
  description: Packages on hold (C(apt-mark showhold)).
  returned: always
  type: list
  elements: str
node_packages:
  description: What the node's own apt lists know about each of O(node_packages); one the lists do not know has no
    installed version, no candidate and no versions.
  returned: always
  type: dict
  sample: {"mokutil": {"installed": null, "candidate": "0.6.0-2build3", "versions": ["0.6.0-2build3"]}}
  version_added: 0.4.0
node_lists:
  description: Whether the node's own apt lists hold a package index (C(apt-cache policy) lists one besides dpkg's
    status); asked only when O(node_packages) is given, else V(null). When V(false), RV(node_packages) is empty.
  returned: always
  type: bool
  sample: true
  version_added: 0.4.0
branch_depends:
  description:
    - The C(apt-cache depends) text of the packages named with O(depends_prefix), cut to each package's line and its
      direct dependencies on packages with the same prefix (what tells a transitional package); empty without
      O(depends_prefix). The filter P(baremetal.gpu.apt_real_branches#filter) reads it.
  returned: always
  type: str
  sample: "nvidia-driver-570-open\n  Depends: nvidia-driver-580-open\nnvidia-driver-580-open\n"
  version_added: 0.5.0
fetch_errors:
  description: Of O(fetch), the packages whose file could not be downloaded, with why (the HTTP status and the URL).
  returned: always
  type: dict
  sample: {"linux-modules-nvidia-580-open-6.8.0-151-generic": "404 Not Found (http://archive.ubuntu.com/ubuntu/pool/restricted/l/\
           linux-restricted-signatures/linux-modules-nvidia-580-open-6.8.0-151-generic_6.8.0-151.151_amd64.deb)"}
"""

import glob
import os
import shutil
import tempfile

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.baremetal.gpu.plugins.module_utils import apt as aptlib

SOURCES_LIST = '/etc/apt/sources.list'
SOURCES_DIR = '/etc/apt/sources.list.d'
ENV = {'LC_ALL': 'C', 'LANG': 'C'}


def read_text(path):
    with open(path, 'rb') as handle:
        return handle.read().decode('utf-8', 'replace')


def entry_key(entry):
    return (entry['type'], entry['uri'].rstrip('/'), entry['suite'], tuple(entry['components']),
            tuple(sorted(entry['options'].items())))


def fetch_errors(module, options, names, packages, timeout):
    """Download each of ``names`` that has a candidate and is not installed into a temporary directory; return
    {name: why} for those that could not be fetched."""
    errors = {}
    todo = [n for n in names if (packages.get(n) or {}).get('candidate') and not (packages.get(n) or {}).get('installed')]
    if not todo:
        return errors
    work = tempfile.mkdtemp(prefix='baremetal-gpu-fetch-')
    try:
        for name in todo:
            cmd = [module.get_bin_path('timeout', required=True), str(timeout),
                   module.get_bin_path('apt-get', required=True)] + options + [
                '-o', 'APT::Sandbox::User=root', '-o', 'Debug::NoLocking=1', 'download', name]
            rc, out, err = module.run_command(cmd, environ_update=ENV, cwd=work)
            if rc != 0:
                errors[name] = aptlib.fetch_error(out + '\n' + err) or (
                    'timed out after %d s' % timeout if rc == 124 else 'apt-get download rc %d' % rc)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return errors


def apt_cache_policy(module, options, packages):
    """``apt-cache [options] policy [packages]`` (read-only); its output, or the module fails naming the command."""
    cmd = [module.get_bin_path('apt-cache', required=True)] + options + ['policy'] + packages
    rc, out, err = module.run_command(cmd, environ_update=ENV)
    if rc != 0:
        module.fail_json(msg='apt-cache policy failed (rc %d): %s' % (rc, err.strip()), cmd=cmd, rc=rc,
                         stdout=out, stderr=err)
    return out


def branch_depends(module, options, prefix):
    """``apt-cache depends`` of every package named ``prefix``*, cut to the package lines and their direct dependencies
    on packages with the same prefix (read-only); '' without a prefix or when apt knows none."""
    if not prefix:
        return ''
    apt_cache = module.get_bin_path('apt-cache', required=True)
    rc, out, err = module.run_command([apt_cache] + options + ['pkgnames', prefix], environ_update=ENV)
    names = sorted(set(line.strip() for line in out.splitlines() if line.strip())) if rc == 0 else []
    if not names:
        return ''
    cmd = [apt_cache] + options + ['depends', '--no-recommends', '--no-suggests', '--no-conflicts', '--no-breaks',
                                   '--no-replaces', '--no-enhances'] + names
    rc, out, err = module.run_command(cmd, environ_update=ENV)
    if rc != 0:
        module.fail_json(msg='apt-cache depends failed (rc %d): %s' % (rc, err.strip()), cmd=cmd, rc=rc)
    return aptlib.cut_depends(out, prefix)


def private_probe(module, entries, packages, timeout, fetch, prefix=''):
    work = tempfile.mkdtemp(prefix='baremetal-gpu-apt-')
    try:
        for sub in ('parts', 'lists/partial', 'cache/archives/partial'):
            os.makedirs(os.path.join(work, sub))
        with open(os.path.join(work, 'parts', 'probe.sources'), 'w') as handle:
            handle.write(aptlib.render_deb822(entries))
        options = []
        for key, value in (('Dir::Etc::SourceList', '/dev/null'), ('Dir::Etc::SourceParts', os.path.join(work, 'parts')),
                           ('Dir::State::Lists', os.path.join(work, 'lists')), ('Dir::Cache', os.path.join(work, 'cache')),
                           ('Acquire::Languages', 'none'), ('Debug::NoLocking', '1'), ('APT::Sandbox::User', 'root')):
            options += ['-o', '%s=%s' % (key, value)]
        update = [module.get_bin_path('timeout', required=True), str(timeout),
                  module.get_bin_path('apt-get', required=True)] + options + ['update']
        rc, out, err = module.run_command(update, environ_update=ENV)
        if rc != 0:
            module.fail_json(msg='apt-get update of the private probe failed (rc %d%s): %s'
                             % (rc, ', timed out after %d s' % timeout if rc == 124 else '', (err or out).strip()),
                             cmd=update, rc=rc, stdout=out, stderr=err)
        known = aptlib.parse_policy(apt_cache_policy(module, options, packages))
        return known, fetch_errors(module, options, fetch, known, timeout), branch_depends(module, options, prefix)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            release=dict(type='str', required=True),
            suite_suffixes=dict(type='list', elements='str', default=['']),
            components=dict(type='list', elements='str', default=[]),
            own_file=dict(type='path'),
            exclude=dict(type='list', elements='path', default=[]),
            packages=dict(type='list', elements='str', default=[]),
            probe=dict(type='bool', default=True),
            timeout=dict(type='int', default=300),
            fetch=dict(type='list', elements='str', default=[]),
            node_packages=dict(type='list', elements='str', default=[]),
            depends_prefix=dict(type='str'),
        ),
        supports_check_mode=True,
    )
    params = module.params
    own = params['own_file']
    skip = set([own] if own else []) | set(params['exclude'])
    paths = ([SOURCES_LIST] if os.path.exists(SOURCES_LIST) else []) + sorted(
        glob.glob(os.path.join(SOURCES_DIR, '*.list')) + glob.glob(os.path.join(SOURCES_DIR, '*.sources')))
    files = [p for p in paths if p not in skip]
    try:
        entries = aptlib.parse_sources([{'path': p, 'content': read_text(p)} for p in files])
        result = aptlib.missing_sources(entries, params['release'], params['suite_suffixes'], params['components'])
        own_entries = []
        if own and os.path.exists(own):
            own_entries = aptlib.parse_deb822(read_text(own), own)
    except (aptlib.SourcesError, IOError, OSError) as exc:
        module.fail_json(msg='cannot read the apt sources: %s' % exc)
    missing = result['missing']
    in_place = sorted(entry_key(e) for e in own_entries) == sorted(entry_key(e) for e in missing)

    packages, source, fetch_failed, depends = {}, 'none', {}, ''
    fetch = [name for name in params['fetch'] if name in params['packages']]
    if params['packages']:
        if missing and not in_place and params['probe']:
            (packages, fetch_failed, depends), source = private_probe(
                module, missing, params['packages'], params['timeout'], fetch, params['depends_prefix']), 'private'
        else:
            packages, source = aptlib.parse_policy(apt_cache_policy(module, [], params['packages'])), 'node'
            fetch_failed = fetch_errors(module, [], fetch, packages, params['timeout'])
            depends = branch_depends(module, [], params['depends_prefix'])
    node_packages, node_lists = {}, None
    if params['node_packages']:
        # Without arguments apt-cache policy lists the node's package files: are there any besides dpkg's status?
        node_lists = aptlib.policy_has_indexes(apt_cache_policy(module, [], []))
    if node_lists:
        known = aptlib.parse_policy(apt_cache_policy(module, [], params['node_packages']))
        node_packages = dict((name, known.get(name) or {'installed': None, 'candidate': None, 'versions': []})
                             for name in params['node_packages'])
    rc, out, err = module.run_command([module.get_bin_path('apt-mark', required=True), 'showhold'], environ_update=ENV)
    held = aptlib.parse_showhold(out) if rc == 0 else []
    module.exit_json(changed=False, files=files, mirrors=result['mirrors'], missing=missing,
                     deb822=aptlib.render_deb822(missing), in_place=in_place, packages=packages,
                     package_source=source, held=held, fetch_errors=fetch_failed, node_packages=node_packages,
                     node_lists=node_lists, branch_depends=depends)


if __name__ == '__main__':
    main()
