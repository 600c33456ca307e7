# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's module_utils, imported by the filter plugins when a filter first needs them.

ansible-core runs each task in a worker process of its own (a fork), and a worker that resolves any filter of this
collection loads every filter plugin file of it (plugins/filter/*.py), compiling them and whatever they import from
source: the collection loader keeps no bytecode. Imported at the top of the filter files, the module_utils behind all
of them cost every such task about 0.09 CPU-seconds (docs/benchmarks.md); a filter file now names its
module_utils with LazyModule, and a task compiles only the ones its filters call.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib

_MODULE_UTILS = 'ansible_collections.baremetal.gpu.plugins.module_utils.'


class LazyModule:
    """Stands for ``plugins/module_utils/<name>.py``: imports it at the first attribute read, then reads from it."""

    __slots__ = ('_name', '_module')

    def __init__(self, name):
        self._name = name
        self._module = None

    def __getattr__(self, attr):
        if self._module is None:
            self._module = importlib.import_module(_MODULE_UTILS + self._name)
        return getattr(self._module, attr)

    def __repr__(self):
        return '<LazyModule %s%s%s>' % (_MODULE_UTILS, self._name, '' if self._module is None else ' (imported)')
