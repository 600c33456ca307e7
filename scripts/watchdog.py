"""Run a command and end it only when it hangs: no output, no CPU and no I/O for a while.

    python3 scripts/watchdog.py --idle 600 [--max 7200] [--containers PREFIX] [--cpu-file FILE] -- CMD ARG...

A slow machine makes a correct scenario slower, not silent: a DKMS build prints nothing for minutes but
burns CPU, a download prints nothing but reads the network. So the command is ended (its whole process tree,
TERM then KILL) only when, for --idle seconds, it printed nothing, its process tree used less than --min-cpu
CPU-seconds, moved less than --min-io bytes, and the test nodes it runs (podman containers whose name starts
with --containers) used less than --min-cpu CPU-seconds. --max is a backstop for a command that keeps busy
for ever (0: none). Either way the exit status is 124 and the last line says why.

The CPU that the test nodes' own processes use (systemd units, triggers, anything not started through the
connection, which runs its commands outside the container's cgroup) is not seen by the shell's `times`; it is
read from each container's cgroup while the command runs and written to --cpu-file (seconds) when it ends.
"""
import argparse
import glob
import os
import re
import signal
import subprocess
import sys
import threading
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")
HEX_ID = re.compile(r"libpod-([0-9a-f]{64})$")


def proc_table():
    """{pid: (ppid, cpu seconds incl. reaped children, I/O bytes)} of every process that can be read."""
    table = {}
    for path in glob.glob("/proc/[0-9]*"):
        pid = int(path[6:])
        try:
            with open(path + "/stat", encoding="utf-8", errors="replace") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        ppid = int(fields[1])
        cpu = sum(int(v) for v in fields[11:15]) / CLK_TCK
        io = 0
        try:
            with open(path + "/io", encoding="utf-8") as handle:
                for line in handle:
                    if line.startswith(("rchar:", "wchar:")):
                        io += int(line.split()[1])
        except OSError:
            pass
        table[pid] = (ppid, cpu, io)
    return table


def descendants(table, root):
    """``root`` and every process below it, by parent pid."""
    children = {}
    for pid, (ppid, _cpu, _io) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        if pid in table:
            found.append(pid)
        todo.extend(children.get(pid, ()))
    return found


def tree_usage(table, root):
    """(CPU seconds, I/O bytes) of ``root``'s process tree."""
    pids = descendants(table, root)
    return sum(table[p][1] for p in pids), sum(table[p][2] for p in pids)


def cgroup_cpu(cgroup_dir):
    """CPU seconds a cgroup used: cgroup v1 cpuacct.usage (ns) or v2 cpu.stat usage_usec; None if unreadable."""
    try:
        with open(os.path.join(cgroup_dir, "cpuacct.usage"), encoding="utf-8") as handle:
            return int(handle.read()) / 1e9
    except OSError:
        pass
    try:
        with open(os.path.join(cgroup_dir, "cpu.stat"), encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("usage_usec "):
                    return int(line.split()[1]) / 1e6
    except OSError:
        pass
    return None


class ContainerCpu:
    """The CPU of the podman containers whose name starts with a prefix, from their cgroups (cgroupfs manager:
    a directory libpod-<id> under the cpuacct hierarchy, or the unified one). The last value seen of each container
    is kept, so a container removed before the end still counts with what it had used until the last look."""

    ROOTS = ("/sys/fs/cgroup/cpuacct", "/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/unified", "/sys/fs/cgroup")

    def __init__(self, prefix):
        self.prefix = prefix
        self.names = {}
        self.seen = {}

    def _dirs(self):
        for root in self.ROOTS:
            if not os.path.isdir(root):
                continue
            dirs = glob.glob(root + "/**/libpod-*", recursive=True)
            if dirs:
                return dirs
        return []

    def _name(self, cid):
        if cid not in self.names:
            proc = subprocess.run(["podman", "container", "inspect", "--format", "{{.Name}}", cid],
                                  capture_output=True, text=True, check=False)
            # Not yet (or no longer) known to podman: ask again next time.
            if proc.returncode != 0:
                return None
            self.names[cid] = proc.stdout.strip()
        return self.names[cid]

    def sample(self):
        """Update and return the total CPU seconds of the matching containers."""
        if self.prefix:
            for path in self._dirs():
                match = HEX_ID.search(path)
                if not match:
                    continue
                name = self._name(match.group(1))
                if name is None or not name.startswith(self.prefix):
                    continue
                value = cgroup_cpu(path)
                if value is not None:
                    self.seen[match.group(1)] = max(value, self.seen.get(match.group(1), 0.0))
        return sum(self.seen.values())


def kill_tree(root):
    """TERM, then KILL after a grace period, for ``root`` and everything below it (frozen first, so that nothing
    starts a new child meanwhile); container monitors (conmon) are left to podman."""
    pids = [p for p in descendants(proc_table(), root) if _comm(p) != "conmon"]
    for sig in (signal.SIGSTOP, signal.SIGTERM, signal.SIGCONT):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
    deadline = time.time() + 20
    while time.time() < deadline and any(_alive(p) for p in pids):
        time.sleep(1)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _comm(pid):
    try:
        with open("/proc/%d/comm" % pid, encoding="utf-8") as handle:
            return handle.read().strip()
    except OSError:
        return ""


def _alive(pid):
    """Running or stopped, not gone and not a zombie waiting for its parent."""
    try:
        with open("/proc/%d/stat" % pid, encoding="utf-8", errors="replace") as handle:
            stat = handle.read()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2:][:1] not in ("Z", "X")


