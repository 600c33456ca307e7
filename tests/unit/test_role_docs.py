# Copyright (c) baremetal.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""scripts/role-docs.py writes the one-line defaults that meta/argument_specs.yml restates from defaults/main.yml
(so that a default, a chart pin among them, is edited in one place), and leaves anything else to its check."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib.util
import os

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
SPEC = importlib.util.spec_from_file_location('role_docs', os.path.join(ROOT, 'scripts', 'role-docs.py'))
role_docs = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(role_docs)

ARGUMENT_SPECS = '''---
argument_specs:
  main:
    short_description: A role.
    options:
      demo_chart_version:
        type: str
        default: 0.20.0
        description: The pin.
      demo_enabled:
        type: bool
        default: true
        description: A switch.
      demo_list:
        type: list
        elements: str
        default: [a]
        description: A list.
  uninstall:
    short_description: Its uninstall.
    options:
      demo_chart_version:
        type: str
        default: 0.20.0
        description: The pin again.
'''


def write_role(tmp_path, defaults):
    role = tmp_path / 'demo'
    (role / 'meta').mkdir(parents=True)
    (role / 'defaults').mkdir()
    (role / 'meta' / 'argument_specs.yml').write_text(ARGUMENT_SPECS)
    (role / 'defaults' / 'main.yml').write_text(yaml.safe_dump(defaults))
    return role


def test_a_bump_in_the_defaults_reaches_every_entry_point(tmp_path):
    role = write_role(tmp_path, {'demo_chart_version': '0.20.1', 'demo_enabled': False, 'demo_list': ['a']})
    role_docs.sync_spec_defaults(str(role))
    specs = yaml.safe_load((role / 'meta' / 'argument_specs.yml').read_text())['argument_specs']
    assert specs['main']['options']['demo_chart_version']['default'] == '0.20.1'
    assert specs['uninstall']['options']['demo_chart_version']['default'] == '0.20.1'
    assert specs['main']['options']['demo_enabled']['default'] is False
    # Everything else as it was, byte for byte.
    assert (role / 'meta' / 'argument_specs.yml').read_text() == (
        ARGUMENT_SPECS.replace('default: 0.20.0', 'default: 0.20.1').replace('default: true', 'default: false'))


def test_a_string_that_reads_as_a_number_stays_a_string(tmp_path):
    role = write_role(tmp_path, {'demo_chart_version': '1.0', 'demo_enabled': True, 'demo_list': ['a']})
    role_docs.sync_spec_defaults(str(role))
    specs = yaml.safe_load((role / 'meta' / 'argument_specs.yml').read_text())['argument_specs']
    assert specs['main']['options']['demo_chart_version']['default'] == '1.0'


def test_a_list_that_differs_is_left_to_the_check(tmp_path):
    role = write_role(tmp_path, {'demo_chart_version': '0.20.0', 'demo_enabled': True, 'demo_list': ['b']})
    role_docs.sync_spec_defaults(str(role))
    assert (role / 'meta' / 'argument_specs.yml').read_text() == ARGUMENT_SPECS
    assert any('default of demo_list differs' in e for e in role_docs.check_entry_points(str(role)))
    assert any('default of demo_list differs' in e for e in role_docs.check_role(str(role), False))
