# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for the host layer's uninstall; documented in the .yml files beside."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.baremetal.gpu.plugins.plugin_utils.lazy import LazyModule

host_uninstall = LazyModule('host_uninstall')


def apt_history_installed(text, commandline_regex):
    if not commandline_regex:
        raise AnsibleFilterError('baremetal.gpu.apt_history_installed: a Commandline regex is required')
    return host_uninstall.apt_history_installed(text or '', commandline_regex)


def dpkg_not_purged(text):
    if not isinstance(text, str):
        raise AnsibleFilterError('baremetal.gpu.dpkg_not_purged: expects the text dpkg-query printed, got %s'
                                 % type(text).__name__)
    return host_uninstall.dpkg_not_purged(text)


def containerd_config_restore(text, import_entry, dropin, others=None, modified=False):
    return host_uninstall.containerd_config_restore(text, import_entry, dropin, others or [], bool(modified))


def docker_daemon_restore(data, runtime_name, binary):
    if not isinstance(data, dict):
        raise AnsibleFilterError('baremetal.gpu.docker_daemon_restore: daemon.json must be a JSON object, got %s'
                                 % type(data).__name__)
    return host_uninstall.docker_daemon_restore(data, runtime_name, binary)


def toolkit_packages_to_purge(installed, enabled=True, recorded=None):
    try:
        enabled = boolean(enabled, strict=True)
    except TypeError as exc:
        raise AnsibleFilterError('baremetal.gpu.toolkit_packages_to_purge: container_toolkit_uninstall_packages must '
                                 'be a boolean: %s' % exc)
    if installed is not None and not isinstance(installed, (dict, list)):
        raise AnsibleFilterError('baremetal.gpu.toolkit_packages_to_purge: expects package_facts (a dict) or a list '
                                 'of names, got %s' % type(installed).__name__)
    if recorded is not None and not isinstance(recorded, list):
        raise AnsibleFilterError('baremetal.gpu.toolkit_packages_to_purge: recorded must be the list of package names '
                                 'the install recorded, or None; got %s' % type(recorded).__name__)
    return host_uninstall.toolkit_packages_to_purge(installed, enabled, recorded)


def dkms_builds_to_remove(builds, versions):
    if not isinstance(builds, list) or not isinstance(versions or {}, dict):
        raise AnsibleFilterError('baremetal.gpu.dkms_builds_to_remove: expects the DKMS builds (a list) and the '
                                 'versions of apt_history_installed (a dict)')
    return host_uninstall.dkms_builds_to_remove(builds, versions)


class FilterModule(object):

    def filters(self):
        return {
            'apt_history_installed': apt_history_installed,
            'containerd_config_restore': containerd_config_restore,
            'dkms_builds_to_remove': dkms_builds_to_remove,
            'docker_daemon_restore': docker_daemon_restore,
            'dpkg_not_purged': dpkg_not_purged,
            'toolkit_packages_to_purge': toolkit_packages_to_purge,
        }
