"""Run molecule scenarios in N lanes, each a separate process, respecting image dependencies.

    python3 scripts/run-scenarios.py --jobs 2 --deps consumer=producer ... SCENARIO ...

Scenarios are started in the order given (longest first is the caller's choice). A scenario that
starts from other scenarios' committed nodes (--deps uninstall=nvidia_driver uninstall=nvidia_driver_debian12)
is held back while one of its producers has not finished and some other scenario can run instead; if nothing else can
run, the lane waits for the producer. Each scenario is run as `bash -c 'run_scenario "$1"' _ NAME`
(scripts/test-all.sh exports run_scenario); its exit status is its result. The producer's failure
does not skip the consumer: a consumer whose producer's images are missing converges its own nodes.
With --more-jobs N --when-exists FILE, up to N scenarios run at once from the moment FILE exists (scripts/test-all.sh
creates it when its foreground checks are done: the CPU they used goes to a third lane).
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


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--more-jobs", type=int, default=0, help="lanes once --when-exists names a file that exists")
    parser.add_argument("--when-exists", default=None)
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
    jobs = args.jobs
    while pending or running:
        if args.when_exists and args.more_jobs > jobs and os.path.exists(args.when_exists):
            jobs = args.more_jobs
            print("[lanes] %s exists: up to %d lanes from now" % (args.when_exists, jobs), flush=True)
        while pending and len(running) < jobs:
            name = next_runnable(pending, deps, finished, running)
            if name is None:
                break
            pending.remove(name)
            print("[lanes] start %s" % name, flush=True)
            running[name] = subprocess.Popen(["bash", "-c", 'run_scenario "$1"', "_", name])
        time.sleep(2)
        for name, proc in list(running.items()):
            if proc.poll() is not None:
                finished[name] = proc.returncode
                del running[name]
                print("[lanes] done %s rc=%s" % (name, proc.returncode), flush=True)
    return 0 if all(rc == 0 for rc in finished.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
