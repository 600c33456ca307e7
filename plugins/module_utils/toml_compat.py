# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read TOML on any Python a node has, without installing anything.

``loads(text)`` uses the standard library's tomllib (Python 3.11+), else tomli or toml when the
node has one, else the small reader below. The reader covers the TOML that containerd configs are
written in (tables, arrays of tables, bare, quoted and dotted keys, basic and literal strings, also
multi-line, integers, floats, booleans, arrays, inline tables; dates are kept as strings). It
exists so that check mode works on Ubuntu 22.04 and EL9 (Python 3.10 and 3.9, no tomllib): the
role used to install python3-toml first, which check mode cannot do. The unit tests read every
captured containerd config with both this reader and tomllib and require the same result.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

try:
    import tomllib as _lib  # Python 3.11+
except ImportError:  # pragma: no cover - depends on the node's Python
    try:
        import tomli as _lib
    except ImportError:
        _lib = None


class TOMLError(ValueError):
    """The text is not TOML this reader understands; the message names the line."""


def loads(text):
    """Parse TOML text into dicts and lists (tomllib when available)."""
    if _lib is not None:
        try:
            return _lib.loads(text)
        except Exception as exc:  # tomllib.TOMLDecodeError and friends
            raise TOMLError(str(exc))
    return Reader(text).parse()


_BARE = re.compile(r'[A-Za-z0-9_-]+')
_INT = re.compile(r'^[+-]?(0|[1-9](_?[0-9])*)$')
_HEX = re.compile(r'^0x[0-9A-Fa-f](_?[0-9A-Fa-f])*$')
_OCT = re.compile(r'^0o[0-7](_?[0-7])*$')
_BIN = re.compile(r'^0b[01](_?[01])*$')
_FLOAT = re.compile(r'^[+-]?(0|[1-9](_?[0-9])*)(\.[0-9](_?[0-9])*)?([eE][+-]?[0-9](_?[0-9])*)?$')
_DATE = re.compile(r'^[0-9]{4}-[0-9]{2}-[0-9]{2}([Tt ][0-9:.]+([Zz]|[+-][0-9:]+)?)?$|^[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?$')
_ESCAPES = {'b': '\b', 't': '\t', 'n': '\n', 'f': '\f', 'r': '\r', '"': '"', '\\': '\\', 'e': '\x1b'}


