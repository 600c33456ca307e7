# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Decisions live in tested filters, not in Jinja programs (docs/DEVELOPING.md, "Roles"): no Jinja
statement block in the roles' YAML or the playbooks. Templates (``*.j2``) are templates and may use them."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
STATEMENT = re.compile(r'\{%')


def yaml_files():
    for top in ('roles', 'playbooks'):
        for folder, _dirs, files in os.walk(os.path.join(ROOT, top)):
            if os.sep + 'templates' in folder:
                continue
            for name in files:
                if name.endswith(('.yml', '.yaml')):
                    yield os.path.join(folder, name)


def statements(text):
    return [number for number, line in enumerate(text.splitlines(), 1) if STATEMENT.search(line)]


def test_the_scan_finds_a_statement_block():
    assert statements("msg: >-\n  {% if x %}a{% endif %}\n") == [2]
    assert statements("msg: \"{{ 'a' if x else 'b' }}\"\n") == []


def test_no_jinja_statement_block_in_role_yaml_or_playbooks():
    files = list(yaml_files())
    assert len(files) > 100, 'the scan must see the roles and playbooks (found %d files under %s)' % (len(files), ROOT)
    found = {}
    for path in files:
        with open(path, encoding='utf-8') as handle:
            lines = statements(handle.read())
        if lines:
            found[os.path.relpath(path, ROOT)] = lines
    assert found == {}, 'Jinja statement blocks (make them filters, docs/DEVELOPING.md "Roles"): %s' % found
