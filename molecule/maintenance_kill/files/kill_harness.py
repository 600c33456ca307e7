"""Kill tests of the maintenance engine: run a playbook, kill -9 its whole process group when a chosen
task starts (plus a delay, to land inside the task), run again, and so on; print every point so a failure can be
replayed with the same seed.

The points are chosen from a fixed seed among CANDIDATES (in rollout order, so each run gets further than the last):
the day-1 rollout (playbooks/gpu_nodes.yml) first, then the upgrade (playbooks/upgrade_driver.yml). After the last
kill the harness does NOT finish the job: molecule's converge does, as a user would, and idempotence and verify
check the result. Writes a JSON log of the points (--log) that verify reads.

    kill_harness.py --inventory INV --playbooks DIR [--seed 18] [--count 6] [--log kills.json]

One point only, without a rerun (molecule/uninstall's side effect; its converge is the rerun):

    kill_harness.py --inventory INV --playbooks DIR --once PLAYBOOK --marker TASK --nodes NODE [--limit NODE] --log F
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

# The delay of a point where dpkg itself is killed: not seconds, but "once dpkg is held in the node" (kill_in_dpkg).
DPKG = 'dpkg'
ARMED = '/run/baremetal-gpu-test/dpkg-block-armed'
BLOCKING = '/run/baremetal-gpu-test/dpkg-blocking'
JOURNAL = '/var/lib/dpkg/updates'
RECORD = '/var/lib/baremetal-gpu/nvidia_driver/apt-transaction.json'
# What nvidia_driver says once it finished its own interrupted transaction (roles/nvidia_driver/tasks/apt-recover.yml).
REPAIRED = 'Finished the apt transaction an earlier run of this role'

# (playbook, what the point is, the start of the task line to wait for, seconds to wait after it, or DPKG)
CANDIDATES = [
    ('gpu_nodes.yml', 'day 1: plan, reading the nodes', 'TASK [baremetal.gpu.node_maintenance : Host rollout plan | Read the node', 0),
    ('gpu_nodes.yml', 'day 1: nvidia_driver decides', 'TASK [baremetal.gpu.nvidia_driver : Hold the driver packages', 0),
    ('gpu_nodes.yml', 'day 1: reboot decision', 'TASK [baremetal.gpu.nvidia_driver : Work out whether a reboot is needed', 0),
    ('upgrade_driver.yml', 'upgrade: lock taken', 'TASK [baremetal.gpu.node_maintenance : Lock | Say who holds the lock now', 0),
    ('upgrade_driver.yml', 'upgrade: enter (record upgrading written)',
     'TASK [baremetal.gpu.upgrade : Stop what holds the GPU, change the branch', 0),
    ('upgrade_driver.yml', 'upgrade: change, GPU services stopped', 'TASK [baremetal.gpu.node_maintenance : GPU holders | Stop them', 1),
    # dpkg itself killed half-way (DPKG below): the test-only trigger package of prepare.yml holds dpkg inside the role's
    # apt transaction until apt, dpkg and ansible-playbook are all killed, as a dropped SSH session kills them.
    ('upgrade_driver.yml', 'upgrade: change, dpkg killed inside the apt transaction',
     'TASK [baremetal.gpu.nvidia_driver : Install the driver packages and remove those', DPKG),
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
# Every seed kills dpkg itself once too (the repair of nvidia_driver's interrupted apt transaction).
PHASES = {'day 1': (0, 1, 2), 'enter': (3, 4), 'change': (5,), 'dpkg': (6,), 'reboot decision': (7,), 'leave': (9, 10)}


def choose(seed, count):
    """``count`` candidates chosen by ``seed``, in rollout order: one of each phase, then any others."""
    rng = random.Random(seed)
    picked = set(rng.choice(group) for _name, group in sorted(PHASES.items()))
    rest = [i for i in range(len(CANDIDATES)) if i not in picked]
    picked.update(rng.sample(rest, max(0, count - len(picked))))
    return sorted(picked)


def podman(node, *argv):
    """A command in a test node; its result (rc, output)."""
    res = subprocess.run(['podman', 'exec', node] + list(argv), capture_output=True, text=True, timeout=60, check=False)
    return res.returncode, res.stdout + res.stderr


def kill_in_dpkg(nodes, kill, timeout=600):
    """Once dpkg is held in a node (the trigger package of prepare.yml), kill -9 ansible-playbook (``kill``), then apt,
    dpkg and the trigger script in that node: what a dropped SSH session does to a run, with dpkg surely half-way.
    Returns what the node was left with: its name, dpkg's journal entries, whether the role's record is there."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        for node in nodes:
            if podman(node, 'test', '-e', BLOCKING)[0] == 0:
                kill()
                for argv in (['-x', 'apt-get'], ['-x', 'dpkg'], ['-f', 'baremetal-gpu-test-dpkg-blocker.postinst'],
                             ['-x', 'sleep']):
                    podman(node, 'pkill', '-9', *argv)
                podman(node, 'rm', '-f', BLOCKING)
                journal = podman(node, 'find', JOURNAL, '-regex', '.*/[0-9]+')[1].split()
                return {'node': node, 'dpkg_journal_entries': len(journal),
                        'record': podman(node, 'test', '-e', RECORD)[0] == 0}
        time.sleep(1)
    return {'node': None, 'dpkg_journal_entries': 0, 'record': False}


