"""Verify the nvidia_driver role against each node's real state, read independently of the role."""
import json
import os
import re

import testinfra.utils.ansible_runner

testinfra_hosts = ["podman://" + h for h in testinfra.utils.ansible_runner.AnsibleRunner(
    os.environ["MOLECULE_INVENTORY_FILE"]).get_hosts("all")]

BLACKLIST = "/etc/modprobe.d/blacklist-nouveau.conf"
SOURCES = "/etc/apt/sources.list.d/baremetal-gpu-nvidia-driver.sources"
LICENSE = {"open": "Dual MIT/GPL", "proprietary": "NVIDIA"}


def _report(host):
    return json.loads(host.file("/var/tmp/nvidia_driver_report.json").content_string)


def _expected(host):
    return _report(host)["expected"]


def _kernels(host):
    out = host.run("ls /boot").stdout.split()
    kernels = sorted(f[len("vmlinuz-"):] for f in out if f.startswith("vmlinuz-"))
    assert kernels, "the test node has a kernel image (tests/images/Containerfile)"
    return kernels


def _installed(host, pattern):
    """Installed packages matching ``pattern``, held or not: dpkg's second status letter is "i" ("ii", "hi")."""
    out = host.run("dpkg-query -W -f '${Package} ${db:Status-Abbrev}\\n' '%s' 2>/dev/null" % pattern).stdout
    return sorted(line.split()[0] for line in out.splitlines() if line.split()[-1][1:2] == "i")


def _is_debian(host):
    return host.system_info.distribution == "debian"


def _line(exp):
    """The suffix of the driver line in Ubuntu's package names: "-server" for the server line, else ""."""
    return "-server" if exp.get("line") == "server" else ""


def test_decisions_match_what_was_asked(host):
    plan, exp = _report(host)["plan"], _expected(host)
    assert plan["branch"] == exp["branch"]
    assert plan["kernel_module"]["flavour"] == exp["flavour"], plan["kernel_module"]
    assert plan["module_build"]["build"] == exp["build"], plan["module_build"]
    assert plan["branch_status"]["status"] == exp["branch_status"], plan["branch_status"]
    assert plan["kernel_module"]["reason"] and plan["module_build"]["reason"]
    name = host.backend.get_hostname()
    if name.endswith("ubuntu2204"):
        # The next kernel and the 404 fallback for real (molecule/nvidia_driver_jammy's side effect): the node converged prebuilt on
        # 5.15.0-203; apt alone brought jammy's newest kernel, whose prebuilt module package the archive lists but
        # answers 404 for; auto's next run fell back to DKMS and says why. Should the archive serve that file one
        # day, the role takes it and this fails, saying so: pin a kernel whose file is missing, or move this test.
        kernels = _kernels(host)
        assert len(kernels) == 2, kernels
        kernel = kernels[-1]
        package = "linux-modules-nvidia-%s-%s" % (exp["branch"], kernel)
        assert plan["module_build"]["reason"].startswith("auto: DKMS, because Ubuntu's archive has no prebuilt"), plan
        assert "kernel %s (%s: listed, but its file cannot be downloaded: 404 Not Found (http://" % (kernel, package) \
            in plan["module_build"]["reason"], plan["module_build"]
        # The switch removed the prebuilt package of the kernel the node had (DKMS built for both: tested below).
        assert not host.package("linux-modules-nvidia-%s-%s" % (exp["branch"], kernels[0])).is_installed
    if name.endswith(("ubuntu2404", "ubuntu2604")):
        assert plan["module_build"]["reason"].startswith("auto: prebuilt"), plan["module_build"]
        assert plan["kernel_module"]["reason"].startswith("auto: open"), plan["kernel_module"]


def test_branch_support_warning(host):
    plan = _report(host)["plan"]
    if _is_debian(host):
        warning = plan["branch_warning"]
        assert warning.startswith("END OF LIFE:" if plan["branch"] == "535" else "NOT SUPPORTED BY NVIDIA:"), warning
        assert "R%s" % plan["branch"] in warning
        # On Debian the supported branches come from NVIDIA's CUDA repository: the warning says so.
        assert "CUDA repository" in warning and "nvidia_driver_source: cuda_repo" in warning, warning
        if plan["branch"] == "535":
            assert "reached NVIDIA's end of life in 2026-06" in warning, warning
        else:
            assert "not in NVIDIA's support table" in warning, warning
    else:
        assert plan["branch_warning"] == ""


