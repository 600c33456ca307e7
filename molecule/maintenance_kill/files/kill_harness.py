"""Kill tests of the maintenance engine (issue 18): run a playbook, kill -9 its whole process group when a chosen
task starts (plus a delay, to land inside the task), run again, and so on; print every point so a failure can be
replayed with the same seed.

The points are chosen from a fixed seed among CANDIDATES (in rollout order, so each run gets further than the last):
the day-1 rollout (playbooks/gpu_nodes.yml) first, then the upgrade (playbooks/upgrade_driver.yml). After the last
kill the harness does NOT finish the job: molecule's converge does, as a user would, and idempotence and verify
check the result. Writes a JSON log of the points (--log) that verify reads.

    kill_harness.py --inventory INV --playbooks DIR [--seed 18] [--count 6] [--log kills.json]
"""
import argparse
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time

# (playbook, what the point is, the start of the task line to wait for, seconds to wait after it)
CANDIDATES = [
    ('gpu_nodes.yml', 'day 1: plan, reading the nodes', 'TASK [baremetal.gpu.node_maintenance : Host rollout plan | Read the node', 0),
    ('gpu_nodes.yml', 'day 1: nvidia_driver decides', 'TASK [baremetal.gpu.nvidia_driver : Hold the driver packages', 0),
    ('gpu_nodes.yml', 'day 1: reboot decision', 'TASK [baremetal.gpu.nvidia_driver : Work out whether a reboot is needed', 0),
    ('upgrade_driver.yml', 'upgrade: lock taken', 'TASK [baremetal.gpu.node_maintenance : Lock | Say who holds the lock now', 0),
    ('upgrade_driver.yml', 'upgrade: enter (record upgrading written)',
     'TASK [baremetal.gpu.upgrade : Stop what holds the GPU, change the branch', 0),
    ('upgrade_driver.yml', 'upgrade: change, GPU services stopped', 'TASK [baremetal.gpu.upgrade : Change | Stop those that run', 1),
    ('upgrade_driver.yml', 'upgrade: change, inside the apt transaction',
     'TASK [baremetal.gpu.nvidia_driver : Install the driver packages and remove those', 8),
    ('upgrade_driver.yml', 'upgrade: reboot decision', 'TASK [baremetal.gpu.nvidia_driver : Work out whether a reboot is needed', 0),
    ('upgrade_driver.yml', 'upgrade: check', 'TASK [baremetal.gpu.upgrade : Check | Read the driver now on the node', 0),
    ('upgrade_driver.yml', 'upgrade: leave (record done being written)',
     'TASK [baremetal.gpu.upgrade : Record | Write the upgrade record (done)', 0),
    ('upgrade_driver.yml', 'upgrade: unlock', 'TASK [baremetal.gpu.node_maintenance : Unlock | Release the lock file', 0),
]


# No NVIDIA repository (toolkit) and no RKE2 in the test nodes: day 1 runs the driver part of the host layer.
EXTRA = {'gpu_nodes.yml': ['--skip-tags', 'container_toolkit,rke2_nvidia_runtime']}


# The phases every seed covers (the "inside enter, change, reboot decision, leave"; RKE2 restart: no RKE2 here,
# killed in molecule/rke2_nvidia_runtime against its stand-in RKE2 instead).
PHASES = {'day 1': (0, 1, 2), 'enter': (3, 4), 'change': (5, 6), 'reboot decision': (7,), 'leave': (9, 10)}


def choose(seed, count):
    """``count`` candidates chosen by ``seed``, in rollout order: one of each phase, then any others."""
    rng = random.Random(seed)
    picked = set(rng.choice(group) for _name, group in sorted(PHASES.items()))
    rest = [i for i in range(len(CANDIDATES)) if i not in picked]
    picked.update(rng.sample(rest, max(0, count - len(picked))))
    return sorted(picked)


def run_until(cmd, env, marker, delay, timeout=900):
    """Run ``cmd``; when a line starts with ``marker``, wait ``delay`` s and kill -9 the process group.
    Returns (killed, rc, seconds, tail of the output)."""
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            start_new_session=True)
    killed = threading.Event()
    lines = []

    def kill():
        try:
            os.killpg(proc.pid, signal.SIGKILL)
            killed.set()
        except ProcessLookupError:
            pass

    timer = None
    for line in proc.stdout:
        lines.append(line)
        sys.stdout.write('    | ' + line)
        if timer is None and marker and line.startswith(marker):
            timer = threading.Timer(delay, kill)
            timer.start()
        if time.monotonic() - start > timeout:
            kill()
            break
    rc = proc.wait()
    if timer is not None:
        timer.join()
    return killed.is_set(), rc, round(time.monotonic() - start, 1), ''.join(lines[-40:])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--inventory', required=True)
    parser.add_argument('--playbooks', required=True)
    parser.add_argument('--seed', type=int, default=18)
    parser.add_argument('--count', type=int, default=6)
    parser.add_argument('--log', default='kills.json')
    args = parser.parse_args()

    points = choose(args.seed, args.count)
    print('KILL SEED %d: %d points (replay: KILL_SEED=%d molecule test -s maintenance_kill)' % (
        args.seed, len(points), args.seed))
    for n, i in enumerate(points, 1):
        playbook, what, marker, delay = CANDIDATES[i]
        print('  point %d: %s (%s, at "%s" + %d s)' % (n, what, playbook, marker, delay))
    sys.stdout.flush()
    env = dict(os.environ, ANSIBLE_FORCE_COLOR='0', ANSIBLE_NOCOLOR='1')
    log = {'seed': args.seed, 'points': []}
    for n, i in enumerate(points, 1):
        playbook, what, marker, delay = CANDIDATES[i]
        cmd = ['ansible-playbook', '-i', args.inventory, os.path.join(args.playbooks, playbook)] + EXTRA.get(playbook, [])
        print('RUN %d: %s, to be killed at %s' % (n, playbook, what))
        sys.stdout.flush()
        killed, rc, seconds, tail = run_until(cmd, env, marker, delay)
        entry = {'point': n, 'playbook': playbook, 'what': what, 'marker': marker, 'delay': delay,
                 'killed': killed, 'rc': rc, 'seconds': seconds}
        log['points'].append(entry)
        outcome = ('KILLED at ' + what) if killed else 'NOT KILLED: the point was not reached, the run ended'
        print('RUN %d: %s after %s s (rc %s)' % (n, outcome, seconds, rc))
        # A run that was not killed must not have failed: that would be a failure of the rerun after a kill.
        if not killed and rc != 0:
            print('RUN %d FAILED without a kill: the rerun after the previous kill does not converge.\n%s' % (n, tail))
            with open(args.log, 'w') as handle:
                json.dump(log, handle, indent=2)
            return 1
        sys.stdout.flush()
    with open(args.log, 'w') as handle:
        json.dump(log, handle, indent=2)
    print('KILL SEED %d: %d runs, %d killed' % (args.seed, len(points), sum(1 for p in log['points'] if p['killed'])))
    return 0


if __name__ == '__main__':
    sys.exit(main())