class Progress:
    """Decides whether a command is still working: the idle clock restarts on output, or once the CPU or I/O
    counted since the last restart passes its threshold."""

    def __init__(self, idle, min_cpu, min_io, now):
        self.idle, self.min_cpu, self.min_io = idle, min_cpu, min_io
        self.mark = now
        self.base = None

    def update(self, now, output_seen, cpu, io):
        """Feed one look; return the seconds since the last sign of progress."""
        if self.base is None or output_seen or cpu - self.base[0] >= self.min_cpu or io - self.base[1] >= self.min_io:
            self.mark, self.base = now, (cpu, io)
        else:
            # A process that left the tree unreaped takes its counters with it: count from the lower value.
            self.base = (min(self.base[0], cpu), min(self.base[1], io))
        return now - self.mark

    def hung(self, now):
        return now - self.mark >= self.idle


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--idle", type=float, default=600)
    parser.add_argument("--max", type=float, default=0)
    parser.add_argument("--min-cpu", type=float, default=2.0)
    parser.add_argument("--min-io", type=float, default=1 << 20)
    parser.add_argument("--interval", type=float, default=5.0)
    parser.add_argument("--containers", default="")
    parser.add_argument("--cpu-file", default="")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command")

    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    lines = {"count": 0}

    def forward():
        for line in iter(proc.stdout.readline, b""):
            sys.stdout.buffer.write(line)
            sys.stdout.flush()
            lines["count"] += 1

    reader = threading.Thread(target=forward, daemon=True)
    reader.start()
    containers = ContainerCpu(args.containers)
    start = time.time()
    progress = Progress(args.idle, args.min_cpu, args.min_io, start)
    seen_lines = 0
    reason = ""
    while proc.poll() is None:
        time.sleep(args.interval)
        now = time.time()
        cpu, io = tree_usage(proc_table(), proc.pid)
        cpu += containers.sample()
        output_seen = lines["count"] != seen_lines
        seen_lines = lines["count"]
        quiet = progress.update(now, output_seen, cpu, io)
        if progress.hung(now):
            reason = ("no output, less than %.0f CPU-s and %.0f MiB of I/O for %.0f s: taken as a hang"
                      % (args.min_cpu, args.min_io / (1 << 20), quiet))
        elif args.max and now - start >= args.max:
            reason = "still running after the backstop of %.0f s" % args.max
        if reason and proc.poll() is None:
            kill_tree(proc.pid)
            break
    rc = proc.wait()
    reader.join(timeout=10)
    total = containers.sample()
    if args.cpu_file:
        with open(args.cpu_file, "w", encoding="utf-8") as handle:
            handle.write("%.1f\n" % total)
    if reason:
        print("[watchdog] ended after %.0f s: %s" % (time.time() - start, reason), flush=True)
        return 124
    return rc


if __name__ == "__main__":
    sys.exit(main())
