# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""toolkit_packages_to_purge: the one answer of container_toolkit's uninstall and the uninstall plan: the toolkit
packages installed now that container_toolkit's install recorded as its own."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.baremetal.gpu.plugins.filter import uninstall

# package_facts' shape (name -> list of installed versions), trimmed: a node with the toolkit and containerd.
PACKAGES = {
    'containerd': [{'name': 'containerd', 'version': '2.2.1-0ubuntu1~24.04.1', 'source': 'apt'}],
    'libnvidia-container1': [{'name': 'libnvidia-container1', 'version': '1.18.2-1', 'source': 'apt'}],
    'nvidia-container-toolkit': [{'name': 'nvidia-container-toolkit', 'version': '1.18.2-1', 'source': 'apt'}],
    'nvidia-container-toolkit-base': [{'name': 'nvidia-container-toolkit-base', 'version': '1.18.2-1', 'source': 'apt'}],
}


ALL = ['nvidia-container-toolkit', 'nvidia-container-toolkit-base', 'libnvidia-container-tools', 'libnvidia-container1']


def test_installed_and_recorded_toolkit_packages_in_the_support_order():
    assert uninstall.toolkit_packages_to_purge(PACKAGES, True, ALL) == [
        'nvidia-container-toolkit', 'nvidia-container-toolkit-base', 'libnvidia-container1']
    assert uninstall.toolkit_packages_to_purge(['containerd', 'libnvidia-container-tools'], True, ALL) == [
        'libnvidia-container-tools']


def test_a_toolkit_the_node_had_before_the_role_is_never_purged():
    # The node had libnvidia-container1 when the role came: the install recorded only what it added.
    recorded = ['nvidia-container-toolkit', 'nvidia-container-toolkit-base', 'libnvidia-container-tools']
    assert uninstall.toolkit_packages_to_purge(PACKAGES, True, recorded) == [
        'nvidia-container-toolkit', 'nvidia-container-toolkit-base']
    # No record at all (installed by hand, or by a release older than the record): nothing is the role's.
    assert uninstall.toolkit_packages_to_purge(PACKAGES) == []
    assert uninstall.toolkit_packages_to_purge(PACKAGES, True, None) == []
    # The record was written before the install that a kill stopped: nothing installed, nothing to purge.
    assert uninstall.toolkit_packages_to_purge({'containerd': []}, True, ALL) == []


@pytest.mark.parametrize('enabled', [False, 'false', 'no', 0])
def test_none_when_the_uninstall_keeps_the_packages(enabled):
    assert uninstall.toolkit_packages_to_purge(PACKAGES, enabled, ALL) == []


def test_nothing_installed_and_bad_inputs():
    assert uninstall.toolkit_packages_to_purge({}, True, ALL) == []
    assert uninstall.toolkit_packages_to_purge(None, 'true', ALL) == []
    with pytest.raises(AnsibleFilterError, match='container_toolkit_uninstall_packages must be a boolean'):
        uninstall.toolkit_packages_to_purge(PACKAGES, 'sometimes', ALL)
    with pytest.raises(AnsibleFilterError, match='expects package_facts'):
        uninstall.toolkit_packages_to_purge('nvidia-container-toolkit', True, ALL)
    with pytest.raises(AnsibleFilterError, match='recorded must be the list of package names'):
        uninstall.toolkit_packages_to_purge(PACKAGES, True, 'nvidia-container-toolkit')