def arm(nodes, armed):
    """Arm (or disarm) the trigger package of dpkg_blocker.yml in every node."""
    for node in nodes:
        if armed:
            podman(node, 'sh', '-c', 'mkdir -p %s && touch %s' % (os.path.dirname(ARMED), ARMED))
        else:
            podman(node, 'rm', '-f', ARMED)


def interrupted_inside(killed, seen):
    """Whether a DPKG point did what it is for: the run killed with dpkg's journal not empty and the role's record of
    its transaction there. Without it the repair is not exercised, and that is a failure of the test, not a pass."""
    return bool(killed and seen.get('dpkg_journal_entries', 0) > 0 and seen.get('record'))


def run_until(cmd, env, marker, delay, timeout=900, nodes=()):
    """Run ``cmd``; when a line starts with ``marker``, wait ``delay`` s and kill -9 the process group (with DPKG:
    the trigger package armed in ``nodes`` for the run, and once dpkg is held in one of them, kill_in_dpkg). Returns
    (killed, rc, seconds, tail of the output, the whole output, what kill_in_dpkg saw)."""
    if delay == DPKG:
        arm(nodes, True)
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
    seen = {}
    for line in proc.stdout:
        lines.append(line)
        sys.stdout.write('    | ' + line)
        if timer is None and marker and line.startswith(marker):
            if delay == DPKG:
                timer = threading.Thread(target=lambda: seen.update(kill_in_dpkg(nodes, kill)))
            else:
                timer = threading.Timer(delay, kill)
            timer.start()
        if time.monotonic() - start > timeout:
            kill()
            break
    rc = proc.wait()
    if timer is not None:
        timer.join()
    if delay == DPKG:
        arm(nodes, False)
    return killed.is_set(), rc, round(time.monotonic() - start, 1), ''.join(lines[-40:]), ''.join(lines), seen