def test_blacklist_file_content(host):
    f = host.file(BLACKLIST)
    assert f.is_file and f.mode == 0o644
    lines = [line.strip() for line in f.content_string.splitlines() if line.strip() and not line.startswith("#")]
    assert "blacklist nouveau" in lines
    assert "options nouveau modeset=0" in lines


def test_every_initramfs_holds_the_blacklist(host):
    blacklist_mtime = host.file(BLACKLIST).mtime
    for kernel in _kernels(host):
        initrd = host.file("/boot/initrd.img-%s" % kernel)
        assert initrd.exists, initrd.path
        assert initrd.mtime >= blacklist_mtime, "%s is older than %s" % (initrd.path, BLACKLIST)
        listing = host.run("lsinitramfs %s", initrd.path)
        assert listing.rc == 0, listing.stderr
        assert re.search(r"(^|/)etc/modprobe\.d/blacklist-nouveau\.conf$", listing.stdout, re.M), initrd.path


def test_module_of_every_kernel_is_the_branch_and_flavour(host):
    exp = _expected(host)
    for kernel in _kernels(host):
        info = host.run("modinfo -k %s %s", kernel, exp["kmod"])
        assert info.rc == 0, info.stderr
        fields = dict(line.split(":", 1) for line in info.stdout.splitlines() if re.match(r"^[a-z_]+:", line))
        assert fields["version"].strip().startswith(exp["branch"] + "."), fields["version"]
        # The proof of the flavour: the open modules are "Dual MIT/GPL", the proprietary ones "NVIDIA".
        assert fields["license"].strip() == LICENSE[exp["flavour"]], (kernel, fields["license"], fields["filename"])
        filename = fields["filename"].strip()
        if exp["build"] == "prebuilt":
            assert filename.startswith("/lib/modules/%s/kernel/nvidia-%s" % (kernel, exp["branch"])), filename
            assert "Canonical" in fields.get("signer", ""), fields.get("signer")
        else:
            assert "/updates/dkms/" in filename, filename
            if exp.get("signed"):
                # nvidia_driver_secure_boot: sign: DKMS signed it with the MOK key given in variables (its
                # certificate's CN), else with the role's own, named after the host (not the key DKMS makes itself,
                # "DKMS module signing key").
                signer = exp.get("signer") or "%s DKMS module signing key" % host.check_output("hostname -s")
                assert fields.get("signer", "").strip() == signer, (kernel, fields.get("signer"))
    assert _report(host)["installed_version"].startswith(exp["branch"] + ".")


def test_mok_key_of_a_signing_node_is_private(host):
    exp = _expected(host)
    key = host.file("/var/lib/shim-signed/mok/MOK.priv")
    if not exp.get("signed"):
        assert not host.file("/etc/dkms/framework.conf.d/baremetal-gpu-mok.conf").exists
        return
    assert key.exists and key.mode == 0o600 and key.user == "root", (key.exists, oct(key.mode))
    assert host.file("/var/lib/shim-signed/mok").mode == 0o700
    if exp.get("signer"):
        # The given pair: the certificate kept as given (PEM) beside the DER that DKMS and mokutil read.
        assert host.file("/var/lib/shim-signed/mok/MOK.pem").content_string.startswith("-----BEGIN CERTIFICATE-----")
        der = host.run("openssl x509 -inform DER -in /var/lib/shim-signed/mok/MOK.der -noout -subject")
        assert der.rc == 0 and exp["signer"] in der.stdout, der.stdout
    conf = host.file("/etc/dkms/framework.conf.d/baremetal-gpu-mok.conf").content_string
    assert 'mok_signing_key="/var/lib/shim-signed/mok/MOK.priv"' in conf
    assert 'mok_certificate="/var/lib/shim-signed/mok/MOK.der"' in conf


