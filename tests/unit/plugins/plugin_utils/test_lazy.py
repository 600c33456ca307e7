# -*- coding: utf-8 -*-
"""plugins/plugin_utils/lazy.py: a filter file's module_utils are imported when a filter first reads them."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import sys

from ansible_collections.baremetal.gpu.plugins.plugin_utils.lazy import LazyModule

NAME = 'ansible_collections.baremetal.gpu.plugins.module_utils.xid_catalog'


def test_imports_at_the_first_attribute_read_and_then_reads_from_the_module():
    sys.modules.pop(NAME, None)
    lazy = LazyModule('xid_catalog')
    assert NAME not in sys.modules
    assert 'imported' not in repr(lazy)
    real = __import__(NAME, fromlist=['*'])
    sys.modules.pop(NAME, None)
    names = [n for n in dir(real) if not n.startswith('_')]
    assert names
    assert getattr(lazy, names[0]) is not None
    assert NAME in sys.modules
    assert 'imported' in repr(lazy)


def test_a_missing_attribute_is_an_attribute_error():
    lazy = LazyModule('support')
    try:
        lazy.no_such_thing  # pylint: disable=pointless-statement
    except AttributeError:
        pass
    else:
        raise AssertionError('no AttributeError')


def test_the_filter_files_import_no_module_utils_when_loaded():
    for name in list(sys.modules):
        if name.startswith('ansible_collections.baremetal.gpu.plugins.'):
            del sys.modules[name]
    for plugin in ('cluster_addons', 'driver', 'host_extras', 'maintenance', 'runtime', 'support', 'uninstall'):
        __import__('ansible_collections.baremetal.gpu.plugins.filter.' + plugin)
    loaded = sorted(n for n in sys.modules if n.startswith('ansible_collections.baremetal.gpu.plugins.module_utils.'))
    assert loaded == [], loaded
