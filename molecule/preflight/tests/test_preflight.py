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
    assert report["os_tested"] is True


def test_report_kernel_matches_uname(host):
    assert _report(host)["kernel"] == host.run("uname -r").stdout.strip()


def test_report_pci_devices_match_sysfs(host):
    out = host.run("grep -l '^0x10de$' /sys/bus/pci/devices/*/vendor 2>/dev/null").stdout.split()
    expected = sorted(p.split("/")[-2] for p in out)
    assert sorted(_report(host)["nvidia_pci_devices"]) == expected
    gpus = [a for a in expected if host.file("/sys/bus/pci/devices/%s/class" % a).content_string.startswith("0x03")]
    assert sorted(g["address"] for g in _report(host)["gpus"]) == gpus


def test_report_nouveau_matches_proc_modules(host):
    modules = host.file("/proc/modules")
    if not modules.exists:
        # Containers have no /proc/modules: the report must say unknown, not false.
        assert _report(host)["nouveau_loaded"] == "unknown"
        return
    loaded = any(line.split()[0] == "nouveau" for line in modules.content_string.splitlines() if line)
    assert _report(host)["nouveau_loaded"] is loaded


# ---- The fields added for the readiness report, each checked against the node read independently.

def _controller_report(host):
    """The report the role wrote on the controller (JSON beside the Markdown)."""
    path = os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "reports", "preflight.json")
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    return data["hosts"][_name(host)]


def _name(host):
    return host.backend.get_hostname()


def test_report_secure_boot_matches_node(host):
    report = _report(host)
    efivar = host.file("/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d0-aca7-00c04fc295c8")
    if efivar.exists:
        assert report["secure_boot_source"] == "efivars"
        return
    if host.exists("mokutil"):
        out = host.run("mokutil --sb-state").stdout
        expected = "enabled" if "SecureBoot enabled" in out else "disabled" if "SecureBoot disabled" in out else None
        if expected:
            assert report["secure_boot"] == expected
            return
    if not host.file("/sys/firmware/efi").exists:
        # Legacy BIOS on a real machine; hidden in a container, where the role must not guess.
        in_container = host.file("/run/.containerenv").exists
        assert report["secure_boot"] == ("unknown" if in_container else "not_uefi")
    else:
        assert report["secure_boot"] in ("enabled", "disabled", "unknown")


def test_report_kernel_headers_match_lib_modules(host):
    report = _report(host)
    out = host.run("for d in /lib/modules/*/build; do [ -e \"$d\" ] && basename \"$(dirname \"$d\")\"; done").stdout
    versions = sorted(set(out.split()))
    running = host.run("uname -r").stdout.strip()
    assert report["kernel_running"] == running
    assert sorted(report["kernel_headers_versions"]) == versions
    assert report["kernel_headers_for_running"] is (running in versions)
    # Headers matter to a DKMS build only: with Ubuntu's prebuilt modules there is nothing to warn about.
    dkms = report["driver_plan"]["module_build"] == "dkms"
    assert any(running in w for w in report["warnings"]) is (dkms and running not in versions), report["warnings"]