def once(args, env, nodes):
    """One run of ``args.once`` killed with dpkg held inside the task ``args.marker``; no rerun. 0 when dpkg was
    left interrupted inside the role's own transaction (its record there), else 1."""
    cmd = ['ansible-playbook', '-i', args.inventory, os.path.join(args.playbooks, args.once)]
    cmd += ['--limit', args.limit] if args.limit else []
    killed, rc, seconds, tail, _output, seen = run_until(cmd, env, args.marker, DPKG, nodes=nodes)
    entry = {'playbook': args.once, 'marker': args.marker, 'killed': killed, 'rc': rc, 'seconds': seconds}
    entry.update(seen)
    with open(args.log, 'w') as handle:
        json.dump(entry, handle, indent=2)
    print('ONCE: %s %s after %s s; dpkg journal entries %s, the role transaction record %s' % (
        args.once, 'KILLED with dpkg held' if killed else 'NOT KILLED', seconds, seen.get('dpkg_journal_entries'),
        'there' if seen.get('record') else 'MISSING'))
    if not interrupted_inside(killed, seen):
        print('ONCE FAILED: dpkg was not left interrupted inside the role\'s transaction.\n%s' % tail)
        return 1
    return 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--inventory', required=True)
    parser.add_argument('--playbooks', required=True)
    parser.add_argument('--seed', type=int, default=18)
    parser.add_argument('--count', type=int, default=6)
    parser.add_argument('--log', default='kills.json')
    parser.add_argument('--nodes', default='', help='the test nodes (podman containers), comma-separated')
    parser.add_argument('--once', metavar='PLAYBOOK', help='one run of PLAYBOOK killed with dpkg held, no rerun')
    parser.add_argument('--marker', help='with --once: the start of the task line after which dpkg is held')
    parser.add_argument('--limit', help='with --once: ansible-playbook --limit')
    args = parser.parse_args()
    env = dict(os.environ, ANSIBLE_FORCE_COLOR='0', ANSIBLE_NOCOLOR='1')
    nodes = [node for node in args.nodes.split(',') if node]
    if args.once:
        return once(args, env, nodes)

    points = choose(args.seed, args.count)
    print('KILL SEED %d: %d points (replay: KILL_SEED=%d molecule test -s maintenance_kill)' % (
        args.seed, len(points), args.seed))
    for n, i in enumerate(points, 1):
        playbook, what, marker, delay = CANDIDATES[i]
        when = 'dpkg held in a node' if delay == DPKG else '%d s' % delay
        print('  point %d: %s (%s, at "%s" + %s)' % (n, what, playbook, marker, when))
    sys.stdout.flush()
    log = {'seed': args.seed, 'points': []}
    dpkg_killed = None
    for n, i in enumerate(points, 1):
        playbook, what, marker, delay = CANDIDATES[i]
        cmd = ['ansible-playbook', '-i', args.inventory, os.path.join(args.playbooks, playbook)] + EXTRA.get(playbook, [])
        print('RUN %d: %s, to be killed at %s' % (n, playbook, what))
        sys.stdout.flush()
        killed, rc, seconds, tail, output, seen = run_until(cmd, env, marker, delay, nodes=nodes)
        entry = {'point': n, 'playbook': playbook, 'what': what, 'marker': marker, 'delay': delay,
                 'killed': killed, 'rc': rc, 'seconds': seconds}
        entry.update(seen)
        log['points'].append(entry)
        if seen:
            print('RUN %d: dpkg killed in %s: %d entries in its journal, the role transaction record %s' % (
                n, seen['node'], seen['dpkg_journal_entries'], 'there' if seen['record'] else 'MISSING'))
            if not interrupted_inside(killed, seen):
                print('RUN %d FAILED: dpkg was not left interrupted inside the role\'s transaction.\n%s' % (n, tail))
                with open(args.log, 'w') as handle:
                    json.dump(log, handle, indent=2)
                return 1
            dpkg_killed = n
        elif dpkg_killed and REPAIRED in output:
            entry['repaired'] = 'the interrupted transaction of run %s' % dpkg_killed
            print('RUN %d: nvidia_driver finished the apt transaction run %s was killed in' % (n, dpkg_killed))
            dpkg_killed = None
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
    if dpkg_killed:
        print('RUN %s killed dpkg, and no later run said that nvidia_driver finished that transaction' % dpkg_killed)
        return 1
    print('KILL SEED %d: %d runs, %d killed' % (args.seed, len(points), sum(1 for p in log['points'] if p['killed'])))
    return 0


if __name__ == '__main__':
    sys.exit(main())
