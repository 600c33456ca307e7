# Copyright (c) baremetal.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""make test's harness: the lanes never start more CPU-bound jobs than cores (scripts/run-scenarios.py), and the
watchdog ends a hung scenario but never a slow one (scripts/watchdog.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import importlib.util
import os
import re
import subprocess
import sys
import time

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))


def load(name, filename):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, 'scripts', filename))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


lanes = load('run_scenarios', 'run-scenarios.py')
watchdog = load('watchdog', 'watchdog.py')


@pytest.mark.parametrize('cores', [1, 2, 3, 4, 16])
@pytest.mark.parametrize('foreground', [True, False])
def test_never_more_cpu_bound_jobs_than_cores(cores, foreground):
    for running in range(cores + 2):
        for idle in (0.0, 0.5, 1.0, float(cores)):
            if lanes.may_start(running, cores, foreground, idle):
                assert running + 1 + (1 if foreground else 0) <= cores, (running, cores, foreground, idle)


def test_one_lane_runs_on_a_busy_machine_and_more_only_on_idle_cpu():
    # No idle CPU at all (stress-ng beside the suite): the first lane starts, a second does not.
    assert lanes.may_start(0, 2, False, 0.0)
    assert not lanes.may_start(1, 2, False, 0.2)
    assert lanes.may_start(1, 2, False, 1.5)
    # The foreground takes one of two cores: one lane, whatever the idle CPU.
    assert lanes.may_start(0, 2, True, 2.0)
    assert not lanes.may_start(1, 2, True, 2.0)
    # One core and the foreground running: no lane until it is done.
    assert not lanes.may_start(0, 1, True, 1.0)


def test_idle_cpu_reads_the_window():
    samples = iter([(0.0, 1000, 500), (10.0, 2000, 1000), (20.0, 3000, 1000)])
    idle = lanes.IdleCpu(window=100, reader=lambda: next(samples))
    cores = os.cpu_count() or 1
    assert idle.cores() == 0.0
    assert idle.cores() == pytest.approx(cores * 0.5)
    assert idle.cores() == pytest.approx(cores * 0.25)


def test_the_lanes_never_run_more_scenarios_than_allowed(tmp_path):
    """The real scheduler loop with stand-in scenarios: each appends its start and end to a file."""
    record = tmp_path / 'record'
    done = tmp_path / 'foreground-done'
    env = dict(os.environ)
    # An exported bash function, as scripts/test-all.sh exports the real run_scenario.
    env['BASH_FUNC_run_scenario%%'] = ('() { echo "start $1 $(date +%s.%N)" >>' + str(record) + '; sleep 3; '
                                       'echo "end $1 $(date +%s.%N)" >>' + str(record) + '; }')
    proc = subprocess.Popen([sys.executable, os.path.join(ROOT, 'scripts', 'run-scenarios.py'), '--cores', '2',
                             '--free-cores', '0', '--settle', '0.5', '--foreground-done', str(done),
                             '--deps', 'c=a', '--', 'a', 'b', 'c', 'd'], env=env)
    time.sleep(5)
    done.touch()
    assert proc.wait(timeout=120) == 0
    events = sorted((float(t), kind, name) for kind, name, t in (line.split() for line in record.read_text().splitlines()))
    assert sorted(name for _t, kind, name in events if kind == 'start') == ['a', 'b', 'c', 'd']
    running, most_with_foreground, most_after = set(), 0, 0
    for when, kind, name in events:
        if kind == 'start':
            running.add(name)
            assert name != 'c' or any(k == 'end' and n == 'a' and t <= when for t, k, n in events)
        else:
            running.discard(name)
        if when < done.stat().st_mtime:
            most_with_foreground = max(most_with_foreground, len(running))
        else:
            most_after = max(most_after, len(running))
    assert most_with_foreground == 1
    assert most_after <= 2


def run_watchdog(tmp_path, *command, idle=2.0, extra=()):
    cpu_file = tmp_path / 'nodes.cpu'
    start = time.time()
    proc = subprocess.run([sys.executable, os.path.join(ROOT, 'scripts', 'watchdog.py'), '--idle', str(idle),
                           '--interval', '0.5', '--cpu-file', str(cpu_file)] + list(extra) + ['--'] + list(command),
                          capture_output=True, text=True, timeout=120, check=False)
    return proc, time.time() - start, cpu_file