def test_report_disk_free_matches_df(host):
    report = _controller_report(host)
    path = report["dkms_disk_path"]
    assert host.file(path).is_directory
    free_kib = int(host.run("df -Pk %s | awk 'NR==2 {print $4}'" % path).stdout.strip())
    # df counts blocks available to non-root users; allow for that and for writes between runs.
    assert abs(report["dkms_disk_free_mb"] - free_kib // 1024) <= max(512, free_kib // 1024 // 20)
    assert report["dkms_disk_ok"] is (report["dkms_disk_free_mb"] >= 2048)


def test_report_driver_matches_package_database(host):
    report = _report(host)
    if host.exists("dpkg-query"):
        out = host.run("dpkg-query -W -f='${db:Status-Abbrev} ${Package}\\n' 'nvidia-*' 2>/dev/null").stdout
        installed = [line.split()[1] for line in out.splitlines() if line.startswith("ii")]
    else:
        installed = host.run("rpm -qa 'nvidia-*' 'kmod-nvidia*'").stdout.split()
    runfile = host.file("/usr/bin/nvidia-uninstall").exists or host.file("/var/log/nvidia-installer.log").exists
    reported = [p.split()[0] for p in report["driver_packages"]]
    assert set(reported) <= set(installed + _installed_linux_modules(host))
    if not installed and not runfile:
        assert report["driver_install_method"] == "none"
        assert report["driver_packages"] == []
    assert ("runfile" in report["driver_install_method"]) is runfile


def _installed_linux_modules(host):
    out = host.run("dpkg-query -W -f='${db:Status-Abbrev} ${Package}\\n' 'linux-modules-nvidia-*' 2>/dev/null").stdout
    return [line.split()[1] for line in out.splitlines() if line.startswith("ii")]


def test_report_container_runtimes_match_path(host):
    report = _report(host)
    expected = [name for name in ("containerd", "docker", "crio", "podman", "runc", "crun",
                                  "nvidia-container-runtime", "nvidia-ctk") if host.exists(name)]
    if host.file("/var/lib/rancher/rke2/bin/containerd").exists:
        expected.append("containerd (RKE2)")
    assert [r["name"] for r in report["container_runtimes"]] == expected


def test_report_rke2_matches_node(host):
    rke2 = _report(host)["rke2"]
    binary = next((p for p in ("/usr/local/bin/rke2", "/usr/bin/rke2", "/opt/rke2/bin/rke2") if host.file(p).exists), "")
    assert rke2["binary"] == binary
    if binary:
        assert rke2["version"] in host.run(binary + " --version").stdout
    else:
        assert rke2["present"] is bool(rke2["units_installed"])
        assert rke2["version"] == ""


def test_report_verdict_follows_blockers(host):
    report = _report(host)
    has_gpu = bool(report["gpus"])
    # preflight_require_gpu defaults to true: a node without a GPU is not ready, and says why.
    assert any("no NVIDIA GPU" in b for b in report["blockers"]) is (not has_gpu)
    assert report["ready"] is (not report["blockers"])


def test_controller_reports_cover_every_host(host):
    report_dir = os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "reports")
    with open(os.path.join(report_dir, "preflight.md"), encoding="utf-8") as fh:
        markdown = fh.read()
    with open(os.path.join(report_dir, "preflight.html"), encoding="utf-8") as fh:
        html = fh.read()
    name = _name(host)
    row = [line for line in markdown.splitlines() if line.startswith("| %s |" % name)]
    assert len(row) == 1, markdown
    assert ("NOT READY" in row[0]) is (not _report(host)["ready"])
    assert "## %s" % name in markdown
    assert "<h2>%s</h2>" % name in html
    # Every installed kernel with or without the NVIDIA module: the test nodes have no driver.
    section = markdown.split("## %s" % name, 1)[1].split("\n## ", 1)[0]
    modules = [line for line in section.splitlines() if line.startswith("| NVIDIA module per installed kernel")]
    assert len(modules) == 1, section
    for kernel in _report(host)["installed_kernels"]:
        assert "%s: NO module" % kernel in modules[0] or "%s: nvidia" % kernel in modules[0], modules[0]
    assert _controller_report(host)["kernel"] == _report(host)["kernel"]


# ---- What the nvidia_driver role will decide, reported per node (same code: its decide step).

def _os(host):
    osr = dict(line.split("=", 1) for line in host.file("/etc/os-release").content_string.splitlines() if "=" in line)
    return osr["ID"].strip('"'), osr["VERSION_ID"].strip('"')


