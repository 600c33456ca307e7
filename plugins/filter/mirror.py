# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of air-gapped sites: the chart values that move every image to the site's registry, one image moved, the
refusals of the settings, and the list of what to mirror (plugins/module_utils/mirror.py); documented in the .yml
files beside."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import yaml

from ansible.errors import AnsibleFilterError

from ansible_collections.baremetal.gpu.plugins.plugin_utils.lazy import LazyModule

mirror = LazyModule('mirror')


class _Loader(getattr(yaml, 'CSafeLoader', yaml.SafeLoader)):
    """YAML 1.1's ``=`` (the value tag), as a plain string: CRDs list it among enum values."""


_Loader.add_constructor('tag:yaml.org,2002:value', lambda loader, node: loader.construct_scalar(node))


def image_mirror_values(chart, registry, pull_secrets=None, mapping=None):
    try:
        return mirror.mirror_values(chart, registry or '', pull_secrets or [], mapping or {})
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError('baremetal.gpu.image_mirror_values: %s' % exc)


def image_mirror(ref, registry, mapping=None):
    if not isinstance(ref, str):
        raise AnsibleFilterError('baremetal.gpu.image_mirror: an image reference is a string, got %s' % type(ref).__name__)
    try:
        return mirror.mirror_image(ref, registry or '', mapping or {})
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError('baremetal.gpu.image_mirror: %s' % exc)


def image_pull_secret_refs(names):
    return [{'name': name} for name in mirror.secret_names(names or [])]


def image_mirror_list(releases, manifests, extra_images=None, registry='', mapping=None):
    try:
        if len(releases) != len(manifests):
            raise ValueError('%d releases but %d rendered manifests' % (len(releases), len(manifests)))
        parsed = [dict(release, objects=[doc for doc in yaml.load_all(text or '', Loader=_Loader) if isinstance(doc, dict)])
                  for release, text in zip(releases, manifests)]
        return mirror.mirror_list(parsed, list(extra_images or []), registry or '', mapping or {})
    except (KeyError, TypeError, ValueError, yaml.YAMLError) as exc:
        raise AnsibleFilterError('baremetal.gpu.image_mirror_list: %s' % exc)


def image_mirror_list_text(data):
    try:
        return mirror.mirror_list_text(data)
    except (KeyError, TypeError) as exc:
        raise AnsibleFilterError('baremetal.gpu.image_mirror_list_text: %s' % exc)


def host_mirror_list(entries):
    try:
        return mirror.host_mirror_list(list(entries or []))
    except (AttributeError, KeyError, TypeError) as exc:
        raise AnsibleFilterError('baremetal.gpu.host_mirror_list: %s' % exc)


def image_registry_errors(registry, pull_secrets=None, mapping=None):
    return mirror.registry_errors(registry, [] if pull_secrets is None else pull_secrets, mapping)


class FilterModule(object):

    def filters(self):
        return {
            'image_mirror_values': image_mirror_values,
            'host_mirror_list': host_mirror_list,
            'image_mirror': image_mirror,
            'image_mirror_list': image_mirror_list,
            'image_mirror_list_text': image_mirror_list_text,
            'image_pull_secret_refs': image_pull_secret_refs,
            'image_registry_errors': image_registry_errors,
        }
