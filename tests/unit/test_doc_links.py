# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every relative link of the project's Markdown (README.md, docs/, the roles' READMEs, molecule/, tests/) resolves:
the file exists, and an anchor (#section) is a heading of the target as GitHub and Galaxy render it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
SKIP_DIRS = ('.git', '.venv', '.cache', '.ansible', '.bin', '.tox', 'node_modules', '__pycache__', 'tests/fixtures',
             'tests/output', 'changelogs')
# [text](target) and [text](target "title"); images too. Code spans and fenced blocks are cut out first.
LINK = re.compile(r'\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)')
FENCE = re.compile(r'^(```|~~~).*?^\1', re.MULTILINE | re.DOTALL)
CODE = re.compile(r'`[^`\n]*`')
HEADING = re.compile(r'^#{1,6}\s+(.*?)\s*#*\s*$', re.MULTILINE)
HTML_ID = re.compile(r'<a\s+(?:id|name)="([^"]+)"')


def slug(heading):
    """The anchor GitHub gives a heading: lower case, punctuation dropped (hyphens and underscores kept), spaces to
    hyphens."""
    text = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', heading).lower()
    text = re.sub(r'[^\w\- ]', '', text, flags=re.UNICODE)
    return text.replace(' ', '-')


def anchors(text):
    """The anchors of a Markdown text; a repeated heading gets -1, -2, ... as on GitHub."""
    found, seen = set(), {}
    for heading in HEADING.findall(FENCE.sub('', text)):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else '%s-%d' % (base, count))
    return found | set(HTML_ID.findall(text))


def links(text):
    return LINK.findall(CODE.sub('', FENCE.sub('', text)))


def markdown_files():
    for folder, dirs, files in os.walk(ROOT):
        rel = os.path.relpath(folder, ROOT).replace(os.sep, '/')
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and ('%s/%s' % (rel, d)).lstrip('./') not in SKIP_DIRS]
        for name in files:
            if name.endswith('.md'):
                yield os.path.join(folder, name)


def broken_links(path):
    with open(path, encoding='utf-8') as handle:
        text = handle.read()
    broken = []
    for target in links(text):
        if re.match(r'^[a-z][a-z0-9+.-]*:', target):  # https:, mailto:, ...
            continue
        file_part, _sep, anchor = target.partition('#')
        dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
        if not os.path.exists(dest):
            broken.append('%s: no such file' % target)
            continue
        if anchor and dest.endswith('.md'):
            with open(dest, encoding='utf-8') as handle:
                if anchor not in anchors(handle.read()):
                    broken.append('%s: no such heading' % target)
    return broken


def test_slugs_as_github_makes_them():
    assert slug('GPU health (`playbooks/gpu_health.yml`)') == 'gpu-health-playbooksgpu_healthyml'
    assert slug('How `make test` keeps within its budget') == 'how-make-test-keeps-within-its-budget'
    assert anchors('# A\n\n## A\n\n```\n# not a heading\n```\n') == {'a', 'a-1'}


def test_the_check_finds_a_broken_link(tmp_path):
    (tmp_path / 'a.md').write_text('# Top\n\n[ok](b.md#here) [bad](b.md#gone) [missing](c.md) `[code](x.md)` '
                                   '[web](https://example.com/x.md)\n')
    (tmp_path / 'b.md').write_text('## Here\n')
    assert broken_links(str(tmp_path / 'a.md')) == ['b.md#gone: no such heading', 'c.md: no such file']


def test_every_relative_link_resolves():
    found = []
    for path in markdown_files():
        found += ['%s: %s' % (os.path.relpath(path, ROOT), entry) for entry in broken_links(path)]
    assert found == [], 'broken links:\n' + '\n'.join(found)
