# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The attributes every module of baremetal.gpu shares, written once.

Each module of the collection reads or plans and changes nothing itself (gpg_keyring writes one
file, and says so in its own C(check_mode) details), runs in check mode, has no diff, and runs on
POSIX hosts. A module overrides a single key (for example C(platform.platforms) or
C(check_mode.details)) in its own C(attributes) block; the rest comes from here.

These fragments belong to this collection alone, so that its documentation is complete when the
collection is installed or imported without its dependencies (Galaxy's import does exactly that).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):

    # baremetal.gpu.attributes: check mode, diff mode and platform.
    DOCUMENTATION = r"""
attributes:
  check_mode:
    description: Can run in check mode and say what it would change without changing the target.
    support: full
    details: Read-only; it runs in check mode too.
  diff_mode:
    description: Returns the details of what it changed (or would change in check mode) in diff mode.
    support: none
  platform:
    description: The target operating systems or families it runs against.
    support: N/A
    platforms: posix
"""

    # baremetal.gpu.attributes.facts: the module returns ansible_facts.
    FACTS = r"""
attributes:
  facts:
    description: Returns an C(ansible_facts) dictionary that updates the host's facts.
    support: full
"""
