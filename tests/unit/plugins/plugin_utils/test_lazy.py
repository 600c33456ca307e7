# -*- coding: utf-8 -*-
"""plugins/plugin_utils/lazy.py: a filter file's module_utils are imported when a filter first reads them."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import sys

from ansible_collections.baremetal.gpu.plugins.plugin_utils.lazy import LazyModule

NAME = 'ansible_collections.baremetal.gpu.plugins.module_utils.xid_catalog'
FILTER_DIR = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', 'plugins', 'filter')


def test_imports_at_the_first_attribute_read_and_then_reads_from_the_module():
    saved = sys.modules.pop(NAME, None)
    try:
        lazy = LazyModule('xid_catalog')
        assert NAME not in sys.modules
        assert 'imported' not in repr(lazy)
        lazy.__doc__  # pylint: disable=pointless-statement
        assert NAME not in sys.modules, 'a slot or dunder read must not import'
        names = [n for n in vars(__import__(NAME, fromlist=['*'])) if not n.startswith('_')]
        sys.modules.pop(NAME, None)
        assert names
        assert getattr(lazy, names[0]) is sys.modules[NAME].__dict__[names[0]]
        assert 'imported' in repr(lazy)
    finally:
        if saved is not None:
            sys.modules[NAME] = saved


def test_a_missing_attribute_is_an_attribute_error():
    lazy = LazyModule('support')
    try:
        lazy.no_such_thing  # pylint: disable=pointless-statement
    except AttributeError:
        pass
    else:
        raise AssertionError('no AttributeError')


def test_the_filter_files_import_no_module_utils_when_loaded():
    saved = dict(sys.modules)
    try:
        for name in list(sys.modules):
            if name.startswith('ansible_collections.baremetal.gpu.plugins.'):
                del sys.modules[name]
        for plugin in sorted(os.path.splitext(name)[0] for name in os.listdir(FILTER_DIR) if name.endswith('.py')):
            __import__('ansible_collections.baremetal.gpu.plugins.filter.' + plugin)
        loaded = sorted(n for n in sys.modules if n.startswith('ansible_collections.baremetal.gpu.plugins.module_utils.'))
    finally:
        sys.modules.clear()
        sys.modules.update(saved)
    assert loaded == [], loaded
