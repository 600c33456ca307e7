# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the site registry: the chart values that move every image, one image moved, and the refusals of the
settings (plugins/module_utils/mirror.py); documented in the .yml files beside."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.baremetal.gpu.plugins.plugin_utils.lazy import LazyModule

mirror = LazyModule('mirror')


def image_mirror_values(chart, registry, pull_secrets=None):
    try:
        return mirror.mirror_values(chart, registry or '', pull_secrets or [])
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError('baremetal.gpu.image_mirror_values: %s' % exc)


def image_mirror(ref, registry):
    if not isinstance(ref, str):
        raise AnsibleFilterError('baremetal.gpu.image_mirror: an image reference is a string, got %s' % type(ref).__name__)
    return mirror.mirror_image(ref, registry or '')


def image_pull_secret_refs(names):
    return [{'name': name} for name in mirror.secret_names(names or [])]


def image_registry_errors(registry, pull_secrets=None):
    return mirror.registry_errors(registry, [] if pull_secrets is None else pull_secrets)


class FilterModule(object):

    def filters(self):
        return {
            'image_mirror_values': image_mirror_values,
            'image_mirror': image_mirror,
            'image_pull_secret_refs': image_pull_secret_refs,
            'image_registry_errors': image_registry_errors,
        }
