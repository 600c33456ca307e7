# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every module test drives a module's main(): exit_json and fail_json raise (utils.py) instead of exiting.
A test that checks the JSON the module really prints patches the real ones back in itself."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible.module_utils import basic

from ansible_collections.baremetal.gpu.tests.unit.plugins.modules.utils import exit_json, fail_json


@pytest.fixture(autouse=True)
def module_exits_raise(monkeypatch):
    monkeypatch.setattr(basic.AnsibleModule, 'exit_json', exit_json)
    monkeypatch.setattr(basic.AnsibleModule, 'fail_json', fail_json)
