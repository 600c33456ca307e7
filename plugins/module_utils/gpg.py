# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read OpenPGP key fingerprints from ``gpg --show-keys --with-colons`` output: pure functions.

gpg's colon format (GnuPG doc/DETAILS): a ``pub`` record starts a primary key; the ``fpr``
record that follows it holds the primary key's fingerprint in field 10; ``sub`` records start
subkeys, whose ``fpr`` records are not primary fingerprints.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

_FPR = re.compile(r'^[0-9A-F]{40}$|^[0-9A-F]{64}$')


def normalize_fingerprint(value):
    """'C95B 321B ... ECB0' -> 'C95B321B...ECB0' (spaces dropped, upper case)."""
    return re.sub(r'\s', '', str(value or '')).upper()


def valid_fingerprint(value):
    """True for a v4 (40 hex digits) or v5 (64 hex digits) fingerprint."""
    return bool(_FPR.match(normalize_fingerprint(value)))


def primary_fingerprints(colons):
    """The primary keys' fingerprints, in order, from ``--with-colons`` output."""
    found = []
    in_primary = False
    for line in (colons or '').splitlines():
        fields = line.split(':')
        record = fields[0]
        if record == 'pub':
            in_primary = True
        elif record in ('sub', 'ssb', 'sec'):
            in_primary = record == 'sec'
        elif record == 'fpr' and in_primary and len(fields) > 9:
            found.append(fields[9].upper())
            in_primary = False
    return found


def check_key(colons, expected):
    """(ok, fingerprints, message): ok when the key material holds exactly one primary key, ``expected``."""
    want = normalize_fingerprint(expected)
    found = primary_fingerprints(colons)
    if found == [want]:
        return True, found, 'the key is the pinned one, fingerprint %s' % want
    return False, found, ('expected exactly one primary key with fingerprint %s, found %s'
                          % (want, ', '.join(found) if found else 'no key'))
