# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""baremetal.gpu.nvidia_smi run as a process, with stand-in nvidia-smi scripts.

The module runs the way Ansible runs it (``python -m ...nvidia_smi args.json``) and its JSON output
is read back, so the real command runner, real signals and the real JSON encoding are exercised.
The stand-ins print bytes that are not UTF-8, or hang. Each run has its own wall-clock guard, so a
module that hangs fails the test instead of hanging it. These tests use nothing but the module's
documented interface, so they run unchanged against older versions of it (they failed on the
version that wrapped nvidia-smi in coreutils ``timeout`` and decoded its output as UTF-8).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import signal
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(__file__)
XML_DIR = os.path.join(HERE, '..', '..', '..', 'fixtures', 'nvidia-smi-xml')

MODULE = 'ansible_collections.baremetal.gpu.plugins.modules.nvidia_smi'
# Shorter grace periods than the module's 5 s and 2 s keep these tests quick; the logic is the same.
FAST_GRACE = '''
try:
    from ansible_collections.baremetal.gpu.plugins.module_utils import deadline_run
    deadline_run.KILL_GRACE = 0.5
    deadline_run.REAP_GRACE = 0.5
except ImportError:
    pass
'''
# A process stuck in the kernel (state D) ignores SIGKILL. No test can put a process in that state,
# so SIGKILL sent to a process group is dropped here: the stand-in then survives it the same way.
SIGKILL_IGNORED = '''
import os, signal
_killpg = os.killpg
def _killpg_without_sigkill(pgid, sig):
    if sig != signal.SIGKILL:
        _killpg(pgid, sig)
os.killpg = _killpg_without_sigkill
'''


def latin1_capture():
    """A real capture whose timestamp is in a French Latin-1 locale ('lun. f\\xe9vr.'), as a
    localized nvidia-smi prints it; everything else is the capture byte for byte."""
    with open(os.path.join(XML_DIR, 'telegraf__tesla-t4.xml'), 'rb') as handle:
        data = handle.read()
    assert b'Mon Apr 24 16:22:39 2023' in data
    return data.replace(b'Mon Apr 24 16:22:39 2023', b'lun. f\xe9vr. 24 16:22:39 2023')


def stand_in(tmp_path, name, body):
    path = tmp_path / name
    path.write_text(u'#!/bin/sh\n' + body)
    path.chmod(0o755)
    return str(path)


def kill_recorded(tmp_path):
    """Kill every stand-in process that recorded its pid (they may survive a failed test)."""
    for pidfile in tmp_path.glob('*.pid'):
        try:
            os.kill(int(pidfile.read_text().strip()), signal.SIGKILL)
        except (OSError, ValueError):
            pass


def run_module(tmp_path, args, path=None, prelude='', guard=30):
    """Run the module as Ansible does; return (elapsed, parsed JSON). Fails the test on a hang."""
    args_file = tmp_path / 'args.json'
    args_file.write_text(json.dumps({'ANSIBLE_MODULE_ARGS': args}))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    if path is not None:
        env['PATH'] = path
    code = prelude + FAST_GRACE + 'import runpy, sys\nsys.argv = ["nvidia_smi", %r]\nrunpy.run_module(%r, run_name="__main__")\n' % (
        str(args_file), MODULE)
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, '-c', code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=guard)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        kill_recorded(tmp_path)
        pytest.fail('the module was still running after %s s: it has no working time limit' % guard)
    elapsed = time.monotonic() - start
    try:
        result = json.loads(out.decode('utf-8'))
    except ValueError:
        pytest.fail('the module did not print a JSON result (rc %s):\nstdout: %r\nstderr: %s'
                    % (proc.returncode, out[-2000:], err.decode('utf-8', 'replace')[-2000:]))
    return elapsed, result


def assert_valid_utf8(result):
    """Ansible refuses JSON strings that are not valid UTF-8 ('Refusing to deserialize an invalid UTF8 string')."""
    text = json.dumps(result, ensure_ascii=False)
    text.encode('utf-8')  # raises on lone surrogates (undecodable bytes smuggled through)


