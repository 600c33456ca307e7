"""The switch between the open and the proprietary kernel modules on one branch, the role's own holds,
someone else's hold, and the rebuild of an initramfs a killed run left stale, read from the records of
each step (molecule/nvidia_driver_switch/record.yml) and the node's final state."""
import json
import os
import re

import testinfra.utils.ansible_runner

testinfra_hosts = ["podman://" + h for h in testinfra.utils.ansible_runner.AnsibleRunner(
    os.environ["MOLECULE_INVENTORY_FILE"]).get_hosts("all")]

# The server flavour (Ubuntu's Fabric Manager depends on the server driver): every name has "-server".
OPEN_ONLY = re.compile(r"^(nvidia-(headless-no-dkms|kernel-source)-580-server-open|linux-modules-nvidia-580-server-open-.*)$")
PROPRIETARY_ONLY = re.compile(r"^(nvidia-(headless-no-dkms|kernel-source)-580-server|linux-modules-nvidia-580-server-[0-9].*"
                              r"|linux-objects-nvidia-580-server-.*|linux-signatures-nvidia-.*)$")


def _record(host, step):
    return json.loads(host.file("/var/tmp/switch-%s.json" % step).content_string)


def _installed(record):
    pairs = [p.split("=", 1) for p in record["packages"].split()]
    # dpkg's abbreviated status: the second letter "i" is installed, whatever the selection ("ii", "hi").
    return sorted(name.split(":")[0] for name, status in pairs if status[1:2] == "i")


def _held(record):
    return sorted(p.split(":")[0] for p in record["held"].split())


def _check_flavour(record, flavour):
    installed = _installed(record)
    mine, other = (OPEN_ONLY, PROPRIETARY_ONLY) if flavour == "open" else (PROPRIETARY_ONLY, OPEN_ONLY)
    assert [p for p in installed if other.match(p)] == [], installed
    assert [p for p in installed if mine.match(p) and p.startswith("linux-modules-")], installed
    assert record["license"] == {"open": "Dual MIT/GPL", "proprietary": "NVIDIA"}[flavour], record
    # Canonical's server modules live in kernel/nvidia-580srv[-open]/.
    assert "/nvidia-580srv" in record["filename"], record["filename"]
    assert ("/nvidia-580srv-open/" in record["filename"]) is (flavour == "open"), record["filename"]
    # Prebuilt all along: no DKMS.
    assert record["dkms"][1:2] != "i", record["dkms"]
    # No unheld package: everything the role installs is held, and nothing it removed stays held.
    assert set(record["plan_hold"]) <= set(_held(record)), (record["plan_hold"], _held(record))
    assert [p for p in _held(record) if other.match(p)] == []


def test_converged_proprietary(host):
    _check_flavour(_record(host, "proprietary"), "proprietary")


def test_killed_run_left_a_stale_initramfs_and_the_rerun_rebuilt_it(host):
    record = _record(host, "rerun-after-kill")
    blacklist_mtime, initrd_mtime, inside = record["left_by_killed_run"]
    # What the killed run left: the blacklist written, the initramfs older and without it.
    assert inside == "out"
    assert int(initrd_mtime) <= int(blacklist_mtime)
    # The rerun (nothing else to change: the driver was installed) rebuilt it from the node's state.
    assert record["initramfs"] == "in"
    assert record["initrd_mtime"] >= record["blacklist_mtime"]


def test_switch_to_open_left_no_proprietary_package_and_no_unheld_package(host):
    record = _record(host, "open")
    _check_flavour(record, "open")
    assert "linux-modules-nvidia-580-server-6.8.0-149-generic" in record["plan_remove"]


def test_a_foreign_hold_was_refused_and_nothing_changed(host):
    before, refused = _record(host, "open"), _record(host, "refused")
    assert "nvidia-kernel-source-580-server-open" in refused["refusal"]
    assert _installed(refused) == _installed(before)
    assert refused["license"] == "Dual MIT/GPL"


def test_switch_back_to_proprietary(host):
    _check_flavour(_record(host, "proprietary-again"), "proprietary")


def test_final_state_is_proprietary_and_recorded_holds_match(host):
    record = json.loads(host.file("/var/lib/baremetal-gpu/nvidia_driver/holds.json").content_string)
    held = set(p.split(":")[0] for p in host.run("apt-mark showhold").stdout.split())
    assert set(record["held"]) == held, (record["held"], held)
    assert "nvidia-kernel-source-580-server-open" not in held


# ---- Fabric Manager on forced NVSwitch facts, module parameters (final state) ----------------

def _version(host, name):
    return host.run("dpkg-query -W -f '${Version}' %s" % name).stdout.strip()


def test_fabric_manager_at_the_drivers_exact_version_held_and_enabled(host):
    out = host.run("dpkg-query -W -f '${Package} ${db:Status-Abbrev}\\n' 'nvidia-fabricmanager-*' 'libnvidia-nscq-*' "
                   "2>/dev/null").stdout
    installed = sorted(line.split()[0] for line in out.splitlines() if line.split()[-1][1:2] == "i")
    assert installed == ["libnvidia-nscq-580", "nvidia-fabricmanager-580"], installed
    driver = _version(host, "nvidia-utils-580-server")
    for name in installed:
        assert _version(host, name).split("-")[0] == driver.split("-")[0], (name, _version(host, name), driver)
    held = set(p.split(":")[0] for p in host.run("apt-mark showhold").stdout.split())
    assert set(installed) <= held, held
    record = json.loads(host.file("/var/lib/baremetal-gpu/nvidia_driver/holds.json").content_string)
    assert set(installed) <= set(record["held"]), record
    assert host.run("systemctl is-enabled nvidia-fabricmanager.service").stdout.strip() == "enabled"


def test_persistence_daemon_enabled(host):
    assert host.run("systemctl is-enabled nvidia-persistenced.service").stdout.strip() in ("enabled", "static")


def test_module_params_file_and_initramfs(host):
    f = host.file("/etc/modprobe.d/baremetal-gpu-nvidia-params.conf")
    lines = [ln for ln in f.content_string.splitlines() if ln and not ln.startswith("#")]
    assert lines == ["options nvidia NVreg_EnableStreamMemOPs=1 NVreg_TemporaryFilePath=/var/tmp"]
    assert f.mode == 0o644
    for kernel in [n[len("vmlinuz-"):] for n in host.run("ls /boot").stdout.split() if n.startswith("vmlinuz-")]:
        initrd = host.file("/boot/initrd.img-%s" % kernel)
        assert initrd.mtime >= f.mtime, kernel
        listing = host.run("lsinitramfs %s", initrd.path).stdout
        assert "etc/modprobe.d/baremetal-gpu-nvidia-params.conf" in listing, initrd.path
