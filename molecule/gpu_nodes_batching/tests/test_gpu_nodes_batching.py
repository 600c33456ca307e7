"""Day 1 in batches: which node changed when, from the times recorded on the nodes.

Each start of the stand-in RKE2 appends "<begin> <end>" (epoch seconds) to /var/log/fake-rke2-starts.log
and takes 4 s, so starts that ran at the same time overlap. Each node that went through a batch of its
own has its record, /var/lib/baremetal-gpu/host-rollout.json (left service, came back). The preparation's
starts were removed from the log, so it holds converge's restarts only (and idempotence must add none).
"""
import datetime
import json
import os

import pytest
import testinfra

INVENTORY = os.environ["MOLECULE_INVENTORY_FILE"]
SCENARIO = os.environ.get("MOLECULE_SCENARIO_NAME", "gpu_nodes_batching")
SERVERS = [SCENARIO + "-server1", SCENARIO + "-server2"]
FRESH = SCENARIO + "-fresh"
LOG = "/var/log/fake-rke2-starts.log"
RECORD = "/var/lib/baremetal-gpu/host-rollout.json"
GENERATED = "/var/lib/rancher/rke2/agent/etc/containerd/config.toml"


def node(name):
    return testinfra.get_host("podman://" + name)


def starts(name):
    text = node(name).file(LOG).content_string
    return [tuple(float(v) for v in line.split()) for line in text.splitlines() if line.strip()]


def record(name):
    return json.loads(node(name).file(RECORD).content_string)


def epoch(stamp):
    return datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc).timestamp()


def overlap(one, two):
    return one[0] < two[1] and two[0] < one[1]


@pytest.mark.parametrize("name", SERVERS + [FRESH])
def test_each_node_restarted_rke2_once_and_has_the_runtime(name):
    # One start each in converge (RKE2 lacked the nvidia runtime), none in idempotence.
    assert len(starts(name)) == 1, starts(name)
    assert '"nvidia"' in node(name).file(GENERATED).content_string


def test_the_servers_restarted_one_after_the_other():
    first, second = starts(SERVERS[0])[0], starts(SERVERS[1])[0]
    assert not overlap(first, second), (first, second)
    assert first[1] < second[0], "server1 (first in the inventory) goes first: %s %s" % (first, second)


@pytest.mark.parametrize("name", SERVERS)
def test_each_server_went_through_a_batch_of_its_own(name):
    rec = record(name)
    assert rec["state"] == "done"
    assert rec["role"] == "server"
    assert rec["reboot"] == []
    assert rec["restart"] == ["the nvidia runtime is missing from " + GENERATED]
    assert rec["cordoned"] is False  # no cluster API here: nothing was cordoned or drained
    window = (epoch(rec["started"]), epoch(rec["finished"]))
    # The restart happened inside the node's window, and the windows of the two servers do not overlap.
    assert window[0] < starts(name)[0][0] and starts(name)[0][1] < window[1], (window, starts(name))


def test_the_server_windows_do_not_overlap():
    one, two = record(SERVERS[0]), record(SERVERS[1])
    assert epoch(one["finished"]) <= epoch(two["started"]), (one, two)


def test_the_node_outside_a_cluster_never_shared_a_batch_with_a_server():
    # Nodes outside a cluster go first, in batches of their own (one bad new node must not leave a
    # server cordoned); then the servers one at a time.
    fresh = starts(FRESH)[0]
    for server in SERVERS:
        assert not overlap(fresh, starts(server)[0]), (fresh, starts(server)[0])
        assert fresh[1] < starts(server)[0][0], (fresh, starts(server)[0])
    # It was not cordoned (no node of a cluster). A batch of its own records its window when the plan counted
    # its agent's start as a disruption; then the record says done, not cordoned.
    if node(FRESH).file(RECORD).exists:
        rec = record(FRESH)
        assert rec["state"] == "done" and rec["cordoned"] is False, rec
    # Its agent was started (it is not enabled: it is still no node of a cluster for the next run).
    assert node(FRESH).service("rke2-agent").is_running
    assert not node(FRESH).service("rke2-agent").is_enabled
