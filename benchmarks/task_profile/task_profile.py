# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""MEASUREMENT ONLY (benchmarks/bench_task_profile.sh): a callback that appends one JSON line per task start to
the file $TASK_PROFILE_LOG, and prints nothing (the tests that read ansible-playbook's output still pass). The time
between a task's start and the next start of the same run is the task's wall time (all its hosts)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: task_profile
type: aggregate
short_description: append each task's start to a file (benchmarks only)
description: One JSON line per task start, per handler start, and at the end of the run, in E(TASK_PROFILE_LOG).
requirements: [enabled in callbacks_enabled]
"""

import json
import os
import time
import uuid

from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'aggregate'
    CALLBACK_NAME = 'task_profile'
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super(CallbackModule, self).__init__(*args, **kwargs)
        self._run = uuid.uuid4().hex  # a pid is reused within a long test session
        self._playbook = ''

    def _write(self, name):
        with open(os.environ.get('TASK_PROFILE_LOG', 'task_profile.jsonl'), 'a', encoding='utf-8') as handle:
            handle.write(json.dumps([self._run, self._playbook, time.time(), name]) + '\n')

    def v2_playbook_on_start(self, playbook):
        self._playbook = os.path.basename(playbook._file_name)
        self._write('@start')

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._write(task.get_name())

    def v2_playbook_on_handler_task_start(self, task):
        self._write('handler: ' + task.get_name())

    def v2_runner_on_ok(self, result):
        self._ran(result)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._ran(result)

    def _ran(self, result):
        # With TASK_PROFILE_COUNT_ACTION=<module> (e.g. baremetal.gpu.nvidia_smi), each run of that module on a
        # host (skipped ones are not runs) is logged as "@ran <host> <task>": summarize.py counts them per host.
        action = os.environ.get('TASK_PROFILE_COUNT_ACTION')
        if action and result._task.action == action:
            self._write('@ran %s %s' % (result._host.get_name(), result._task.get_name()))

    def v2_playbook_on_stats(self, stats):
        self._write('@end')
