"""Verify the nvidia_driver role against the node's real state (read independently of the role)."""
import json
import os
import re

import testinfra.utils.ansible_runner

testinfra_hosts = ["podman://" + h for h in testinfra.utils.ansible_runner.AnsibleRunner(
    os.environ["MOLECULE_INVENTORY_FILE"]).get_hosts("all")]

BLACKLIST = "/etc/modprobe.d/blacklist-nouveau.conf"


def _report(host):
    return json.loads(host.file("/var/tmp/nvidia_driver_report.json").content_string)


def _is_debian(host):
    return host.system_info.distribution == "debian"


def _kmod_package(host):
    return "nvidia-kernel-dkms" if _is_debian(host) else "nvidia-dkms-%s" % _report(host)["expected_branch"]


def _kernels(host):
    out = host.run("ls /boot").stdout.split()
    return sorted(f[len("vmlinuz-"):] for f in out if f.startswith("vmlinuz-"))


def test_blacklist_file_content(host):
    f = host.file(BLACKLIST)
    assert f.is_file and f.mode == 0o644
    lines = [line.strip() for line in f.content_string.splitlines() if line.strip() and not line.startswith("#")]
    assert "blacklist nouveau" in lines
    assert "options nouveau modeset=0" in lines


def test_initramfs_regenerated_after_blacklist(host):
    kernels = _kernels(host)
    assert kernels, "the test node has a kernel image (converge pre_task)"
    blacklist_mtime = host.file(BLACKLIST).mtime
    for kernel in kernels:
        initrd = host.file("/boot/initrd.img-%s" % kernel)
        assert initrd.exists, initrd.path
        assert initrd.mtime >= blacklist_mtime, "%s is older than %s" % (initrd.path, BLACKLIST)
        listing = host.run("lsinitramfs %s", initrd.path)
        assert listing.rc == 0, listing.stderr
        assert re.search(r"(^|/)etc/modprobe\.d/blacklist-nouveau\.conf$", listing.stdout, re.M), \
            "the blacklist is not in %s" % initrd.path


def test_installed_version_belongs_to_branch(host):
    branch = _report(host)["expected_branch"]
    pkg = host.package(_kmod_package(host))
    assert pkg.is_installed
    assert re.match(r"^(\d+:)?%s\." % branch, pkg.version), pkg.version
    # No other branch's kernel-module package slipped in (Ubuntu transitional chains).
    others = host.run("dpkg-query -W -f '${Package} ${Status}\\n' 'nvidia-dkms-*' 2>/dev/null").stdout
    for line in others.splitlines():
        if line.endswith("install ok installed"):
            assert line.split()[0] == _kmod_package(host), line
    assert _report(host)["installed_version"].startswith(branch + ".")


def test_packages_are_held(host):
    held = host.run("apt-mark showhold").stdout.split()
    assert _kmod_package(host) in held, held
    if _is_debian(host):
        assert {"nvidia-driver", "nvidia-smi"} <= set(held), held
    else:
        assert "nvidia-driver-%s" % _report(host)["expected_branch"] in held, held


def test_dkms_built_for_every_kernel(host):
    branch = _report(host)["expected_branch"]
    module = "nvidia-current" if _is_debian(host) else "nvidia"
    status = host.run("dkms status -m %s", module)
    assert status.rc == 0, status.stderr
    built = set()
    for line in status.stdout.splitlines():
        m = re.match(r"^%s[/,]\s*(\S+?),\s*(\S+?),\s*\S+?:\s*installed" % re.escape(module), line)
        if m:
            assert m.group(1).startswith(branch + "."), line
            built.add(m.group(2))
    for kernel in _kernels(host):
        assert kernel in built, "dkms status has no installed build for %s:\n%s" % (kernel, status.stdout)
        assert host.run("ls /lib/modules/%s/updates/dkms/ | grep -E '^nvidia(-current)?\\.ko'", kernel).rc == 0


def test_unattended_upgrades_exclusion(host):
    f = host.file("/etc/apt/apt.conf.d/51baremetal-gpu-nvidia-driver")
    assert f.is_file
    text = f.content_string
    assert "Unattended-Upgrade::Package-Blacklist" in text
    assert '"^nvidia-";' in text and '"^libnvidia-";' in text
    # apt parses it: the setting is live.
    dump = host.run("apt-config dump Unattended-Upgrade::Package-Blacklist").stdout
    assert "^libnvidia-" in dump, dump


def test_apt_sources_use_the_nodes_own_mirror(host):
    own = host.file("/etc/apt/sources.list").content_string.split()[1]
    added = host.file("/etc/apt/sources.list.d/baremetal-gpu-nvidia-driver.list").content_string
    deb_lines = [line for line in added.splitlines() if line.startswith("deb ")]
    assert deb_lines
    for line in deb_lines:
        assert line.split()[1].rstrip("/") == own.rstrip("/"), line
    comps = " ".join(deb_lines)
    wanted = ["contrib", "non-free", "non-free-firmware"] if _is_debian(host) else ["restricted", "multiverse"]
    for comp in wanted:
        assert " %s" % comp in comps


def test_nvidia_smi_present_and_reports_no_driver(host):
    assert host.exists("nvidia-smi")
    res = host.run("nvidia-smi")
    out = res.stdout + res.stderr
    if _is_debian(host):
        # Debian 12, 535: the classic "couldn't communicate" (exit 9).
        assert res.rc == 9, (res.rc, out)
        assert "couldn't communicate with the NVIDIA driver" in out
    else:
        # Ubuntu 22.04, 580 in a container measured: "Failed to initialize NVML: Unknown Error"
        # (exit 255); on a node without the module loaded it is exit 9. Either means no GPU.
        assert (res.rc, "couldn't communicate with the NVIDIA driver" in out) == (9, True) or \
            (res.rc, "Failed to initialize NVML" in out) == (255, True), (res.rc, out)
    state = _report(host)["state"]
    assert state["driver_state"] in ("no_driver_communication", "nvml_init_failed"), state
    assert state["driver_state"] != "ok", "no GPU here: the role must not report a verified GPU"
