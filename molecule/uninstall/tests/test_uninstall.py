"""The host layer's uninstall on real nodes (molecule/uninstall).

prepare recorded each node before the collection (/root/before.json), after the host layer
(/root/converged.json) and after a check-mode uninstall of the converged node (/root/after-check.json);
converge was the real uninstall and idempotence a second one. Here the node as it is now must match
"before": package selections and holds exactly, every path under /etc except the KEPT list below, each
entry of which is documented in roles/uninstall/README.md ("What stays").
"""
import hashlib
import json
import os
import re
import subprocess

import pytest
import testinfra

INVENTORY = os.environ["MOLECULE_INVENTORY_FILE"]
PROJECT = os.environ.get("MOLECULE_PROJECT_DIRECTORY",
                         os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
SCENARIO = os.environ.get("MOLECULE_SCENARIO_NAME", "uninstall")
NODES = ["%s-debian12" % SCENARIO, "%s-ubuntu2404" % SCENARIO, "%s-ubuntu2604" % SCENARIO]

# What the uninstall leaves under /etc on purpose (roles/uninstall/README.md, "What stays").
KEPT_ALL = [
    # container_toolkit's install keeps a backup of the user's config.toml when it adds its imports entry;
    # the backup is the user's data and stays.
    r"^/etc/containerd/config\.toml\.[0-9]+\.[0-9-]+@[0-9:]+~$",
    # shadow-utils' own backups of the account files, rewritten when a package's maintainer scripts add a
    # system user or group and its purge removes it again (Ubuntu's X and NVIDIA packages); /etc/passwd,
    # /etc/group, /etc/shadow and /etc/gshadow themselves are compared and must be as before.
    r"^/etc/(passwd|group|shadow|gshadow)-$",
]
KEPT = {
    # uninstall_nouveau_blacklist=true on this node: the blacklist goes (not kept).
    "%s-debian12" % SCENARIO: [],
    # uninstall_nouveau_blacklist defaults to false: the blacklist stays.
    "%s-ubuntu2404" % SCENARIO: [r"^/etc/modprobe\.d/blacklist-nouveau\.conf$"],
    "%s-ubuntu2604" % SCENARIO: [r"^/etc/modprobe\.d/blacklist-nouveau\.conf$"],
}

# System accounts a package's maintainer scripts add and its purge leaves, as Debian does (files may still be owned
# by the uid): on Debian 12, nvidia-persistenced's postinst adds user and group "nvpd"; its postrm never removes
# them (package 535.171.04-1~deb12u1, read 2026-11-25). The account files must be as before apart from these lines.
KEPT_ACCOUNTS = {
    "%s-debian12" % SCENARIO: ["nvpd"],
    "%s-ubuntu2404" % SCENARIO: [],
    "%s-ubuntu2604" % SCENARIO: [],
}
ACCOUNT_FILES = ("/etc/passwd", "/etc/group", "/etc/shadow", "/etc/gshadow")


def host(name):
    return testinfra.get_host("podman://" + name)


def load(node, name):
    return json.loads(host(node).check_output("cat /root/%s.json" % name))


@pytest.fixture(scope="module")
def snapshots():
    found = {}
    for node in NODES:
        host(node).run_expect([0], "python3 /usr/local/sbin/uninstall-snapshot /root/after.json")
        found[node] = {name: load(node, name) for name in ("before", "converged", "after-check", "after")}
    return found


def differences(old, new, kept=()):
    """Human-readable differences between two snapshots, leaving out /etc paths matching `kept`."""
    out = []
    for name in sorted(set(old["selections"]) | set(new["selections"])):
        if old["selections"].get(name) != new["selections"].get(name):
            out.append("package %s: %s -> %s" % (name, old["selections"].get(name, "absent"), new["selections"].get(name, "absent")))
    if old["holds"] != new["holds"]:
        out.append("holds: %s -> %s" % (old["holds"], new["holds"]))
    for path in sorted(set(old["etc"]) | set(new["etc"])):
        if old["etc"].get(path) != new["etc"].get(path) and not any(re.search(k, path) for k in kept):
            out.append("%s: %s -> %s" % (path, old["etc"].get(path, "absent"), new["etc"].get(path, "absent")))
    return out


@pytest.mark.parametrize("node", NODES)
def test_the_host_layer_was_really_there(snapshots, node):
    """The comparison below means something only if converge changed the node: driver packages, holds, files."""
    before, converged = snapshots[node]["before"], snapshots[node]["converged"]
    added = set(converged["selections"]) - set(before["selections"])
    assert any(p.startswith(("nvidia-", "linux-modules-nvidia-")) for p in added), sorted(added)
    assert converged["holds"] and not before["holds"], converged["holds"]
    for path in ("/etc/containerd/conf.d/99-nvidia.toml", "/etc/modprobe.d/blacklist-nouveau.conf",
                 "/etc/apt/apt.conf.d/51baremetal-gpu-nvidia-driver",
                 "/etc/rancher/rke2/config.yaml.d/50-baremetal-gpu-default-runtime.yaml"):
        assert path in converged["etc"] and path not in before["etc"], path
    assert converged["etc"]["/etc/containerd/config.toml"] != before["etc"]["/etc/containerd/config.toml"]


@pytest.mark.parametrize("node", NODES)
def test_check_mode_uninstall_of_a_converged_node_changed_nothing(snapshots, node):
    diff = differences(snapshots[node]["converged"], snapshots[node]["after-check"])
    assert not diff, "a check-mode uninstall changed %s:\n%s" % (node, "\n".join(diff))


def without_accounts(text, accounts):
    """The snapshot entry ("f <sha256>") of an account file's ``text`` with the lines of ``accounts`` left out."""
    kept = "".join(line for line in text.splitlines(keepends=True) if line.split(":", 1)[0] not in accounts)
    return "f " + hashlib.sha256(kept.encode("utf-8")).hexdigest()


@pytest.mark.parametrize("node", NODES)
def test_node_is_as_before_except_the_kept_list(snapshots, node):
    before = snapshots[node]["before"]
    after = dict(snapshots[node]["after"], etc=dict(snapshots[node]["after"]["etc"]))
    accounts = KEPT_ACCOUNTS[node]
    if accounts:
        for path in ACCOUNT_FILES:
            text = host(node).file(path).content_string
            # The kept accounts are really there (the list is no blanket), and nothing else changed.
            assert any(line.split(":", 1)[0] in accounts for line in text.splitlines()), (path, accounts)
            after["etc"][path] = without_accounts(text, accounts)
    diff = differences(before, after, KEPT_ALL + KEPT[node])
    assert not diff, "%s differs from before the collection (not on the kept list):\n%s" % (node, "\n".join(diff))


@pytest.mark.parametrize("node", NODES)
def test_kept_files_are_what_the_readme_says(snapshots, node):
    """Every kept path is really there (the kept list is not a blanket), and the blacklist went where asked."""
    after = snapshots[node]["after"]["etc"]
    assert any(re.search(KEPT_ALL[0], p) for p in after), "no config.toml backup on %s" % node
    blacklist = "/etc/modprobe.d/blacklist-nouveau.conf"
    assert (blacklist in after) == bool(KEPT[node]), node


@pytest.mark.parametrize("node", NODES)
def test_runtime_state_outside_etc(node):
    h = host(node)
    assert not h.file("/var/lib/baremetal-gpu/nvidia_driver").exists
    assert not h.file("/var/lib/rancher/rke2/agent/etc/containerd/config.toml.tmpl").exists
    assert not h.file("/var/run/cdi/nvidia.yaml").exists
    assert h.run("ls -d /var/lib/dkms/nvidia* 2>/dev/null").stdout.strip() == ""
    assert h.run("ls /lib/modules/*/updates/dkms/nvidia* 2>/dev/null").stdout.strip() == ""
    assert h.service("containerd").is_running
    assert h.service("rke2-server").is_running
    # The user's containerd config is back, byte for byte.
    name = "v2-user.toml" if node.endswith("debian12") else "v3-user.toml"
    with open(os.path.join(PROJECT, "tests", "fixtures", "containerd", "user", name), encoding="utf-8") as handle:
        assert h.file("/etc/containerd/config.toml").content_string == handle.read()


@pytest.mark.parametrize("node", NODES)
def test_the_users_own_toolkit_package_stays(node):
    """The toolkit package the node had before the collection (prepare's stand-in, a real dpkg
    package) is not in container_toolkit's record, so the uninstall leaves it."""
    h = host(node)
    assert h.run("dpkg-query --show --showformat='${Version} ${db:Status-Abbrev}' libnvidia-container1").stdout \
        .strip() == "1.17.8-1 ii"
    assert not h.file("/var/lib/baremetal-gpu/container_toolkit").exists


def test_check_mode_after_the_uninstall_reports_no_change():
    env = dict(os.environ, ANSIBLE_INJECT_FACT_VARS="false", ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    res = subprocess.run(["ansible-playbook", "-i", INVENTORY, os.path.join(PROJECT, "playbooks", "uninstall.yml"), "--check"],
                         capture_output=True, text=True, env=env, timeout=900, check=False)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-4000:]
    for node in NODES:
        line = [l for l in out.splitlines() if l.startswith(node) and "changed=" in l]
        assert line and int(line[0].split("changed=")[1].split()[0]) == 0, out[-4000:]


@pytest.mark.parametrize("node", NODES)
def test_check_mode_run_on_the_converged_node_said_what_it_would_do(node):
    log = host(node).check_output("cat /root/check-fresh.log")
    assert "Would purge" in log, log[-3000:]


def test_the_killed_uninstall_left_dpkg_interrupted_and_the_rerun_finished_it():
    """side_effect.yml killed the uninstall with dpkg held inside nvidia_driver's purge on the Ubuntu node (its
    journal not empty, the role's record of the purge there); converge, the rerun, finished it: dpkg's journal is
    empty and the record is gone with the role's state (and the node is as before: the tests above)."""
    with open(os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "uninstall-killed.json")) as handle:
        killed = json.load(handle)
    assert killed["killed"] and killed["node"] == "%s-ubuntu2404" % SCENARIO, killed
    assert killed["dpkg_journal_entries"] > 0 and killed["record"], killed
    # The kill left part of the purge undone (packages whose configuration files, or more, dpkg still had), so the
    # rerun had to purge them; the node is as before the collection only if it did (test_node_is_as_before_...).
    with open(os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "uninstall-killed-dpkg.txt")) as handle:
        left = [line for line in handle.read().splitlines() if line[1:2] not in ("n", "")]
    assert left, "the killed purge left nothing to do for the rerun"
    h = host(killed["node"])
    assert h.check_output("find /var/lib/dpkg/updates -regex '.*/[0-9]+'") == ""
    assert not h.file("/var/lib/baremetal-gpu/nvidia_driver/apt-transaction.json").exists
    assert h.run("apt-get check").rc == 0
