# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugins/module_utils/input_rules.py: the checks of the roles' input rule tables (lookup baremetal.gpu.input_errors).

The values are what users give: YAML types from an inventory, and strings from -e key=value.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.baremetal.gpu.plugins.module_utils import input_rules

COUNT_RE = r'^(0*[1-9][0-9]*|0*([1-9][0-9]?|100)%)$'   # roles/upgrade/vars/main.yml, __node_maintenance_count_re


def one(rule, value):
    return input_rules.errors([dict(rule, var='v', message='v is wrong, got "{value}"')], {'v': value})


@pytest.mark.parametrize('value,ok', [(1, True), ('2', True), (' 25% ', True), ('100%', True), ('101%', False), (0, False),
                                      ('0%', False), ('', False), (None, False), ('two', False)])
def test_regex_with_trim(value, ok):
    assert (one({'check': 'regex', 'pattern': COUNT_RE, 'trim': True}, value) == []) is ok


def test_regex_matches_from_the_start_as_jinja_match_does():
    assert one({'check': 'regex', 'pattern': '[0-9]{3}'}, '580x') == []
    assert one({'check': 'regex', 'pattern': '[0-9]{3}'}, 'x580') == ['v is wrong, got "x580"']
    # Without trim, a value with spaces fails as Jinja's `is match` on the untrimmed string does.
    assert one({'check': 'regex', 'pattern': '^[0-9]+$'}, ' 5') != []


def test_none_ok_and_empty_ok():
    rule = {'check': 'regex', 'pattern': '^[0-9]{3}$'}
    assert one(dict(rule, none_ok=True), None) == []
    assert one(dict(rule, none_ok=True), '') == ['v is wrong, got ""']
    assert one(dict(rule, empty_ok=True), '') == []
    assert one(dict(rule, empty_ok=True), None) == []
    assert one(rule, None) == ['v is wrong, got "None"']


def test_absolute_path():
    assert one({'check': 'absolute_path'}, '/etc/rancher/rke2/rke2.yaml') == []
    assert one({'check': 'absolute_path'}, 'etc/x') == ['v is wrong, got "etc/x"']
    assert one({'check': 'absolute_path', 'empty_ok': True}, '') == []
    assert one({'check': 'absolute_path'}, '') != []


@pytest.mark.parametrize('value,ok', [('abc', True), (['a'], True), ('', False), ([], False), (None, False), (5, True)])
def test_not_empty(value, ok):
    assert (one({'check': 'not_empty'}, value) == []) is ok


@pytest.mark.parametrize('value,expected', [
    (5, 5), ('5', 5), (' 7 ', 7), ('3.9', 3), ('abc', 0), (None, 0), (True, 1), ('', 0)])
def test_jinja_int(value, expected):
    assert input_rules.jinja_int(value) == expected


def test_int_min_and_range_read_values_as_jinja_int_does():
    assert one({'check': 'int_min', 'min': 1}, '30') == []
    assert one({'check': 'int_min', 'min': 1}, 'abc') == ['v is wrong, got "abc"']
    assert one({'check': 'int_min', 'min': 0, 'none_ok': True}, None) == []
    assert one({'check': 'int_range', 'min': 40, 'max': 120}, 85) == []
    assert one({'check': 'int_range', 'min': 40, 'max': 120}, '121') == ['v is wrong, got "121"']


@pytest.mark.parametrize('value,positive,ok', [(300, True, True), ('300', True, True), ('0', True, False), (0, False, True),
                                               ('-1', False, False), ('1.5', False, False), ('', False, False),
                                               (' 30 ', False, False)])
def test_digits(value, positive, ok):
    assert (one({'check': 'digits', 'positive': positive}, value) == []) is ok


def test_digits_with_trim():
    assert one({'check': 'digits', 'trim': True}, ' 30 ') == []


def test_removed_and_ok():
    assert one({'check': 'removed'}, None) == []
    assert one({'check': 'removed'}, 'nvidia') == ['v is wrong, got "nvidia"']
    assert one({'check': 'ok', 'ok': True}, 'x') == []
    assert one({'check': 'ok', 'ok': False}, 'x') == ['v is wrong, got "x"']


def test_renamed_writes_its_message_from_the_old_and_new_names():
    rule = {'var': 'upgrade_batch_size', 'check': 'renamed', 'to': 'node_maintenance_batch_size'}
    assert input_rules.errors([rule], {}) == []
    assert input_rules.errors([rule], {'upgrade_batch_size': None}) == []
    assert input_rules.errors([rule], {'upgrade_batch_size': '2'}) == [
        'upgrade_batch_size was renamed node_maintenance_batch_size: rename it in the inventory (got "2")']
    # A false value is still a value someone set: refused too.
    assert input_rules.errors([rule], {'upgrade_batch_size': False}) != []
    assert input_rules.errors([dict(rule, message='own: {value}')], {'upgrade_batch_size': 0}) == ['own: 0']