def test_dkms_built_for_every_kernel_or_not_at_all(host):
    exp = _expected(host)
    if exp["build"] == "prebuilt":
        # Canonical's prebuilt modules: no DKMS anywhere, a modules package for every kernel.
        assert _installed(host, "dkms") == []
        assert _installed(host, "nvidia-dkms-*") == []
        assert not host.file("/var/lib/dkms").exists or host.run("ls /var/lib/dkms | grep -i nvidia").rc != 0
        for kernel in _kernels(host):
            pkg = "linux-modules-nvidia-%s-%s%s" % (exp["branch"], "open-" if exp["flavour"] == "open" else "", kernel)
            assert host.package(pkg).is_installed, pkg
        return
    status = host.run("dkms status -m %s", exp["dkms_module"])
    assert status.rc == 0, status.stderr
    built = set()
    for line in status.stdout.splitlines():
        m = re.match(r"^%s[/,]\s*(\S+?),\s*(\S+?),\s*\S+?:\s*installed" % re.escape(exp["dkms_module"]), line)
        if m:
            assert m.group(1).startswith(exp["branch"] + "."), line
            built.add(m.group(2))
    for kernel in _kernels(host):
        assert kernel in built, "dkms status has no installed build for %s:\n%s" % (kernel, status.stdout)


def test_only_one_flavour_and_one_branch_installed(host):
    exp = _expected(host)
    if _is_debian(host):
        other = "nvidia-open-kernel-dkms" if exp["flavour"] == "proprietary" else "nvidia-kernel-dkms"
        assert _installed(host, other) == []
        return
    line = _line(exp)
    common = _installed(host, "nvidia-kernel-common-*")
    assert common == ["nvidia-kernel-common-%s%s" % (exp["branch"], line)], common
    if exp["flavour"] == "open":
        assert [p for p in _installed(host, "nvidia-*") if re.match(r"^nvidia-(dkms|kernel-source|headless-no-dkms)-%s%s$"
                                                                    % (exp["branch"], line), p)] == []
        assert [p for p in _installed(host, "linux-modules-nvidia-*") if "-open-" not in p] == []
    else:
        assert [p for p in _installed(host, "nvidia-*") if p.endswith("-open")] == []


def test_packages_are_held_and_recorded(host):
    plan = _report(host)["plan"]
    held = set(p.split(":")[0] for p in host.run("apt-mark showhold").stdout.split())
    assert plan["hold"], plan
    assert set(plan["hold"]) <= held, (plan["hold"], held)
    record = json.loads(host.file("/var/lib/baremetal-gpu/nvidia_driver/holds.json").content_string)
    fm = [p.split("=")[0] for p in _report(host)["fabric_manager"].get("packages", [])]
    assert record["held"] == sorted(plan["hold"] + fm)
    assert set(fm) <= held, (fm, held)
    # Every installed package of the plan is held: nothing the role installed can drift.
    for name in plan["packages"] + plan["kernel_packages"]:
        if name not in ("firmware-misc-nonfree",):
            assert name in held, name


def test_unattended_upgrades_exclusion(host):
    f = host.file("/etc/apt/apt.conf.d/51baremetal-gpu-nvidia-driver")
    assert f.is_file
    dump = host.run("apt-config dump Unattended-Upgrade::Package-Blacklist").stdout
    assert "^libnvidia-" in dump and "^cuda-" in dump, dump
    # The prebuilt module packages by their exact names only (those of the node's kernels): the flavour metapackage
    # must still move with the kernel and bring the next kernel's package, a new name.
    listed = re.findall(r'"\^(linux-[a-z]+-nvidia-[^"$]*)\$"', dump)
    assert len(listed) == len(re.findall(r'"\^linux-', dump)), dump
    kernels = host.run("ls /lib/modules").stdout.split()
    assert all(any(name.endswith("-" + kernel) for kernel in kernels) for name in listed), (listed, kernels)
    out = host.run("dpkg-query -W -f '${Package} ${db:Status-Abbrev}\\n' 'linux-modules-nvidia-*' 2>/dev/null").stdout
    per_kernel = [line.split()[0] for line in out.splitlines() if line.split()[-1][1:2] == "i"
                  and any(line.split()[0].endswith("-" + kernel) for kernel in kernels)]
    assert sorted(per_kernel) == sorted(name for name in listed if name.startswith("linux-modules-")), (per_kernel, dump)


