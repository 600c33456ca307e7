# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""desired_state: the inventory as the desired state of the driver branch.

The installed branch is read by gpu_node_facts from the captured Ubuntu 24.04 test node after a real DKMS
build of the open 580 driver (tests/fixtures/node-trees/ubuntu2404-node-580-open-dkms.tar, SOURCE.md there),
and the decision is taken with the role's real OS data (roles/nvidia_driver/vars)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import tarfile

import pytest

from ansible_collections.baremetal.gpu.plugins.module_utils import desired_state, driver_plan, node_facts
from ansible_collections.baremetal.gpu.tests.unit.plugins.module_utils.role_os_data import os_data as role_os_data

HERE = os.path.dirname(__file__)
TREES = os.path.join(HERE, '..', '..', '..', 'fixtures', 'node-trees')
TODAY = '2026-11-23'


class Recorded(object):
    """run() answering from the tree's commands/<name>.{rc,out}."""

    NAMES = {('lspci',): 'lspci', ('mokutil',): 'mokutil', ('dpkg-query',): 'dpkg-query',
             ('systemctl', 'is-enabled'): 'systemctl-is-enabled'}

    def __init__(self, tree):
        self.tree = tree

    def __call__(self, argv):
        key = tuple(argv[:2]) if argv[0] == 'systemctl' else (os.path.basename(argv[0]),)
        name = self.NAMES.get(key)
        base = os.path.join(self.tree, 'commands', name or 'none')
        if name and os.path.exists(base + '.rc'):
            with open(base + '.rc') as rc, open(base + '.out') as out:
                return int(rc.read().strip()), out.read(), ''
        return None, '', '%s not found' % argv[0]


@pytest.fixture
def node_580(tmp_path):
    dest = os.path.join(str(tmp_path), 'tree')
    with tarfile.open(os.path.join(TREES, 'ubuntu2404-node-580-open-dkms.tar')) as archive:
        archive.extractall(dest)
    return node_facts.gather(dest, Recorded(dest), lambda _name: None, '6.18.44-fc-v669')


def os_data(name):
    return role_os_data(name)


def settings(**over):
    base = {'branch': None, 'version': None, 'flavor': 'desktop', 'kernel_module': 'auto', 'module_build': 'auto',
            'source': 'distro', 'secure_boot': 'fail', 'allow_eol_branch': True, 'allow_downgrade': False}
    base.update(over)
    return base


def test_installed_branches_from_the_captured_node(node_580):
    assert desired_state.installed_branches(node_580) == ['580']
    assert desired_state.installed_branches({'driver_installed_versions': ['595.45.04', '580.178.04']}) == ['580', '595']
    assert desired_state.installed_branches({}) == []


def test_unset_branch_keeps_the_installed_one_not_the_os_default(node_580):
    # Debian 12's default is 535: a node with 580 installed keeps 580 (the OS default is for a first install).
    out = desired_state.desired_branch(None, desired_state.installed_branches(node_580), '535')
    assert out['branch'] == '580' and out['source'] == 'installed' and out['errors'] == []
    assert 'the installed branch is kept' in out['message']


def test_after_an_upgrade_a_routine_run_keeps_595():
    # The defect of upgrade_driver.yml moved the node to 595, then site.yml with nvidia_driver_branch
    # unset planned the OS default (580) and purged 595.
    out = desired_state.desired_branch('', ['595'], '580')
    assert out['branch'] == '595' and out['source'] == 'installed'


def test_first_install_takes_the_os_default():
    out = desired_state.desired_branch(None, [], '580')
    assert out['branch'] == '580' and out['source'] == 'default'


def test_a_named_branch_is_the_desired_state_upwards():
    out = desired_state.desired_branch('595', ['580'], '580')
    assert out['branch'] == '595' and out['source'] == 'inventory' and out['errors'] == [] and not out['downgrade']


def test_a_downgrade_is_refused_naming_both_branches_and_the_flag():
    out = desired_state.desired_branch('570', ['580'], '580')
    assert out['downgrade'] is True
    assert out['errors'] == ['nvidia_driver_branch 570 is lower than the installed branch 580: a downgrade needs '
                             'nvidia_driver_allow_downgrade: true (or set nvidia_driver_branch to 580 or higher). '
                             'Nothing was changed']
    allowed = desired_state.desired_branch('570', ['580'], '580', allow_downgrade=True)
    assert allowed['errors'] == [] and allowed['branch'] == '570' and 'allowed by nvidia_driver_allow_downgrade' in allowed['message']


def test_half_done_change_compares_with_the_highest_installed():
    assert desired_state.desired_branch(None, ['580', '595'], '580')['branch'] == '595'
    assert desired_state.desired_branch('580', ['580', '595'], '580')['errors']


def test_driver_plan_keeps_the_installed_branch_of_the_captured_node(node_580):
    plan = driver_plan.plan(settings(), os_data('Debian-12'), node_580, today=TODAY)
    assert plan['branch'] == '580' and plan['branch_source'] == 'installed' and plan['branch_defaulted'] is False
    first = driver_plan.plan(settings(), os_data('Debian-12'), dict(node_580, driver_installed_branches=[],
                                                                    driver_installed_versions=[]), today=TODAY)
    assert first['branch'] == '535' and first['branch_source'] == 'default' and first['branch_defaulted'] is True


def test_driver_plan_refuses_a_downgrade_before_any_change(node_580):
    plan = driver_plan.plan(settings(branch='570'), os_data('Ubuntu'), node_580, today=TODAY)
    assert plan['ok'] is False
    assert any('nvidia_driver_branch 570 is lower than the installed branch 580' in e for e in plan['errors'])
    ok = driver_plan.plan(settings(branch='570', allow_downgrade=True), os_data('Ubuntu'), node_580, today=TODAY)
    assert not any('lower than the installed' in e for e in ok['errors'])


def test_a_version_pin_without_a_branch_names_its_branch(node_580):
    plan = driver_plan.plan(settings(version='595.45.04'), os_data('Ubuntu'), node_580, today=TODAY)
    assert plan['branch'] == '595' and plan['branch_source'] == 'inventory'


# ---- upgrade_driver_branch against the inventory -------------------------------------------------------

def test_upgrade_branch_alone_is_the_target():
    out = desired_state.upgrade_target('595', None)
    assert out['branch'] == '595' and out['source'] == 'upgrade_driver_branch' and out['errors'] == []


def test_the_inventory_wins_and_an_equal_upgrade_branch_is_fine():
    assert desired_state.upgrade_target(None, '595')['branch'] == '595'
    same = desired_state.upgrade_target('595', 595)
    assert same['branch'] == '595' and same['source'] == 'inventory' and same['errors'] == []


def test_a_conflict_is_refused_naming_both_variables():
    out = desired_state.upgrade_target('595', '580')
    assert out['branch'] == ''
    assert out['errors'][0].startswith('upgrade_driver_branch 595 conflicts with nvidia_driver_branch 580 pinned in '
                                       'the inventory')


def test_neither_is_refused():
    out = desired_state.upgrade_target('', None)
    assert 'neither upgrade_driver_branch nor nvidia_driver_branch is set' in out['errors'][0]
