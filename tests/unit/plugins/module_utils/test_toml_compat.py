# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The TOML reader used on Pythons without tomllib, against tomllib, on every captured containerd config."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import os

import pytest

from ansible_collections.baremetal.gpu.plugins.module_utils import toml_compat

tomllib = pytest.importorskip('tomllib')

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures')
CONFIGS = sorted(glob.glob(os.path.join(FIXTURES, 'containerd', '**', '*.toml'), recursive=True)
                 + glob.glob(os.path.join(FIXTURES, 'rke2', '*.toml*')))


@pytest.mark.parametrize('path', CONFIGS, ids=[os.path.relpath(p, FIXTURES) for p in CONFIGS])
def test_reader_agrees_with_tomllib_on_real_configs(path):
    with open(path, encoding='utf-8') as handle:
        text = handle.read()
    if '{{' in text:
        pytest.skip('a Go template, not TOML')
    assert toml_compat.Reader(text).parse() == tomllib.loads(text)


def test_reader_covers_the_syntax():
    text = '''
# comment
a = 1_000  # trailing comment
"quoted key" = 'literal \\n'
dotted.key = "esc \\t \\u00e9 \\\\"
hex = 0xff
f = -1.5e3
flags = [true, false,
  # comment in an array
]
inline = {x = 1, y = ["a", 'b']}
ml = """
line one
line \\
  two"""
lit = \'\'\'raw\\n\'\'\'
when = 2026-11-23T05:14:34Z

[t.'u'."v"]
k = "x"

[[arr]]
n = 1
[[arr]]
n = 2
'''
    ours, theirs = toml_compat.Reader(text).parse(), tomllib.loads(text)
    # Dates are kept as strings (containerd configs have none).
    assert ours.pop('when') == '2026-11-23T05:14:34Z' and theirs.pop('when').year == 2026
    assert ours == theirs


@pytest.mark.parametrize('text', ['a = ', '[t]\n[t]\n', 'a = "open', 'a = 1\na = 2', 'a = [1 2]', 'a = nope'])
def test_reader_refuses_bad_toml(text):
    with pytest.raises(toml_compat.TOMLError):
        toml_compat.Reader(text).parse()


def test_loads_reports_the_error():
    with pytest.raises(toml_compat.TOMLError):
        toml_compat.loads('[a\n')