def test_watchdog_ends_a_silent_idle_command_and_its_whole_tree(tmp_path):
    marker = tmp_path / 'survivor'
    # A child in a session of its own (as molecule starts ansible-playbook) must be ended too.
    script = 'setsid sh -c "sleep 30; touch %s" & sleep 30' % marker
    proc, took, cpu_file = run_watchdog(tmp_path, 'sh', '-c', script)
    assert proc.returncode == 124
    assert 'no output' in proc.stdout and 'taken as a hang' in proc.stdout
    assert took < 25
    time.sleep(1)
    assert not marker.exists()
    assert cpu_file.read_text().strip() == '0.0'


def test_watchdog_leaves_a_silent_busy_command_alone(tmp_path):
    # Silent for 5 s but on the CPU all the time, as a DKMS build is: not a hang.
    busy = 'import time\nend = time.time() + 5\nwhile time.time() < end: pass\nprint("built")'
    proc, _took, _cpu = run_watchdog(tmp_path, sys.executable, '-c', busy, extra=('--min-cpu', '0.5'))
    assert proc.returncode == 0, proc.stdout
    assert 'built' in proc.stdout


def test_watchdog_leaves_a_talking_command_alone_and_keeps_its_status(tmp_path):
    proc, _took, _cpu = run_watchdog(tmp_path, 'sh', '-c', 'for i in 1 2 3 4 5 6 7 8; do echo $i; sleep 0.5; done; exit 3')
    assert proc.returncode == 3
    assert proc.stdout.split()[:8] == [str(i) for i in range(1, 9)]


def test_watchdog_backstop(tmp_path):
    proc, _took, _cpu = run_watchdog(tmp_path, 'sh', '-c', 'while true; do echo tick; sleep 0.2; done',
                                     idle=60, extra=('--max', '2'))
    assert proc.returncode == 124
    assert 'backstop of 2 s' in proc.stdout


def test_progress_counts_output_cpu_and_io():
    progress = watchdog.Progress(idle=10, min_cpu=2, min_io=100, now=0)
    assert progress.update(0, False, 0, 0) == 0
    assert progress.update(5, False, 1.5, 50) == 5
    assert progress.update(9, False, 2.5, 50) == 0          # CPU since the mark passed 2 s
    assert progress.update(15, False, 3.0, 149) == 6
    assert progress.update(16, False, 3.0, 151) == 0        # I/O passed 100 bytes
    assert progress.update(26, False, 3.0, 151) == 10
    assert progress.hung(26)
    assert progress.update(27, True, 3.0, 151) == 0         # output
    assert not progress.hung(27)


def _harness(function, *args):
    """A function of scripts/test-all.sh (produced_nodes, producer_of), called on its own."""
    with open(os.path.join(ROOT, 'scripts', 'test-all.sh'), encoding='utf-8') as handle:
        text = handle.read()
    start = text.index('%s() {' % function)
    body = text[start:text.index('\n}\n', start) + 3]
    out = subprocess.run(['bash', '-c', body + '\n%s "$@"' % function, 'harness'] + list(args), check=True,
                         capture_output=True, text=True).stdout
    return out.split()


def test_every_converged_node_a_scenario_starts_from_is_committed_by_its_producer():
    """A scenario that starts from BAREMETAL_CONVERGED_<NODE> (its molecule.yml) gets that image only when one of its
    producers (test-all.sh, producer_of) commits that node (produced_nodes) and has a platform of that name."""
    seen = 0
    for path in sorted(glob.glob(os.path.join(ROOT, 'molecule', '*', 'molecule.yml'))):
        scenario = os.path.basename(os.path.dirname(path))
        with open(path, encoding='utf-8') as handle:
            wanted = sorted(set(re.findall(r'BAREMETAL_CONVERGED_([A-Z0-9_]+)', handle.read())))
        producers = _harness('producer_of', scenario)
        for var in wanted:
            node = var.lower().replace('_', '-')
            makers = [p for p in producers if node in _harness('produced_nodes', p)]
            assert makers, '%s starts from %s, which none of its producers %s commits' % (scenario, node, producers)
            with open(os.path.join(ROOT, 'molecule', makers[0], 'molecule.yml'), encoding='utf-8') as handle:
                assert '"${MOLECULE_SCENARIO_NAME}-%s"' % node in handle.read(), (makers[0], node)
            seen += 1
    assert seen >= 8, seen
