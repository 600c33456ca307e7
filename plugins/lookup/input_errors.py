# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
name: input_errors
short_description: The refusals of a role's input rule table, read against the role's variables
version_added: 0.5.0
description:
  - A role's input checks are data, a rule table in its C(vars/main.yml). This lookup reads each rule's
    variable (unset is null) and returns the message of every rule the values fail, in the table's order; the role
    refuses before any change when the list is not empty.
  - "Each rule has C(var) (the variable), C(check) and C(message) (C({value}) in it is replaced by the value as Jinja's
    C(~) writes it). Checks: C(regex) (C(pattern), matched from the start; C(trim)), C(absolute_path), C(not_empty),
    C(int_min) (C(min)), C(int_range) (C(min), C(max)), C(digits) (C(trim), C(positive)), C(removed) (the variable
    must not be set), C(renamed) (the variable must not be set: its new name is C(to), and the message, which may be
    left out, says so), C(ok) (C(ok) is a condition the role computed over several variables). C(empty_ok) lets an
    empty or unset value pass, C(none_ok) an unset (null) one."
  - A table that names an unknown check or lacks a key fails as an error of the role, not of the user. The checks
    are C(plugins/module_utils/input_rules.py), with unit tests.
author:
  - baremetal.gpu maintainers (@baremetal-gpu)
options:
  _terms:
    description: The rule table (one list), or its rules.
    required: true
    type: list
    elements: dict
"""

EXAMPLES = r"""
- name: Refuse bad input before any change
  ansible.builtin.assert:
    that: __errors | length == 0
    fail_msg: "{{ __errors | join('; ') }}. Nothing was changed."
  vars:
    __rules:
      - {var: node_maintenance_state_dir, check: absolute_path, message: 'node_maintenance_state_dir must be an absolute path, got "{value}"'}
    __errors: "{{ query('baremetal.gpu.input_errors', __rules) }}"
"""

RETURN = r"""
_raw:
  description: The messages of the failed rules; empty when every rule passes.
  type: list
  elements: str
"""

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.baremetal.gpu.plugins.module_utils import input_rules


class LookupModule(LookupBase):

    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        rules = []
        for term in terms:
            rules.extend(term if isinstance(term, list) else [term])
        variables = variables or {}
        values = {}
        for rule in rules:
            name = rule.get('var') if hasattr(rule, 'get') else None
            if name and name in variables and name not in values:
                values[name] = self._templar.template(variables[name])
        try:
            return input_rules.errors(rules, values)
        except input_rules.RuleError as exc:
            raise AnsibleLookupError('baremetal.gpu.input_errors: %s' % exc)