def _own_entries(host):
    """The node's own deb822 or one-line entries for its release suite: (uri, signed_by or None)."""
    release = host.run(". /etc/os-release && echo $VERSION_CODENAME").stdout.strip()
    for path in ("/etc/apt/sources.list.d/debian.sources", "/etc/apt/sources.list.d/ubuntu.sources"):
        f = host.file(path)
        if f.exists:
            text = f.content_string
            return re.search(r"^URIs:\s*(\S+)", text, re.M).group(1), re.search(r"^Signed-By:\s*(\S+)", text, re.M).group(1)
    line = [ln for ln in host.file("/etc/apt/sources.list").content_string.splitlines()
            if ln.startswith("deb ") and ln.split()[2] == release][0]
    return line.split()[1], None


def test_added_sources_keep_the_nodes_mirror_and_signed_by(host):
    uri, signed_by = _own_entries(host)
    # The deb822 paragraphs, without the file's comment header.
    text = "\n".join(line for line in host.file(SOURCES).content_string.splitlines() if not line.startswith("#"))
    paragraphs = [p for p in text.split("\n\n") if "Types:" in p]
    assert paragraphs, text
    for para in paragraphs:
        assert re.search(r"^URIs: %s$" % re.escape(uri), para, re.M), para
        if signed_by:
            assert re.search(r"^Signed-By: %s$" % re.escape(signed_by), para, re.M), para
        else:
            assert "Signed-By" not in para
    comps = " ".join(re.findall(r"^Components: (.*)$", text, re.M))
    wanted = ["contrib", "non-free"] if _is_debian(host) else ["restricted", "multiverse"]
    for comp in wanted:
        assert comp in comps.split(), comps
    # apt reads every source without complaint (a Signed-By conflict fails every apt command node-wide).
    res = host.run("apt-cache policy")
    assert res.rc == 0 and "Conflicting values" not in res.stderr, res.stderr
    assert not host.file("/etc/apt/sources.list.d/baremetal-gpu-nvidia-driver.list").exists


def test_nvidia_smi_present_and_reports_no_gpu(host):
    assert host.exists("nvidia-smi")
    res = host.run("nvidia-smi")
    out = res.stdout + res.stderr
    assert (res.rc == 9 and "couldn't communicate with the NVIDIA driver" in out) or \
        (res.rc == 255 and "Failed to initialize NVML" in out), (res.rc, out)
    state = _report(host)["state"]
    assert state["driver_state"] in ("no_driver_communication", "nvml_init_failed"), state


# ---- Fabric Manager (forced NVSwitch facts on ubuntu2604-dkms), persistence daemon, module parameters ----

def _version(host, name):
    return host.run("dpkg-query -W -f '${Version}' %s" % name).stdout.strip()


def test_fabric_manager_at_the_drivers_exact_version_held_and_enabled(host):
    exp, fm = _expected(host), _report(host)["fabric_manager"]
    installed = _installed(host, "nvidia-fabricmanager-*") + _installed(host, "libnvidia-nscq-*")
    if not exp.get("fabric_manager"):
        # A PCIe node (no NVSwitch in its facts) gets no Fabric Manager.
        assert fm.get("wanted") in (False, "False", None) and installed == [], (fm, installed)
        return
    branch = exp["branch"]
    assert installed == ["nvidia-fabricmanager-%s" % branch, "libnvidia-nscq-%s" % branch], installed
    driver = _version(host, "nvidia-utils-%s%s" % (branch, _line(exp)))
    upstream = driver.split("-")[0]
    for name in installed:
        assert _version(host, name).split("-")[0] == upstream, (name, _version(host, name), driver)
    held = set(p.split(":")[0] for p in host.run("apt-mark showhold").stdout.split())
    assert set(installed) <= held, held
    assert host.run("systemctl is-enabled nvidia-fabricmanager.service").stdout.strip() == "enabled"


def test_persistence_daemon_enabled(host):
    assert host.run("systemctl is-enabled nvidia-persistenced.service").stdout.strip() in ("enabled", "static")


def test_no_module_params_file_when_none_asked(host):
    # Module parameters are tested on molecule/nvidia_driver_switch's node; none is asked here.
    assert not host.file("/etc/modprobe.d/baremetal-gpu-nvidia-params.conf").exists