def test_process_xml_not_utf8_is_read_with_a_warning(tmp_path):
    (tmp_path / 'capture.xml').write_bytes(latin1_capture())
    smi = stand_in(tmp_path, 'nvidia-smi', 'cat %s\n' % (tmp_path / 'capture.xml'))
    elapsed, result = run_module(tmp_path, {'binary_path': smi, 'gpu_count': 1})
    assert_valid_utf8(result)
    assert result.get('failed') is not True, result.get('msg') or result.get('exception')
    assert result['status'] == 'ok'
    assert result['gpus'][0]['name'] == 'Tesla T4'
    assert result['driver_version'] == '515.105.01'
    messages = [w['event']['msg'] if isinstance(w, dict) else w for w in result.get('warnings', [])]
    assert messages == [
        "nvidia-smi -q -x printed 1 byte(s) that are not UTF-8, the first at offset 117: \\xe9 in "
        "'   <timestamp>lun. f\\xe9vr. 24 16:22:39 202' on its output (a corrupted or localized nvidia-smi?); "
        "the XML is read with them replaced by U+FFFD, and messages show them as \\xNN"]


def test_process_failure_text_not_utf8(tmp_path):
    # exit 9 with a localized (Latin-1) message, the way nvidia-smi fails before the driver loads
    smi = stand_in(tmp_path, 'nvidia-smi', "printf 'NVIDIA-SMI a \\351chou\\351: pilote NVIDIA injoignable.\\n'\n"
                                           "printf 'd\\351tail\\n' >&2\nexit 9\n")
    elapsed, result = run_module(tmp_path, {'binary_path': smi, 'allow_no_gpu': True})
    assert_valid_utf8(result)
    assert result['status'] == 'no_driver_communication'
    assert result['failed'] is False and result['rc'] == 9
    assert 'stdout: NVIDIA-SMI a \\xe9chou\\xe9: pilote NVIDIA injoignable.; stderr: d\\xe9tail' in result['reason']
    assert result['stderr'] == 'd\\xe9tail\n'


def test_process_hang_without_coreutils_timeout(tmp_path):
    # No `timeout` on PATH (the module used to run nvidia-smi without any limit then), and a
    # stand-in that ignores SIGTERM and hangs.
    smi = stand_in(tmp_path, 'nvidia-smi', "echo $$ > %s/smi.pid\ntrap '' TERM\nexec /bin/sleep 600\n" % tmp_path)
    try:
        elapsed, result = run_module(tmp_path, {'binary_path': smi, 'timeout': 1}, path=str(tmp_path / 'empty'))
    finally:
        kill_recorded(tmp_path)
    assert result['failed'] is True and result['status'] == 'timeout'
    assert result['msg'].startswith('nvidia-smi -q -x did not finish within the timeout of 1 s: sent SIGTERM, then '
                                    'SIGKILL after 0.5 s; it ended on signal SIGKILL. ')
    assert result['rc'] == -9
    assert elapsed < 1 + 0.5 + 0.5 + 5, elapsed


def test_process_hang_that_survives_sigkill(tmp_path):
    # A GPU in a bad state leaves nvidia-smi in uninterruptible sleep: SIGTERM and SIGKILL do not end
    # it. The `timeout` on PATH stands for coreutils timeout in that case: it waits for its child
    # forever (the module used to wrap nvidia-smi in it and wait for it).
    (tmp_path / 'bin').mkdir()
    stand_in(tmp_path / 'bin', 'timeout', 'echo $$ > %s/timeout.pid\nexec /bin/sleep 600\n' % tmp_path)
    smi = stand_in(tmp_path, 'nvidia-smi', "echo $$ > %s/smi.pid\ntrap '' TERM\nexec /bin/sleep 600\n" % tmp_path)
    try:
        elapsed, result = run_module(tmp_path, {'binary_path': smi, 'timeout': 1}, path=str(tmp_path / 'bin'),
                                     prelude=SIGKILL_IGNORED)
        pid = int((tmp_path / 'smi.pid').read_text())
        with open('/proc/%d/stat' % pid) as handle:
            state = handle.read().rsplit(')', 1)[1].split()[0]
    finally:
        kill_recorded(tmp_path)
    assert result['failed'] is True and result['status'] == 'timeout'
    assert result['msg'].startswith(
        'nvidia-smi -q -x did not finish within the timeout of 1 s: sent SIGTERM, then SIGKILL after 0.5 s; it is '
        'still running (pid %d, state S: sleeping) and cannot be killed from user space. ' % pid)
    assert state == 'S'  # it really was still there when the module gave up
    assert result['rc'] is None
    assert elapsed < 1 + 0.5 + 0.5 + 5, elapsed
