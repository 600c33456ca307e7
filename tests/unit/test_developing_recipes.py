# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The recipes of docs/DEVELOPING.md still hold: every file a recipe names exists, and every name it places in a file
(`NAME` in `path`) is in that file. A recipe whose file list drifted from the tree fails here, not in a newcomer's
first change."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
DEVELOPING = os.path.join(ROOT, 'docs', 'DEVELOPING.md')
RECIPES = ('A new OS release', 'A chart bump', 'A new cluster component', 'A new disruptive playbook', 'A new module')
PLACED = re.compile(r'`([A-Za-z_][A-Za-z0-9_]*)` in `([^`<>\s]+)`')
CODE = re.compile(r'`([^`]+)`')


def recipes(text):
    """{title: body} of the `### ` sections under `## Recipes`."""
    section = text.split('\n## Recipes\n', 1)[1].split('\n## ', 1)[0]
    parts = re.split(r'^### (.+)$', section, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2]))


def paths(body):
    """The repository paths a recipe names: code spans with a slash, no placeholder, no space."""
    return sorted(set(t for t in CODE.findall(body)
                      if '/' in t and not re.search(r'[<>\s*]', t) and not t.startswith(('group/', 'http'))))


def problems(body, root=ROOT):
    found = ['%s: no such file' % p for p in paths(body) if not os.path.exists(os.path.join(root, p))]
    for name, path in PLACED.findall(body):
        full = os.path.join(root, path)
        if os.path.isfile(full):
            with open(full, encoding='utf-8') as handle:
                if name not in handle.read():
                    found.append('%s: not in %s' % (name, path))
    return found


def test_the_check_finds_a_drifted_recipe(tmp_path):
    (tmp_path / 'support.py').write_text('OS_MATRIX = ()\n')
    body = 'One row of `OS_MATRIX` in `support.py`, `GONE` in `support.py`, and `roles/none/x.yml`; `x/<role>.yml`.'
    assert problems(body, str(tmp_path)) == ['roles/none/x.yml: no such file', 'GONE: not in support.py']


def test_every_recipe_is_there_and_holds():
    with open(DEVELOPING, encoding='utf-8') as handle:
        found = recipes(handle.read())
    assert sorted(found) == sorted(RECIPES)
    drift = ['%s: %s' % (title, p) for title, body in found.items() for p in problems(body)]
    assert drift == [], 'docs/DEVELOPING.md recipes that no longer hold:\n' + '\n'.join(drift)
    assert all(paths(body) for body in found.values()), 'a recipe names no file'
