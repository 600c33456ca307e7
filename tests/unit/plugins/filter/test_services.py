# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""running_services (plugins/filter/services.py) over ansible.builtin.service_facts' services, as that module
returns them for systemd (name -> name, state, status, source)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.baremetal.gpu.plugins.filter.services import running_services


def unit(name, state, status='enabled'):
    return {name: {'name': name, 'state': state, 'status': status, 'source': 'systemd'}}


SERVICES = {}
SERVICES.update(unit('nvidia-persistenced.service', 'running'))
SERVICES.update(unit('nvidia-fabricmanager.service', 'stopped'))
SERVICES.update(unit('dcgm.service', 'running', 'disabled'))
SERVICES.update(unit('ssh.service', 'running'))


def test_only_the_wanted_that_run_in_the_order_wanted():
    wanted = ['nvidia-dcgm', 'dcgm', 'nvidia-persistenced', 'nvidia-fabricmanager']
    assert running_services(SERVICES, wanted) == ['dcgm', 'nvidia-persistenced']


def test_names_with_or_without_the_suffix_and_nothing_twice():
    assert running_services(SERVICES, ['nvidia-persistenced.service', 'nvidia-persistenced']) == ['nvidia-persistenced']


def test_no_services_or_none_wanted():
    assert running_services({}, ['dcgm']) == []
    assert running_services(None, ['dcgm']) == []
    assert running_services(SERVICES, []) == []
