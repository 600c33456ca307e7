# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A line break written as ``\\n`` inside a template is one only where YAML turns it into one: in a double-quoted
scalar. In a folded (``>-``), literal, plain or single-quoted scalar the template gets the two characters, and
ansible-core 2.19's templating keeps them as written (``'a\\nb' | length`` is 4 there, 3 in a double-quoted scalar):
a ``split('\\n')`` then finds no line break. Kept: no template in the roles' YAML or the playbooks holds a
string literal that is a backslash escape alone after YAML read it (docs/DEVELOPING.md, "Role conventions")."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import sys

import yaml

sys.path.insert(0, os.path.dirname(__file__))
# pylint: disable=wrong-import-position
from test_no_jinja_statements import yaml_files  # noqa: E402

# A template's string literal that is one backslash escape alone ('\n', "\t"), as a separator is written (split, join,
# ~), in a string as YAML loaded it. An escape inside a longer literal is left alone: there it is most often meant for
# the tool or filter that reads it (a regex's [\r\n], dpkg-query's --showformat, which read \n themselves).
ESCAPE_IN_TEMPLATE = re.compile(r'\{\{(?:(?!\}\}).)*?([\'"])\\[ntr]\1', re.S)


def strings(node):
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from strings(key)
            yield from strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from strings(value)


def escapes(text):
    return [s for s in strings(yaml.safe_load(text)) if ESCAPE_IN_TEMPLATE.search(s)]


def test_the_scan_tells_a_folded_scalar_from_a_double_quoted_one():
    assert escapes("msg: >-\n  {{ out | split('\\n') | last }}\n") == ["{{ out | split('\\n') | last }}"]
    assert escapes("msg: \"{{ out | split('\\n') | last }}\"\n") == []
    assert escapes("msg: '{{ a ~ \"\\t\" }}'\n") == ['{{ a ~ "\\t" }}']
    # Outside a template a backslash is the text's own (a regex given to a module, a path); inside a longer literal it
    # is the reader's (a regex, a format string).
    assert escapes("pattern: '^\\d+$'\n") == []
    assert escapes("ok: >-\n  {{ x is not search('[\\r\\n]') }}\n") == []


def test_no_template_keeps_a_backslash_escape():
    files = list(yaml_files())
    assert len(files) > 100, 'the scan must see the roles and playbooks (found %d files)' % len(files)
    found = {}
    for path in files:
        with open(path, encoding='utf-8') as handle:
            hits = escapes(handle.read())
        if hits:
            found[os.path.relpath(path)] = hits
    assert not found, ('templates that keep "\\n" as two characters (write the expression in a double-quoted '
                       'scalar, where YAML turns it into a line break): %s' % found)
