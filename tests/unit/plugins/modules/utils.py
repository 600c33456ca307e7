# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The usual AnsibleExitJson/AnsibleFailJson helpers for driving a module's main()."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib
import json

from ansible.module_utils import basic
from ansible.module_utils.common.text.converters import to_bytes

try:  # ansible-core >= 2.19
    from ansible.module_utils.testing import patch_module_args
except ImportError:  # pragma: no cover - older ansible-core
    patch_module_args = None


@contextlib.contextmanager
def set_module_args(args):
    """Expose ``args`` to AnsibleModule (patch_module_args on 2.19, _ANSIBLE_ARGS before)."""
    args = dict(args)
    args.setdefault('_ansible_remote_tmp', '/tmp')
    args.setdefault('_ansible_keep_remote_files', False)
    if patch_module_args is not None:
        with patch_module_args(args):
            yield
        return
    old = basic._ANSIBLE_ARGS
    basic._ANSIBLE_ARGS = to_bytes(json.dumps({'ANSIBLE_MODULE_ARGS': args}))
    try:
        yield
    finally:
        basic._ANSIBLE_ARGS = old


class AnsibleExitJson(Exception):
    def __init__(self, kwargs):
        super(AnsibleExitJson, self).__init__(kwargs)
        self.result = kwargs


class AnsibleFailJson(Exception):
    def __init__(self, kwargs):
        super(AnsibleFailJson, self).__init__(kwargs)
        self.result = kwargs


def exit_json(self, **kwargs):
    kwargs.setdefault('changed', False)
    kwargs.setdefault('warnings', list(getattr(self, '_warnings', [])))
    raise AnsibleExitJson(kwargs)


def fail_json(self, **kwargs):
    kwargs['failed'] = True
    raise AnsibleFailJson(kwargs)
