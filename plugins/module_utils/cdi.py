# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""CDI (Container Device Interface) specs and the runtimes that read them: pure functions.

A CDI spec file (tags.cncf.io/container-device-interface, SPEC.md) starts with its
``cdiVersion``. A runtime reads the spec versions that its vendored CDI library knows: the
library's ``specs-go`` ``CurrentVersion`` is the spec version of the same minor (library
v0.6.x reads up to 0.6.0, v0.8.x up to 0.8.0, v1.1.x up to 1.1.0; pkg/cdi/version.go keeps one
entry per released spec version and refuses others). A spec of a newer version than the library
knows is not loaded: NVIDIA/nvidia-container-toolkit#1940, toolkit 1.19.1 writing spec 0.7.0
broke podman 4.9 on Ubuntu 24.04 (CDI library 0.6.x).

Where a runtime's library version comes from, in order: the Go build information in its binary
(``dep<TAB>tags.cncf.io/container-device-interface<TAB>v1.1.0``, present in upstream and Ubuntu
builds), then the Debian package's ``Built-Using`` field (Debian builds against its
golang-tags.cncf-container-device-interface package and strips the build information).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.baremetal.gpu.plugins.module_utils.node_facts import parse_version

_SPEC_VERSION = re.compile(r'''(?:^|[{,\s])["']?cdiVersion["']?\s*:\s*["']?([0-9]+\.[0-9]+\.[0-9]+)''', re.M)
_SPEC_KIND = re.compile(r'''(?:^|[{,\s])["']?kind["']?\s*:\s*["']?([^"',\s}]+)''', re.M)
_BUILDINFO = re.compile(br'dep\t(?:tags\.cncf\.io|github\.com/container-orchestrated-devices)/container-device-interface'
                        br'\t(v[0-9]+\.[0-9]+\.[0-9]+)')
_BUILT_USING = re.compile(r'golang-(?:tags\.cncf|github-container-orchestrated-devices)-container-device-interface'
                          r'\s*\(=\s*([0-9]+\.[0-9]+\.[0-9]+)')
# Docker: CDI is an opt-in daemon feature ("features": {"cdi": true}) from Docker Engine 25.0
# (cncf-tags/container-device-interface#84), on by default from 28.2 (moby/moby#49963).
DOCKER_CDI_FIRST = (25, 0)
DOCKER_CDI_DEFAULT = (28, 2)


def _tuple(version):
    return tuple(int(p) for p in version.lstrip('v').split('.')[:3])


def spec_info(text):
    """{'version': '0.5.0', 'kind': 'nvidia.com/gpu'} from a spec (YAML or JSON); '' where absent."""
    version = _SPEC_VERSION.search(text or '')
    kind = _SPEC_KIND.search(text or '')
    return {'version': version.group(1) if version else '', 'kind': kind.group(1) if kind else ''}


def library_from_buildinfo(data):
    """The CDI library version ('1.1.0') from a Go binary's build information, or ''."""
    match = _BUILDINFO.search(data or b'')
    return match.group(1).decode('ascii').lstrip('v') if match else ''


def library_from_built_using(text):
    """The CDI library version ('0.8.0') from a Debian package's Built-Using field, or ''."""
    match = _BUILT_USING.search(text or '')
    return match.group(1) if match else ''


def max_spec_version(library):
    """The newest spec version a CDI library reads: its major.minor.0 ('0.8.0' for 0.8.0-5)."""
    major, minor = _tuple(library)[:2]
    return '%d.%d.0' % (major, minor)


def readable(spec_version, library):
    """(True/False/None, reason): whether a runtime with CDI library ``library`` reads spec ``spec_version``."""
    if not spec_version:
        return False, 'the spec has no cdiVersion'
    if not library:
        return None, 'the CDI library version of the runtime could not be read'
    newest = max_spec_version(library)
    if _tuple(spec_version) <= _tuple(newest):
        return True, 'spec %s <= %s, the newest its CDI library %s reads' % (spec_version, newest, library)
    return False, 'spec %s is newer than %s, the newest its CDI library %s reads' % (spec_version, newest, library)


def docker_cdi(version_text):
    """What a Docker Engine does with CDI, from ``dockerd --version``.

    Returns {'version', 'supported', 'default_on', 'feature_needed'}; version '' when none was found.
    """
    version = parse_version(version_text)
    if not version:
        return {'version': '', 'supported': False, 'default_on': False, 'feature_needed': False}
    release = _tuple(version)[:2]
    return {'version': version, 'supported': release >= DOCKER_CDI_FIRST, 'default_on': release >= DOCKER_CDI_DEFAULT,
            'feature_needed': DOCKER_CDI_FIRST <= release < DOCKER_CDI_DEFAULT}
