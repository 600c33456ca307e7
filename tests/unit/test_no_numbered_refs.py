# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""No product file, README, doc or comment names a work item, session or round by its number: what was done when is
the commit log's and docs/benchmarks.md's (the one history file). Upstream references (owner/repo#123) are fine."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
# The number may stand on the next line of a comment or of a wrapped sentence ("(issue\n# 18)").
NUMBERED = re.compile(r'\b(?:issues?|sessions?|rounds?)(?: |\n[ \t]*(?:#+ ?)?)#?[0-9]+', re.IGNORECASE)
# The history file, captured third-party data, and what tools build or download.
ALLOWED = ('docs/benchmarks.md',)
SKIP_DIRS = ('.git', '.venv', '.cache', '.ansible', '.bin', '.tox', 'node_modules', '__pycache__', 'tests/fixtures',
             'tests/output')


def numbered_refs(text):
    return [m.group(0) for m in NUMBERED.finditer(text)]


def test_the_check_finds_a_numbered_reference():
    assert numbered_refs('the budget (issue 17; docs/benchmarks.md, session 23)') == ['issue 17', 'session 23']
    assert numbered_refs('NVIDIA/gpu-operator#2596, k3s-io/k3s#4391, round(0), Issue #12') == ['Issue #12']
    assert numbered_refs('became its own role (issue\n# 18): an old name') == ['issue\n# 18']


def test_no_file_names_a_work_item_by_number():
    found = []
    for folder, dirs, files in os.walk(ROOT):
        rel = os.path.relpath(folder, ROOT).replace(os.sep, '/')
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and ('%s/%s' % (rel, d)).lstrip('./') not in SKIP_DIRS]
        for name in files:
            path = ('%s/%s' % (rel, name)).lstrip('./') if rel != '.' else name
            if path in ALLOWED or name == os.path.basename(__file__):
                continue
            try:
                with open(os.path.join(folder, name), encoding='utf-8') as handle:
                    text = handle.read()
            except (UnicodeDecodeError, OSError):
                continue
            found += ['%s: %s' % (path, ref) for ref in numbered_refs(text)]
    assert found == [], 'work items named by number (history goes in the commit log or docs/benchmarks.md):\n' + \
        '\n'.join(found)
