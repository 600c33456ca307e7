"""Run molecule scenarios in lanes, never more CPU-bound jobs than the machine has cores.

    python3 scripts/run-scenarios.py [--cores N] [--foreground-done FILE] --deps consumer=producer ... SCENARIO ...

Every scenario is a CPU-bound job (its converge installs and builds in the test nodes); so is the foreground of
scripts/test-all.sh (the static checks and the integration suite, run one after the other) until it creates the file
named by --foreground-done. At any moment the lanes are at most the cores less one while the foreground runs
(`lanes_allowed`), and a lane beyond the first starts only when the machine has had at least --free-cores of idle CPU
over the last seconds (`may_start`): a machine shared with other work (stress-ng beside the suite) gets fewer lanes,
never more. One lane always runs, so the suite moves on a busy machine too.

Scenarios are started in the order given. A scenario that starts from other scenarios' committed nodes
(--deps uninstall=nvidia_driver uninstall=nvidia_driver_debian12) is held back while one of its producers has not
finished and some other scenario can run instead; if nothing else can run, the lane waits for the producer. Each
scenario is run as `bash -c 'run_scenario "$1"' _ NAME` (scripts/test-all.sh exports run_scenario); its exit status is
its result. A consumer whose producer failed converges its own nodes. --jobs-log FILE gets one line per start: the
time, the jobs running with it (foreground included) and the cores.
Exit status: 0 when every scenario passed, 1 otherwise.
"""
import argparse
import os
import subprocess
import sys
import time


def next_runnable(pending, deps, finished, running):
    """The first pending scenario whose producers have all finished (or that has none), else None. A producer that
    is neither pending nor running (not in this run) holds nothing back."""
    for name in pending:
        if all(p in finished or (p not in pending and p not in running) for p in deps.get(name, ())):
            return name
    return None


def lanes_allowed(cores, foreground_active):
    """How many scenarios may run at once: the cores, less the one the foreground checks take while they run."""
    return max(0, cores - (1 if foreground_active else 0))


def may_start(running, cores, foreground_active, idle_cores, free_cores=0.75):
    """Whether one more scenario may start now, with ``running`` scenarios running and ``idle_cores`` of CPU idle
    lately: never past lanes_allowed; the first lane whenever it is allowed; a further one only on idle CPU."""
    if running >= lanes_allowed(cores, foreground_active):
        return False
    return running == 0 or idle_cores >= free_cores


class IdleCpu:
    """Idle CPU of the whole machine, in cores, over a sliding window of /proc/stat samples."""

    def __init__(self, window=20.0, reader=None):
        self.window = window
        self.reader = reader or self.read
        self.samples = []

    @staticmethod
    def read():
        with open("/proc/stat", encoding="utf-8") as handle:
            fields = [int(v) for v in handle.readline().split()[1:]]
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
        return time.time(), sum(fields[:8]), idle

    def cores(self):
        now, total, idle = self.reader()
        self.samples.append((now, total, idle))
        while len(self.samples) > 2 and now - self.samples[1][0] >= self.window:
            self.samples.pop(0)
        first = self.samples[0]
        if total == first[1]:
            return 0.0
        return (os.cpu_count() or 1) * (idle - first[2]) / (total - first[1])


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--foreground-done", default=None,
                        help="a file whose existence says the foreground checks are done")
    parser.add_argument("--free-cores", type=float, default=0.75)
    parser.add_argument("--jobs-log", default=None)
    parser.add_argument("--settle", type=float, default=10.0,
                        help="seconds after a start before another is weighed, so that its load shows")
    parser.add_argument("--deps", nargs="*", default=[], help="consumer=producer (repeat for several producers)")
    parser.add_argument("scenarios", nargs="*")
    args = parser.parse_args(argv)
    deps = {}
    for item in args.deps:
        consumer, producer = item.split("=", 1)
        deps.setdefault(consumer, []).append(producer)
    pending = list(args.scenarios)
    running = {}
    finished = {}
    idle = IdleCpu()
    idle.cores()
    time.sleep(min(2.0, args.settle))
    while pending or running:
        foreground = bool(args.foreground_done) and not os.path.exists(args.foreground_done)
        free = idle.cores()
        if pending and may_start(len(running), args.cores, foreground, free, args.free_cores):
            name = next_runnable(pending, deps, finished, running)
            if name is not None:
                pending.remove(name)
                jobs = len(running) + 1 + (1 if foreground else 0)
                print("[lanes] start %s: %d CPU-bound jobs on %d cores (%s; %.1f cores idle lately)"
                      % (name, jobs, args.cores, "foreground running" if foreground else "foreground done", free),
                      flush=True)
                if args.jobs_log:
                    with open(args.jobs_log, "a", encoding="utf-8") as handle:
                        handle.write("%d\t%s\t%d\t%d\n" % (time.time(), name, jobs, args.cores))
                running[name] = subprocess.Popen(["bash", "-c", 'run_scenario "$1"', "_", name])
                time.sleep(args.settle)
                continue
        time.sleep(2)
        for name, proc in list(running.items()):
            if proc.poll() is not None:
                finished[name] = proc.returncode
                del running[name]
                print("[lanes] done %s rc=%s" % (name, proc.returncode), flush=True)
    return 0 if all(rc == 0 for rc in finished.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