def test_report_driver_branch_and_support_row(host):
    plan = _report(host)["driver_plan"]
    assert plan["decided"] is True
    distro, version = _os(host)
    expected = {("debian", "12"): ("535", "eol"), ("debian", "13"): ("550", "unlisted"),
                ("ubuntu", "22.04"): ("580", "supported"), ("ubuntu", "24.04"): ("580", "supported"),
                ("ubuntu", "26.04"): ("580", "supported")}[(distro, version)]
    assert (plan["branch"], plan["branch_status"]) == expected, plan
    warnings = _report(host)["warnings"]
    if expected[1] == "supported":
        assert plan["branch_warning"] == ""
    else:
        # The end-of-life (or unlisted) branch is a row in the report, and on Debian it names the way out.
        assert plan["branch_warning"] in warnings
        assert "CUDA repository" in plan["branch_warning"]
    md = open(os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "reports", "preflight.md"), encoding="utf-8").read()
    row = [line for line in md.splitlines() if line.startswith("| %s |" % _name(host))][0]
    assert ("R%s %s" % (plan["branch"], {"eol": "EOL", "unlisted": "UNLISTED", "supported": "supported"}[expected[1]])) in row


def test_report_kernel_module_decision(host):
    plan = _report(host)["driver_plan"]
    distro, version = _os(host)
    # No GPU on the test nodes: auto gives open for branch >= 560 (NVIDIA's default), proprietary below it;
    # the Ubuntu 22.04 node asks for proprietary in its inventory.
    expected = {("debian", "12"): "proprietary", ("debian", "13"): "proprietary",
                ("ubuntu", "22.04"): "proprietary", ("ubuntu", "24.04"): "open", ("ubuntu", "26.04"): "open"}[(distro, version)]
    assert plan["kernel_module"] == expected, plan
    assert plan["kernel_module_reason"]
    if (distro, version) == ("ubuntu", "22.04"):
        assert "as asked" in plan["kernel_module_reason"]
    else:
        assert plan["kernel_module_reason"].startswith("auto: ")


def test_report_module_build_decision(host):
    plan = _report(host)["driver_plan"]
    distro, version = _os(host)
    expected = {("debian", "12"): "dkms", ("debian", "13"): "dkms",
                ("ubuntu", "22.04"): "prebuilt", ("ubuntu", "24.04"): "prebuilt", ("ubuntu", "26.04"): "prebuilt"}[(distro, version)]
    assert plan["module_build"] == expected, plan
    if distro == "ubuntu":
        kernel = host.run("ls /boot | sed -n 's/^vmlinuz-//p'").stdout.split()[0]
        # The reason names the kernel's package (each node's pinned kernel has one the archive serves:
        # scripts/build-images.sh; 22.04 asks for the proprietary modules).
        flavour = "" if version == "22.04" else "open-"
        assert "linux-modules-nvidia-580-%s%s" % (flavour, kernel) in plan["module_build_reason"], plan
    assert plan["errors"] == []


def test_preflight_changed_nothing_on_the_node(host):
    # The decision asked apt through a private, temporary copy of its state: the node's sources are untouched.
    assert not host.file("/etc/apt/sources.list.d/baremetal-gpu-nvidia-driver.sources").exists
    assert host.run("ls /tmp | grep baremetal-gpu-apt").rc != 0
    assert not host.file("/var/lib/baremetal-gpu").exists


def test_report_fabric_follows_nvidia_smi_and_the_pci_bus(host):
    """The NVLink fabric state. These fresh nodes have no driver (no nvidia-smi) and no NVIDIA function on
    the PCI bus: the report says it was not read and why, and that no NVSwitch needs it; a node with the driver and
    an HGX board is the unit tests' (tests/unit/plugins/module_utils/test_nvidia_smi_utils.py, real captures)."""
    report = _report(host)
    assert host.run("command -v nvidia-smi").rc != 0
    assert report["driver_nvidia_smi"] == ""
    nvidia = host.run("grep -l '^0x10de$' /sys/bus/pci/devices/*/vendor 2>/dev/null").stdout.split()
    assert nvidia == [] and report["system_kind"] == "none"
    assert report["fabric"] == {"read": False, "gpus": [], "judged": False, "problems": [], "summary": (
        "not read: no nvidia-smi on the node (the driver is not installed); not needed: no NVSwitch on the PCI bus (none)")}
    markdown = open(os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "reports", "preflight.md"),
                    encoding="utf-8").read()
    assert "| NVLink fabric (nvidia-smi) | not read: no nvidia-smi on the node" in markdown
    assert "| System kind (NVSwitch) | none: no NVIDIA GPU on the PCI bus |" in markdown
