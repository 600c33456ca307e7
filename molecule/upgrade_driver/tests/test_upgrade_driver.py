"""The rolling upgrade 580 -> 595 on two Ubuntu 24.04 nodes (batch size 1, no cluster API), and the forced
failure with branch 999, read from the snapshots of molecule/upgrade_driver/tasks/snapshot.yml (prepared,
upgraded, after-999), the upgrade records and each node's /var/log/dpkg.log."""
import datetime
import json
import os
import re

import testinfra
import testinfra.utils.ansible_runner

RUNNER = testinfra.utils.ansible_runner.AnsibleRunner(os.environ["MOLECULE_INVENTORY_FILE"])
NODES = RUNNER.get_hosts("gpu_nodes")
testinfra_hosts = ["podman://" + h for h in NODES]

BRANCH = re.compile(r"^(?:(?:lib)?nvidia-[a-z0-9-]*?|linux-(?:modules|objects)-nvidia|xserver-xorg-video-nvidia)-([0-9]{3})(?:-|$)")
DPKG_LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) (install|upgrade|remove|purge) (\S+) ")


def _node(name):
    return testinfra.get_host("podman://" + name)


def _snapshot(node, step):
    return json.loads(_node(node).file("/var/tmp/upgrade-%s.json" % step).content_string)


def _installed(snapshot):
    return sorted(p.split("=")[0].split(":")[0] for p in snapshot["packages"] if p.split("=")[1][1:2] == "i")


def _branches(names):
    return sorted(set(BRANCH.match(n).group(1) for n in names if BRANCH.match(n)))


def _time(text):
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ")


def _node_name(host):
    return host.backend.get_hostname()


def _batch_order():
    """The nodes in the order the upgrade took them (the first batch started first)."""
    records = dict((n, json.loads(_snapshot(n, "upgraded")["record_text"])) for n in NODES)
    return sorted(NODES, key=lambda n: _time(records[n]["started"])), records


def test_prepared_on_580(host):
    snap = _snapshot(_node_name(host), "prepared")
    assert _branches(_installed(snap)) == ["580"], _installed(snap)
    assert snap["modules"] and set(v.split(".")[0] for v in snap["modules"].values()) == {"580"}, snap["modules"]
    if _node_name(host).endswith("-dkms"):
        # The DKMS node's module was built by DKMS (molecule/nvidia_driver's ubuntu2404-dkms, or prepare alone).
        assert snap["dkms"] and all(re.match(r"^nvidia/580\.[0-9.]+, \S+, x86_64: installed", d) for d in snap["dkms"]), snap["dkms"]
        assert "nvidia-dkms-580-open" in _installed(snap)
    else:
        assert snap["dkms"] == [], snap["dkms"]


def test_595_installed_and_held_nothing_of_580_left(host):
    name = _node_name(host)
    snap = _snapshot(name, "upgraded")
    installed = _installed(snap)
    assert _branches(installed) == ["595"], installed
    assert [p for p in installed if "580" in p] == []
    held = [h.split(":")[0] for h in snap["held"]]
    assert _branches(held) == ["595"], held
    # The module of every kernel is 595 from Canonical's package on both nodes (the inventory asks for prebuilt
    # modules): the DKMS node's 580 build is gone, and no DKMS package or build is left.
    assert snap["modules"] and all(v.startswith("595.") for v in snap["modules"].values()), snap["modules"]
    assert snap["dkms"] == [], snap["dkms"]
    assert [p for p in held if p.startswith("linux-modules-nvidia-595-open-")], held
    assert [p for p in installed if p.startswith("nvidia-dkms-")] == [], installed
    # The DKMS tree keeps no build either.
    versions = [d for d in host.run("ls /var/lib/dkms/nvidia 2>/dev/null").stdout.split() if re.match(r"^[0-9]+\.", d)]
    assert versions == [], versions
    record = json.loads(snap["record_text"])
    assert record["state"] == "done" and record["to"] == "595" and record["host"] == name, record
    assert [v.split(".")[0] for v in record["from"]] == ["580"], record


def test_batches_do_not_overlap_and_each_node_changed_only_in_its_own_batch(host):
    (first_node, second_node), records = _batch_order()
    first, second = records[first_node], records[second_node]
    assert _time(first["started"]) < _time(first["finished"]) < _time(second["started"]) < _time(second["finished"]), records
    # Every package change of the upgrade on this node (dpkg.log, seconds) lies inside its own interval, so
    # while the first node changed the second did not, and the other way round.
    name = _node_name(host)
    mine = records[name]
    converge_start = min(_time(r["started"]) for r in records.values()).replace(microsecond=0)
    log = host.file("/var/log/dpkg.log").content_string.splitlines()
    changes = []
    for line in log:
        match = DPKG_LINE.match(line)
        if match:
            when = datetime.datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S")
            if converge_start <= when and (match.group(3).startswith(("nvidia-", "libnvidia-", "linux-modules-nvidia-"))):
                changes.append((when, match.group(2), match.group(3)))
    upgrade_changes = [c for c in changes if c[0] <= _time(mine["finished"])]
    assert upgrade_changes, "no package change recorded in dpkg.log for the upgrade of %s" % name
    low = _time(mine["started"]).replace(microsecond=0)
    high = _time(mine["finished"])
    outside = [c for c in upgrade_changes if not low <= c[0] <= high]
    assert outside == [], (name, mine, outside)
    assert any(c[2].startswith("nvidia-utils-595") or "595" in c[2] for c in upgrade_changes)
    assert any(c[1] == "remove" and "580" in c[2] for c in upgrade_changes), upgrade_changes


def test_forced_failure_marks_the_first_node_and_leaves_the_second_untouched(host):
    name = _node_name(host)
    before, after = _snapshot(name, "upgraded"), _snapshot(name, "after-999")
    # Packages, holds, DKMS and modules unchanged on both nodes: the failure came before any package change.
    for key in ("packages", "held", "dkms", "modules"):
        assert before[key] == after[key], key
    record = json.loads(after["record_text"])
    if name == _batch_order()[0][0]:
        assert record["state"] == "failed" and record["to"] == "999", record
        # nvidia_driver refused before any package change: its preflight (no prebuilt module package of 999).
        assert "Preflight | Refuse what cannot work" in record["reason"], record["reason"]
        assert "999" in record["reason"], record["reason"]
        assert _time(record["finished"]) >= _time(record["started"])
        assert [v.split(".")[0] for v in record["from"]] == ["595"], record
    else:
        # Not even rewritten: same text and the same mtime.
        assert after["record_text"] == before["record_text"] and after["record_mtime"] == before["record_mtime"]
        assert record["state"] == "done" and record["to"] == "595"
