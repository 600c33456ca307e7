"""What the running containerd loaded: its CRI plugin's status and the configuration it logged at start."""
import time

DEBUG_DROPIN = "/etc/containerd/conf.d/00-verify-debug.toml"
# The tests' own restarts of containerd reset systemd's start rate limit first (StartLimitBurst=5 in 10 s, the
# default, which Ubuntu's and Debian's containerd.service keep): on Ubuntu 24.04 the version 2 case's two role runs
# and two of these pairs came within 10 s (twice in a row: "Start request repeated too quickly").
# The role's restarts are not reset: only what the tests add.
RESTART = "systemctl reset-failed containerd; systemctl restart containerd"


def cri_plugin_ok(host):
    plugins = host.check_output("ctr plugins ls")
    return any(line.split()[:2] in (["io.containerd.grpc.v1", "cri"], ["io.containerd.cri.v1", "runtime"])
               and line.split()[-1] == "ok" for line in plugins.splitlines() if line.strip())


def started_after_its_config(host):
    started = float(host.check_output(
        "date -d \"$(systemctl show -p ActiveEnterTimestamp --value containerd)\" +%s"))
    newest = float(host.check_output("stat -c %Y /etc/containerd/config.toml /etc/containerd/conf.d/*.toml | sort -n | tail -1"))
    return started >= newest


# Where the node has no journal (Ubuntu 26.04's test container), prepare.yml sends containerd's output to this
# file, emptied at each start of containerd (TEST ONLY).
LOG_FILE = "/var/log/containerd-test.log"


def containerd_log(host):
    """What the running containerd logged: the journal of its main PID, or the file above on a node without one."""
    if host.file(LOG_FILE).exists:
        return host.check_output("cat %s" % LOG_FILE)
    pid = host.check_output("systemctl show -p MainPID --value containerd")
    return host.check_output("journalctl --no-pager _PID=%s" % pid)


def logged_cri_config(host):
    """The CRI plugin configuration the running containerd logged when it started.

    containerd 1.x logs it at info level ("Start cri plugin with config {...}"); containerd 2.x only at
    debug level, so on 2.x a test-only debug drop-in is added, containerd restarted, the line read,
    and the drop-in removed again (containerd restarted once more).
    """
    if " 2." not in host.check_output("containerd --version"):
        lines = [l for l in containerd_log(host).splitlines() if "Start cri plugin" in l]
        return lines[-1] if lines else ""
    version = host.check_output("awk -F'= *' '/^version/ {print $2; exit}' /etc/containerd/config.toml")
    host.run_expect([0], "printf 'version = %s\\n[debug]\\n  level = \"debug\"\\n' > %s && %s"
                    % (version, DEBUG_DROPIN, RESTART))
    try:
        for _attempt in range(50):
            lines = [l for l in containerd_log(host).splitlines() if "starting cri plugin" in l]
            if lines:
                return lines[-1]
            time.sleep(0.2)
        return ""
    finally:
        host.run_expect([0], "rm -f %s && %s" % (DEBUG_DROPIN, RESTART))
