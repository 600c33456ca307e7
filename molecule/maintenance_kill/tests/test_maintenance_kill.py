"""After the kills (files/kill_harness.py in prepare) and one more run (converge): the upgrade 580 -> 595 finished on
both nodes, nothing is left half-way, and the kills really happened at the printed points."""
import datetime
import json
import os
import re

import pytest

import testinfra.utils.ansible_runner

RUNNER = testinfra.utils.ansible_runner.AnsibleRunner(os.environ["MOLECULE_INVENTORY_FILE"])
testinfra_hosts = ["podman://" + h for h in RUNNER.get_hosts("gpu_nodes")]

BRANCH = re.compile(r"^(?:(?:lib)?nvidia-[a-z0-9-]*?|linux-(?:modules|objects)-nvidia|xserver-xorg-video-nvidia)-([0-9]{3})(?:-|$)")
STATE = "/var/lib/baremetal-gpu"


def _installed(host):
    out = host.check_output("dpkg-query -W -f '${Package} ${db:Status-Abbrev}\\n'")
    return sorted(line.split()[0] for line in out.splitlines() if line.split()[1].startswith("ii"))


def test_only_the_target_branch_is_installed_and_held(host):
    branches = sorted(set(BRANCH.match(p).group(1) for p in _installed(host) if BRANCH.match(p)))
    assert branches == ["595"]
    held = host.check_output("apt-mark showhold").split()
    assert [p for p in held if BRANCH.match(p) and BRANCH.match(p).group(1) == "595"]
    assert not [p for p in held if BRANCH.match(p) and BRANCH.match(p).group(1) != "595"]


def test_dpkg_is_not_left_half_way(host):
    assert host.run("dpkg --audit").stdout.strip() == ""


def test_no_record_is_left_upgrading_or_failed(host):
    record = json.loads(host.file(STATE + "/driver-upgrade.json").content_string)
    assert record["state"] == "done" and record["to"] == "595"
    # The engine's record of the upgrade (upgrade-rollout.json: every node went through a batch of the upgrade) and
    # of day 1 (host-rollout.json, when a day-1 run disrupted the node).
    assert json.loads(host.file(STATE + "/upgrade-rollout.json").content_string)["state"] == "done"
    rollout = host.file(STATE + "/host-rollout.json")
    if rollout.exists:
        assert json.loads(rollout.content_string)["state"] == "done"


def test_the_gpu_service_the_killed_upgrade_stopped_runs_again(host):
    """Every seed kills the upgrade just after it stopped the GPU holders (here the test-only unit of prepare.yml):
    the next run reads them from the engine's record, which the killed run wrote before stopping them, and starts them
    again."""
    record = json.loads(host.file(STATE + "/upgrade-rollout.json").content_string)
    assert "baremetal-test-gpu-holder" in record["services"]
    assert host.service("baremetal-test-gpu-holder").is_running


def test_no_lock_is_still_held(host):
    # Released by the last run that held it, or (a killed run's, when the runs after it had nothing to do and so
    # took no lock) expired: no live run holds it.
    lock = host.file(STATE + "/maintenance-lock.json")
    assert lock.exists, "the upgrade took no lock file on this node"
    spec = json.loads(lock.content_string)["spec"]
    if "holderIdentity" in spec:
        renewed = datetime.datetime.strptime(spec["renewTime"][:19], "%Y-%m-%dT%H:%M:%S")
        now = datetime.datetime.strptime(host.check_output("date -u +%Y-%m-%dT%H:%M:%S"), "%Y-%m-%dT%H:%M:%S")
        assert renewed + datetime.timedelta(seconds=spec["leaseDurationSeconds"]) < now, spec


def test_the_kills_happened_at_the_printed_points(host):
    with open(os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "kills.json")) as handle:
        log = json.load(handle)
    assert len(log["points"]) >= 6
    assert {p["playbook"] for p in log["points"]} == {"gpu_nodes.yml", "upgrade_driver.yml"}
    # Every point of the upgrade must have been reached (the runs get further each time) and killed there.
    missed = [p["what"] for p in log["points"] if not p["killed"]]
    assert not missed, "seed %s: points not reached: %s" % (log["seed"], missed)


