# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Input checks as data: a role's rule table, read against the values of its variables.

A rule is a mapping:

    var      the variable the rule checks (its value is values[var]; None when unset)
    check    the kind of check, one of KINDS
    message  the refusal; ``{value}`` is replaced by the value as Jinja's ``~`` writes it (a ``renamed`` rule
             may leave it out: its message is written from ``var`` and ``to``), ``{type}`` by its type. The value of
             a variable that can hold a secret (SECRET: a kubeconfig, a token, a password...) is never written:
             check_rules refuses ``{value}`` in its message, and errors() writes only its type in its place
    ...      the kind's own keys (pattern, min, max, trim, positive, ok)
    empty_ok an empty or unset value passes; none_ok: an unset (null) value passes

Kinds:

    regex           str(value) (stripped with ``trim``) matches ``pattern`` from its start (Jinja's ``is match``)
    absolute_path   str(value) starts with "/"
    not_empty       the value has a length above 0
    int_min         the value as Jinja's ``int`` filter reads it is at least ``min``
    int_range       ... and at most ``max``
    digits          str(value) (``trim``) is digits only; with ``positive`` above 0 too
    one_of          str(value) (lower-cased with ``lower``) is one of ``choices``
    removed         the variable is set: it was removed and must go from the inventory
    renamed         the variable is set: it is now named ``to``, so the inventory must rename it (an old name is
                    refused, never silently ignored)
    ok              ``ok`` is the answer, computed by the role (a condition over several variables)
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible.module_utils.parsing.convert_bool import boolean

KINDS = ('regex', 'absolute_path', 'not_empty', 'int_min', 'int_range', 'digits', 'one_of', 'removed', 'renamed', 'ok')
RENAMED = '%s was renamed %s: rename it in the inventory (got "{value}")'
RENAMED_SECRET = '%s was renamed %s: rename it in the inventory (got a value of type {type})'
# Variables whose value can hold a secret: a kubeconfig given inline (its token), a password, a token, a key.
SECRET = re.compile(r'(kubeconfig|token|password|passwd|secret|credential|private_key|api_key)', re.I)
_DIGITS = re.compile(r'^[0-9]+$')


class RuleError(ValueError):
    """A rule table that cannot be read (a maintainer's error, not a user's)."""


def jinja_int(value):
    """What Jinja's ``int`` filter makes of a value: int(), else int(float()), else 0."""
    try:
        return int(value)
    except (TypeError, ValueError):
        pass
    try:
        return int(float(value))
    except (TypeError, ValueError):
        return 0


def as_text(value):
    """The value as Jinja's ``~`` and ``string`` write it (None as "None")."""
    return value if isinstance(value, str) else str(value)


def type_name(value):
    """The value's type as Jinja's ``type_debug`` writes it (str, int, dict, list, NoneType...)."""
    return type(value).__name__


def secret(var):
    """Whether a variable's value can hold a secret, so that no message may show it."""
    return SECRET.search(var or '') is not None


def _empty(value):
    return value is None or as_text(value) == ''


def passes(rule, value):
    """Whether a value passes one rule."""
    kind = rule.get('check')
    if kind == 'ok':
        # A condition the role templated: a boolean (ansible-core 2.19), or its text where templating returns text.
        return boolean(rule.get('ok'), strict=False)
    if kind in ('removed', 'renamed'):
        return value is None
    if (rule.get('none_ok') and value is None) or (rule.get('empty_ok') and _empty(value)):
        return True
    if kind == 'regex':
        text = as_text(value)
        return re.match(rule['pattern'], text.strip() if rule.get('trim') else text) is not None
    if kind == 'absolute_path':
        return as_text(value).startswith('/')
    if kind == 'not_empty':
        return value is not None and len(value if hasattr(value, '__len__') else as_text(value)) > 0
    if kind == 'int_min':
        return jinja_int(value) >= rule['min']
    if kind == 'int_range':
        return rule['min'] <= jinja_int(value) <= rule['max']
    if kind == 'digits':
        text = as_text(value)
        text = text.strip() if rule.get('trim') else text
        return _DIGITS.match(text) is not None and (not rule.get('positive') or int(text) > 0)
    if kind == 'one_of':
        text = as_text(value)
        return (text.lower() if rule.get('lower') else text) in [as_text(choice) for choice in rule['choices']]
    raise RuleError('unknown check %r in the rule for %s (known: %s)' % (kind, rule.get('var'), ', '.join(KINDS)))


def check_rules(rules):
    """Refuse a rule table a maintainer got wrong: every rule names a var, a known check and a message."""
    for rule in rules:
        if not hasattr(rule, 'get') or not rule.get('var') or not (rule.get('message') or rule.get('check') == 'renamed'):
            raise RuleError('every input rule needs var and message: %r' % (rule,))
        if rule.get('check') not in KINDS:
            raise RuleError('unknown check %r in the rule for %s (known: %s)' % (rule.get('check'), rule['var'], ', '.join(KINDS)))
        needs = {'regex': ('pattern',), 'int_min': ('min',), 'int_range': ('min', 'max'), 'ok': ('ok',), 'one_of': ('choices',),
                 'renamed': ('to',)}
        for key in needs.get(rule['check'], ()):
            if key not in rule:
                raise RuleError('the %s rule for %s needs %s' % (rule['check'], rule['var'], key))
        if secret(rule['var']) and '{value}' in (rule.get('message') or ''):
            raise RuleError('the message of the rule for %s shows its value, which can hold a secret: write {type}'
                            % rule['var'])


def errors(rules, values):
    """The messages of the rules a role's values fail, in the table's order."""
    rules = list(rules or [])
    check_rules(rules)
    values = values or {}
    out = []
    for rule in rules:
        value = values.get(rule['var'])
        if not passes(rule, value):
            hidden = secret(rule['var'])
            message = rule.get('message') or (RENAMED_SECRET if hidden else RENAMED) % (rule['var'], rule['to'])
            shown = ('(a value of type %s, not shown)' % type_name(value)) if hidden else as_text(value)
            out.append(message.replace('{value}', shown).replace('{type}', type_name(value)))
    return out
