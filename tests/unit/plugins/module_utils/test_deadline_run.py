# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""deadline_run.run_with_deadline with real processes (/bin/sh scripts)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import signal

import pytest

from ansible_collections.baremetal.gpu.plugins.module_utils import deadline_run


def sh(script):
    return ['/bin/sh', '-c', script]


def test_output_as_bytes_and_rc():
    result = deadline_run.run_with_deadline(sh("printf 'a\\351\\n'; printf 'err' >&2; exit 3"), 10)
    assert (result.rc, result.stdout, result.stderr) == (3, b'a\xe9\n', b'err')
    assert not result.timed_out and result.signals == [] and not result.still_running


def test_large_output_is_read_whole():
    result = deadline_run.run_with_deadline(sh('head -c 3000000 /dev/zero'), 10)
    assert result.rc == 0 and len(result.stdout) == 3000000


def test_environment_is_passed():
    result = deadline_run.run_with_deadline(sh('echo $LC_ALL'), 10, env={'LC_ALL': 'C', 'PATH': '/bin:/usr/bin'})
    assert result.stdout == b'C\n'


def test_sigterm_ends_a_hang():
    result = deadline_run.run_with_deadline(['/bin/sleep', '60'], 0.3, kill_grace=5, reap_grace=1)
    assert result.timed_out and result.signals == ['SIGTERM'] and result.rc == -signal.SIGTERM
    assert result.elapsed < 3
    assert result.describe_kill(5) == 'sent SIGTERM; it ended on signal SIGTERM'


def test_sigkill_when_sigterm_is_ignored():
    result = deadline_run.run_with_deadline(sh("trap '' TERM; exec /bin/sleep 60"), 0.3, kill_grace=0.3, reap_grace=1)
    assert result.signals == ['SIGTERM', 'SIGKILL'] and result.rc == -signal.SIGKILL
    assert result.describe_kill(0.3) == 'sent SIGTERM, then SIGKILL after 0.3 s; it ended on signal SIGKILL'


def test_gives_up_on_a_process_that_survives_sigkill(monkeypatch, tmp_path):
    # A process in uninterruptible sleep survives SIGKILL; here SIGKILL is dropped to get that.
    real_killpg = os.killpg
    monkeypatch.setattr(deadline_run.os, 'killpg',
                        lambda pgid, sig: None if sig == signal.SIGKILL else real_killpg(pgid, sig))
    pidfile = tmp_path / 'pid'
    result = deadline_run.run_with_deadline(sh("echo $$ > %s; trap '' TERM; exec /bin/sleep 60" % pidfile), 0.3,
                                            kill_grace=0.2, reap_grace=0.2)
    try:
        assert result.still_running and result.rc is None
        assert result.pid == int(pidfile.read_text())
        assert result.state == 'S'
        assert result.describe_kill(0.2) == (
            'sent SIGTERM, then SIGKILL after 0.2 s; it is still running (pid %d, state S: sleeping) and cannot '
            'be killed from user space' % result.pid)
        assert result.elapsed < 3
    finally:
        real_killpg(result.pid, signal.SIGKILL)


def test_descendant_holding_the_pipe_does_not_keep_us_waiting(tmp_path):
    # the command exits at once but leaves a process in another session holding stdout open
    pidfile = tmp_path / 'pid'
    script = "setsid sh -c 'echo $$ > %s; exec sleep 60' & sleep 0.2; echo done" % pidfile
    result = deadline_run.run_with_deadline(sh(script), 30)
    try:
        assert result.rc == 0 and result.stdout == b'done\n' and not result.timed_out
        assert result.elapsed < 5
    finally:
        os.kill(int(pidfile.read_text()), signal.SIGKILL)


def test_missing_binary_raises():
    with pytest.raises(OSError):
        deadline_run.run_with_deadline(['/nonexistent/nvidia-smi'], 1)


def test_process_state_parses_names_with_parentheses(tmp_path):
    (tmp_path / '42').mkdir()
    (tmp_path / '42' / 'stat').write_bytes(b'42 (a) b (c)) D 1 42 42 0 -1')
    assert deadline_run.process_state(42, proc_root=str(tmp_path)) == 'D'
    assert deadline_run.process_state(43, proc_root=str(tmp_path)) is None
