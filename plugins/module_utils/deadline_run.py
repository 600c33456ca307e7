# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run a command with a deadline that holds even when the command cannot be killed.

``AnsibleModule.run_command`` has no time limit, and wrapping the command in coreutils
``timeout`` is not enough: ``timeout`` may be missing, and a process stuck in the kernel
(uninterruptible sleep, state D, which is how ``nvidia-smi`` hangs on a GPU in a bad state)
survives SIGTERM and SIGKILL, so ``timeout`` waits for it forever and so does the module.

``run_with_deadline`` starts the command in its own session, reads its output as bytes, and at
the deadline sends SIGTERM to its process group, then SIGKILL after ``kill_grace`` seconds; when
the process is still there ``reap_grace`` seconds later it stops waiting and reports the process
as still running (pid and kernel state from /proc), so the caller can fail with that instead of
hanging. Output is returned as bytes; decoding is the caller's business.

This lives in module_utils rather than in a module because ``subprocess.Popen`` is the only way to
get such a deadline; modules otherwise use ``run_command``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os
import selectors
import signal
import subprocess
import time

# Seconds between SIGTERM and SIGKILL, and between SIGKILL and giving up on the process.
KILL_GRACE = 5.0
REAP_GRACE = 2.0
# After the process exited, how long to keep reading pipes that a surviving descendant holds open.
DRAIN_AFTER_EXIT = 0.5
READ_SIZE = 65536

PROCESS_STATES = {
    'R': 'running', 'S': 'sleeping', 'D': 'uninterruptible sleep in the kernel', 'Z': 'zombie',
    'T': 'stopped', 't': 'stopped by a tracer', 'X': 'dead', 'I': 'idle kernel thread',
}


class RunResult(object):
    """What happened: ``rc`` (negative signal number when killed, None when still running),
    ``stdout``/``stderr`` (bytes), ``timed_out``, ``signals`` (names sent, in order),
    ``still_running`` (gave up waiting), ``pid``, ``state`` (kernel state letter from /proc when
    still running) and ``elapsed`` seconds."""

    def __init__(self, pid):
        self.pid = pid
        self.rc = None
        self.stdout = b''
        self.stderr = b''
        self.timed_out = False
        self.signals = []
        self.still_running = False
        self.state = None
        self.elapsed = 0.0

    def describe_kill(self, kill_grace):
        """'sent SIGTERM, then SIGKILL after 5 s; ...' for failure messages."""
        steps = []
        if 'SIGTERM' in self.signals:
            steps.append('sent SIGTERM')
        if 'SIGKILL' in self.signals:
            steps.append('then SIGKILL after %s s' % _num(kill_grace) if steps else 'sent SIGKILL')
        text = ', '.join(steps) if steps else 'sent no signal'
        rc = self.rc
        if self.still_running:
            state = PROCESS_STATES.get(self.state, self.state or 'unknown')
            text += ('; it is still running (pid %s, state %s: %s) and cannot be killed from user space'
                     % (self.pid, self.state or '?', state))
        elif rc is not None and rc < 0:
            text += '; it ended on signal %s' % _signal_name(abs(rc))
        else:
            text += '; it exited with rc %s' % rc
        return text


def _num(value):
    return ('%d' % value) if float(value) == int(value) else ('%.1f' % value)


def _signal_name(number):
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


def process_state(pid, proc_root='/proc'):
    """The kernel state letter of ``pid`` (R, S, D, Z, ...) from /proc/<pid>/stat, or None."""
    try:
        with open(os.path.join(proc_root, str(pid), 'stat'), 'rb') as handle:
            data = handle.read()
    except (IOError, OSError):
        return None
    # "pid (comm) S ...": comm may contain spaces and parentheses; the state follows the last ')'.
    tail = data[data.rfind(b')') + 1:].split()
    return tail[0].decode('ascii', 'replace') if tail else None


def _signal_group(proc, signum):
    try:
        os.killpg(proc.pid, signum)
    except OSError as exc:
        if exc.errno != errno.ESRCH:
            raise
        return False
    return True


def run_with_deadline(argv, timeout, env=None, kill_grace=None, reap_grace=None):
    """Run ``argv`` (a list) for at most ``timeout`` seconds; return a RunResult.

    Raises OSError when the command cannot be started (for example a missing binary).
    """
    kill_grace = KILL_GRACE if kill_grace is None else kill_grace
    reap_grace = REAP_GRACE if reap_grace is None else reap_grace
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env, close_fds=True, start_new_session=True)
    result = RunResult(proc.pid)
    chunks = {proc.stdout.fileno(): [], proc.stderr.fileno(): []}
    selector = selectors.DefaultSelector()
    for stream in (proc.stdout, proc.stderr):
        selector.register(stream.fileno(), selectors.EVENT_READ)

    deadline = start + timeout
    term_at, kill_at, give_up_at = deadline, deadline + kill_grace, deadline + kill_grace + reap_grace
    exited_at = None
    try:
        while True:
            now = time.monotonic()
            if proc.poll() is not None:
                result.rc = proc.returncode
                exited_at = exited_at or now
                if not selector.get_map() or now - exited_at >= DRAIN_AFTER_EXIT:
                    break
            elif now >= give_up_at:
                result.still_running = True
                result.state = process_state(proc.pid)
                break
            elif now >= kill_at and 'SIGKILL' not in result.signals:
                result.timed_out = True
                _signal_group(proc, signal.SIGKILL)
                result.signals.append('SIGKILL')
                continue
            elif now >= term_at and 'SIGTERM' not in result.signals:
                result.timed_out = True
                _signal_group(proc, signal.SIGTERM)
                result.signals.append('SIGTERM')
                continue

            if exited_at is not None:
                wait = max(exited_at + DRAIN_AFTER_EXIT - now, 0)
            else:
                upcoming = [t for t, sig in ((term_at, 'SIGTERM'), (kill_at, 'SIGKILL')) if sig not in result.signals]
                wait = max(min(upcoming + [give_up_at]) - now, 0)
            wait = min(wait, 0.1)
            if not selector.get_map():
                time.sleep(wait)
                continue
            for key, _mask in selector.select(wait):
                data = os.read(key.fd, READ_SIZE)
                if data:
                    chunks[key.fd].append(data)
                else:
                    selector.unregister(key.fd)
    finally:
        selector.close()
        result.stdout = b''.join(chunks[proc.stdout.fileno()])
        result.stderr = b''.join(chunks[proc.stderr.fileno()])
        proc.stdout.close()
        proc.stderr.close()
        result.elapsed = time.monotonic() - start
    return result