def test_gpu_health_remediation_reset_the_sick_gpu_only(host):
    """The side effect's remediate run: GPU 0 of -a reset once (the stand-in logs it), -b left alone."""
    name = host.backend.get_hostname()
    log = host.file("/var/tmp/gpu-resets.log")
    if name.endswith("-noble-a"):
        assert log.exists and log.content_string.split() == ["-r", "-i", "0"], log.content_string if log.exists else None
    else:
        assert not log.exists


def test_dpkg_killed_inside_the_drivers_transaction_was_finished_by_the_next_run(host):
    """The harness's dpkg point: dpkg itself killed half-way in nvidia_driver's apt transaction (its journal not empty,
    the role's record of the transaction there), and a later run said it finished that transaction."""
    with open(os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "kills.json")) as handle:
        log = json.load(handle)
    dpkg = [p for p in log["points"] if p["delay"] == "dpkg"]
    assert len(dpkg) == 1 and dpkg[0]["killed"], log["points"]
    assert dpkg[0]["dpkg_journal_entries"] > 0 and dpkg[0]["record"], dpkg[0]
    assert [p for p in log["points"] if p["point"] > dpkg[0]["point"] and "repaired" in p], log["points"]


def test_the_mig_layout_is_on_the_gpus_after_the_killed_apply(host):
    """The side effect's MIG runs (a TEST-ONLY stand-in nvidia-mig-parted, files/nvidia-mig-parted-stand-in.py): the
    killed run left MIG on without instances on -a; the next run applied the rest. Both nodes' GPU has the layout."""
    state = json.loads(host.file("/var/lib/baremetal-test-mig/state.json").content_string)
    assert state["gpus"] == [{"device_id": "0x233010DE", "mig_enabled": True, "devices": {"1g.10gb": 7}}]
    applies = host.file("/var/tmp/mig-applies.log").content_string.split()
    # -a: the killed apply never logged, the rerun's did; -b: one apply, by whichever run reached it first.
    assert applies == ["all-1g.10gb"], applies


def test_the_mig_layout_is_selected_for_boot_from_our_own_files(host):
    """On -a; -b had mig_manager's uninstall step after (test_mig_managers_uninstall_took_off_its_files_only)."""
    if host.backend.get_hostname().endswith("-noble-b"):
        pytest.skip("-b had mig_manager's uninstall step after the runs")
    dropin = host.file("/etc/systemd/system/nvidia-mig-manager.service.d/zz-baremetal-gpu.conf")
    assert dropin.mode == 0o644 and dropin.content_string.splitlines()[-2:] == [
        'Environment="MIG_PARTED_CONFIG_FILE=/etc/nvidia-mig-manager/baremetal-gpu.yaml"',
        'Environment="MIG_PARTED_SELECTED_CONFIG=all-1g.10gb"']
    layouts = host.file("/etc/nvidia-mig-manager/baremetal-gpu.yaml").content_string
    assert layouts.startswith("# Managed by baremetal.gpu (mig_manager)")
    assert "all-disabled:" in layouts and "1g.10gb: 7" in layouts
    # The package was installed from the controller by the role, which recorded that before installing it.
    assert host.package("nvidia-mig-manager").is_installed
    record = json.loads(host.file(STATE + "/mig_manager/installed.json").content_string)
    assert record["package"] == "nvidia-mig-manager" and record["from"].endswith("mig-package.deb")


def test_mig_managers_uninstall_took_off_its_files_only(host):
    """mig.yml ran mig_manager's uninstall step on -b (twice; the second changed nothing): our drop-in, our layouts
    file, the package this role installed and its record are gone; the GPU keeps its layout (the state the stand-in
    reads, test_the_mig_layout_is_on_the_gpus_after_the_killed_apply)."""
    if not host.backend.get_hostname().endswith("-noble-b"):
        pytest.skip("mig_manager's uninstall step ran on -b only")
    assert not host.file("/etc/systemd/system/nvidia-mig-manager.service.d/zz-baremetal-gpu.conf").exists
    assert not host.file("/etc/nvidia-mig-manager/baremetal-gpu.yaml").exists
    assert not host.package("nvidia-mig-manager").is_installed
    assert not host.file(STATE + "/mig_manager").exists
    assert not host.file("/var/cache/baremetal-gpu/mig_manager").exists