class Reader(object):
    """A recursive-descent TOML reader (see the module docstring for what it covers)."""

    def __init__(self, text):
        self.text = text.replace('\r\n', '\n')
        self.pos = 0
        self.root = {}
        # Tables defined by a header, and tables created implicitly; a header may name each once.
        self.defined = set()

    # ---- helpers -------------------------------------------------------------------------------
    def error(self, msg):
        line = self.text.count('\n', 0, self.pos) + 1
        raise TOMLError('line %d: %s' % (line, msg))

    def peek(self, n=1):
        return self.text[self.pos:self.pos + n]

    def skip_ws(self):
        while self.pos < len(self.text) and self.text[self.pos] in ' \t':
            self.pos += 1

    def skip_comment(self):
        if self.peek() == '#':
            end = self.text.find('\n', self.pos)
            self.pos = len(self.text) if end < 0 else end

    def skip_ws_nl_comments(self):
        while self.pos < len(self.text):
            char = self.text[self.pos]
            if char in ' \t\n':
                self.pos += 1
            elif char == '#':
                self.skip_comment()
            else:
                break

    def end_of_line(self):
        self.skip_ws()
        self.skip_comment()
        if self.pos < len(self.text) and self.text[self.pos] != '\n':
            self.error('expected the end of the line, found %r' % self.text[self.pos:self.pos + 20])

    # ---- structure -----------------------------------------------------------------------------
    def parse(self):
        current = self.root
        while True:
            self.skip_ws_nl_comments()
            if self.pos >= len(self.text):
                return self.root
            if self.peek(2) == '[[':
                self.pos += 2
                path = self.key_path(']]')
                current = self.array_table(path)
            elif self.peek() == '[':
                self.pos += 1
                path = self.key_path(']')
                current = self.table(path)
            else:
                self.key_value(current)
            self.end_of_line()

    def key_path(self, closing):
        path = []
        while True:
            self.skip_ws()
            path.append(self.key())
            self.skip_ws()
            if self.text.startswith(closing, self.pos):
                self.pos += len(closing)
                return path
            if self.peek() != '.':
                self.error('bad table header')
            self.pos += 1

    def key(self):
        char = self.peek()
        if char == '"':
            return self.basic_string()
        if char == "'":
            return self.literal_string()
        match = _BARE.match(self.text, self.pos)
        if not match:
            self.error('expected a key, found %r' % self.text[self.pos:self.pos + 20])
        self.pos = match.end()
        return match.group(0)

    def descend(self, table, path, create_ok=True):
        for part in path:
            child = table.get(part)
            if child is None:
                child = table[part] = {}
            elif isinstance(child, list) and child and isinstance(child[-1], dict):
                child = child[-1]
            elif not isinstance(child, dict):
                self.error('key %r is not a table' % part)
            table = child
        return table

    def table(self, path):
        key = tuple(path)
        if key in self.defined:
            self.error('table [%s] defined twice' % '.'.join(path))
        self.defined.add(key)
        return self.descend(self.root, path)

    def array_table(self, path):
        parent = self.descend(self.root, path[:-1])
        items = parent.setdefault(path[-1], [])
        if not isinstance(items, list):
            self.error('key %r is not an array of tables' % path[-1])
        items.append({})
        return items[-1]

    def key_value(self, table):
        path = [self.key()]
        self.skip_ws()
        while self.peek() == '.':
            self.pos += 1
            self.skip_ws()
            path.append(self.key())
            self.skip_ws()
        if self.peek() != '=':
            self.error('expected "=" after key %s' % '.'.join(path))
        self.pos += 1
        self.skip_ws()
        value = self.value()
        target = self.descend(table, path[:-1])
        if path[-1] in target:
            self.error('key %r defined twice' % '.'.join(path))
        target[path[-1]] = value

    # ---- values ------------------------------------------------------------------------------
    def value(self):
        char = self.peek()
        if self.peek(3) == '"""':
            return self.multiline_basic()
        if self.peek(3) == "'''":
            return self.multiline_literal()
        if char == '"':
            return self.basic_string()
        if char == "'":
            return self.literal_string()
        if char == '[':
            return self.array()
        if char == '{':
            return self.inline_table()
        match = re.compile(r'[^\s,\]}#]+(?: [0-9:.]+(?:[Zz]|[+-][0-9:]+)?)?').match(self.text, self.pos)
        if not match:
            self.error('expected a value')
        token = match.group(0)
        self.pos = match.end()
        return self.scalar(token)

    def scalar(self, token):
        if token == 'true':
            return True
        if token == 'false':
            return False
        if _INT.match(token):
            return int(token.replace('_', ''))
        if _HEX.match(token):
            return int(token[2:].replace('_', ''), 16)
        if _OCT.match(token):
            return int(token[2:].replace('_', ''), 8)
        if _BIN.match(token):
            return int(token[2:].replace('_', ''), 2)
        if token in ('inf', '+inf', '-inf', 'nan', '+nan', '-nan'):
            return float(token)
        if _FLOAT.match(token):
            return float(token.replace('_', ''))
        if _DATE.match(token):
            return token
        self.error('unknown value %r' % token)

    def basic_string(self):
        self.pos += 1
        out = []
        while True:
            if self.pos >= len(self.text) or self.text[self.pos] == '\n':
                self.error('unterminated string')
            char = self.text[self.pos]
            if char == '"':
                self.pos += 1
                return ''.join(out)
            if char == '\\':
                out.append(self.escape())
            else:
                out.append(char)
                self.pos += 1

    def escape(self):
        code = self.text[self.pos + 1:self.pos + 2]
        if code in _ESCAPES:
            self.pos += 2
            return _ESCAPES[code]
        if code in ('u', 'U'):
            size = 4 if code == 'u' else 8
            digits = self.text[self.pos + 2:self.pos + 2 + size]
            if not re.match(r'^[0-9A-Fa-f]{%d}$' % size, digits):
                self.error('bad unicode escape')
            self.pos += 2 + size
            return chr(int(digits, 16))
        self.error('bad escape \\%s' % code)

    def literal_string(self):
        end = self.text.find("'", self.pos + 1)
        newline = self.text.find('\n', self.pos + 1)
        if end < 0 or (0 <= newline < end):
            self.error('unterminated literal string')
        value = self.text[self.pos + 1:end]
        self.pos = end + 1
        return value

    def multiline_basic(self):
        self.pos += 3
        if self.peek() == '\n':
            self.pos += 1
        out = []
        while True:
            if self.pos >= len(self.text):
                self.error('unterminated multi-line string')
            if self.text.startswith('"""', self.pos):
                extra = 0
                while self.text.startswith('"', self.pos + 3 + extra) and extra < 2:
                    extra += 1
                out.append('"' * extra)
                self.pos += 3 + extra
                return ''.join(out)
            char = self.text[self.pos]
            if char == '\\':
                rest = re.compile(r'\\[ \t]*\n[\s]*').match(self.text, self.pos)
                if rest:
                    self.pos = rest.end()
                    continue
                out.append(self.escape())
            else:
                out.append(char)
                self.pos += 1

    def multiline_literal(self):
        self.pos += 3
        if self.peek() == '\n':
            self.pos += 1
        end = self.text.find("'''", self.pos)
        if end < 0:
            self.error('unterminated multi-line literal string')
        extra = 0
        while self.text.startswith("'", end + 3) and extra < 2:
            end += 1
            extra += 1
        value = self.text[self.pos:end]
        self.pos = end + 3
        return value

    def array(self):
        self.pos += 1
        items = []
        while True:
            self.skip_ws_nl_comments()
            if self.peek() == ']':
                self.pos += 1
                return items
            items.append(self.value())
            self.skip_ws_nl_comments()
            if self.peek() == ',':
                self.pos += 1
            elif self.peek() != ']':
                self.error('expected "," or "]" in an array')

    def inline_table(self):
        self.pos += 1
        table = {}
        self.skip_ws()
        if self.peek() == '}':
            self.pos += 1
            return table
        while True:
            self.skip_ws()
            self.key_value(table)
            self.skip_ws()
            if self.peek() == ',':
                self.pos += 1
            elif self.peek() == '}':
                self.pos += 1
                return table
            else:
                self.error('expected "," or "}" in an inline table')