def test_messages_in_the_tables_order_and_the_value_as_jinja_writes_it():
    rules = [{'var': 'b', 'check': 'digits', 'message': 'b: {value}'},
             {'var': 'a', 'check': 'absolute_path', 'message': 'a: {value} (100% {not a field})'}]
    assert input_rules.errors(rules, {'a': 'x', 'b': True}) == ['b: True', 'a: x (100% {not a field})']
    assert input_rules.errors(rules, {'a': '/x', 'b': 3}) == []
    assert input_rules.errors([], {}) == []


@pytest.mark.parametrize('rule', [
    {'check': 'digits', 'message': 'm'},                            # no var
    {'var': 'v', 'check': 'digits'},                                # no message
    {'var': 'v', 'check': 'nonsense', 'message': 'm'},              # unknown check
    {'var': 'v', 'check': 'regex', 'message': 'm'},                 # regex without pattern
    {'var': 'v', 'check': 'int_range', 'min': 1, 'message': 'm'},   # range without max
    {'var': 'v', 'check': 'ok', 'message': 'm'},                    # ok without its answer
    {'var': 'v', 'check': 'one_of', 'message': 'm'},                # one_of without choices
    {'var': 'v', 'check': 'renamed'},                               # renamed without its new name
    {'var': 'v', 'check': 'removed'},                               # no message (only renamed writes its own)
    'not a mapping',
])
def test_a_broken_table_is_the_roles_error(rule):
    with pytest.raises(input_rules.RuleError):
        input_rules.errors([rule], {'v': '1'})


def test_one_of_and_ok_as_text():
    rule = {'check': 'one_of', 'choices': ['auto', 'true', 'false'], 'lower': True}
    assert one(rule, 'Auto') == [] and one(rule, True) == [] and one(rule, 'maybe') == ['v is wrong, got "maybe"']
    assert one(dict(rule, lower=False), 'Auto') != []
    # Where templating returns the condition's text (non-native templating), it is read as a boolean.
    assert one({'check': 'ok', 'ok': 'True'}, 'x') == [] and one({'check': 'ok', 'ok': 'False'}, 'x') != []


KUBECONFIG = {'apiVersion': 'v1', 'kind': 'Config', 'users': [{'name': 'admin', 'user': {'token': 'sekret-token-123'}}]}


def test_a_secret_value_is_never_written_only_its_type():
    # A kubeconfig pasted where its path belongs: the refusal says the type, never the token.
    rule = {'var': 'cluster_kubeconfig', 'check': 'absolute_path', 'none_ok': True,
            'message': 'cluster_kubeconfig must be an absolute path, got a value of type {type}'}
    got = input_rules.errors([rule], {'cluster_kubeconfig': KUBECONFIG})
    assert got == ['cluster_kubeconfig must be an absolute path, got a value of type dict']
    # A renamed secret-bearing variable: its message is written without the value.
    renamed = {'var': 'upgrade_kubeconfig', 'check': 'renamed', 'to': 'cluster_kubeconfig'}
    got = input_rules.errors([renamed], {'upgrade_kubeconfig': KUBECONFIG})
    assert got == ['upgrade_kubeconfig was renamed cluster_kubeconfig: rename it in the inventory (got a value of type '
                   'dict)']
    # A maintainer who writes {value} into a secret's message is refused before any check runs.
    with pytest.raises(input_rules.RuleError, match='can hold a secret'):
        input_rules.errors([dict(rule, message='got {value}')], {'cluster_kubeconfig': 'x'})
    assert input_rules.secret('nvidia_driver_mok_password') and input_rules.secret('x_api_token')
    assert not input_rules.secret('container_toolkit_gpg_key_url') and not input_rules.secret('nvidia_driver_branch')


def test_no_rule_table_of_any_role_shows_a_secret_value():
    """Every rule table of every role (vars/main.yml: each list of rules, __<role>_input_rules and the entry points'
    own tables), read as data: no rule of a variable that can hold a secret interpolates its value, and every table is
    one check_rules accepts."""
    import glob
    import os
    import yaml
    root = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..')
    tables = 0
    for path in sorted(glob.glob(os.path.join(root, 'roles', '*', 'vars', 'main.yml'))):
        with open(path, encoding='utf-8') as handle:
            data = yaml.safe_load(handle) or {}
        for name, rules in data.items():
            if not (name.endswith('_rules') and isinstance(rules, list) and rules
                    and all(isinstance(r, dict) and 'var' in r and 'check' in r for r in rules)):
                continue
            tables += 1
            for rule in rules:
                if input_rules.secret(rule.get('var')):
                    assert '{value}' not in (rule.get('message') or ''), (path, rule['var'])
            input_rules.check_rules(rules)
    assert tables >= 12
