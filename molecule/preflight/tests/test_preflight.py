"""Verify the preflight report against the node's real state (read independently)."""
import json
import os

import testinfra.utils.ansible_runner

testinfra_hosts = ["podman://" + h for h in testinfra.utils.ansible_runner.AnsibleRunner(
    os.environ["MOLECULE_INVENTORY_FILE"]).get_hosts("all")]


def _report(host):
    return json.loads(host.file("/var/tmp/preflight_report.json").content_string)


def test_systemd_is_running(host):
    state = host.run("systemctl is-system-running").stdout.strip()
    assert state in ("running", "degraded"), state
    assert host.run("readlink /proc/1/exe").stdout.strip().endswith("systemd")


def test_report_os_matches_os_release(host):
    report = _report(host)
    osr = dict(line.split("=", 1) for line in host.file("/etc/os-release").content_string.splitlines() if "=" in line)
    name = osr["NAME"].strip('"').split()[0]
    version = osr["VERSION_ID"].strip('"')
    assert report["os"].split()[0] == name
    assert report["os"].split()[1].startswith(version.split(".")[0])
    assert report["os_supported"] is True


def test_report_kernel_matches_uname(host):
    assert _report(host)["kernel"] == host.run("uname -r").stdout.strip()


def test_report_pci_devices_match_sysfs(host):
    out = host.run("grep -l '^0x10de$' /sys/bus/pci/devices/*/vendor 2>/dev/null").stdout.split()
    expected = sorted(p.split("/")[-2] for p in out)
    assert sorted(_report(host)["nvidia_pci_devices"]) == expected


def test_report_nouveau_matches_proc_modules(host):
    modules = host.file("/proc/modules")
    if not modules.exists:
        # Containers have no /proc/modules: the report must say unknown, not false.
        assert _report(host)["nouveau_loaded"] == "unknown"
        return
    loaded = any(line.split()[0] == "nouveau" for line in modules.content_string.splitlines() if line)
    assert _report(host)["nouveau_loaded"] is loaded
