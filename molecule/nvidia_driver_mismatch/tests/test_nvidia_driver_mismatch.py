"""The refusals left the nodes as promised: what a refusal before any change must not touch is untouched,
and where packages were installed (Debian 13's failed open build) no reboot state was written."""
import os

import testinfra.utils.ansible_runner

testinfra_hosts = ["podman://" + h for h in testinfra.utils.ansible_runner.AnsibleRunner(
    os.environ["MOLECULE_INVENTORY_FILE"]).get_hosts("all")]


def _name(host):
    return host.backend.get_hostname()


def _installed(host, *patterns):
    out = host.run("dpkg-query -W -f '${Package} ${db:Status-Abbrev}\\n' %s 2>/dev/null"
                   % " ".join("'%s'" % p for p in patterns)).stdout
    return [line.split()[0] for line in out.splitlines() if line.split()[-1][1:2] in ("i", "F", "U", "H", "W", "t")]


def test_refusals_were_saved(host):
    files = host.run("ls /var/tmp/ | grep '^refusal-'").stdout.split()
    expected = {"mismatch-ubuntu2204": 2, "mismatch-ubuntu2404": 3, "mismatch-ubuntu2604": 1,
                "mismatch-debian12": 4, "mismatch-debian13": 1}
    key = _name(host).replace("nvidia_driver_", "")
    assert len(files) == expected[key], files


def test_no_driver_package_installed_where_the_refusal_came_before_the_install(host):
    if _name(host).endswith("debian13"):
        return
    assert _installed(host, "nvidia-*", "libnvidia-*", "dkms", "linux-modules-nvidia-*") == []
    assert not host.exists("nvidia-smi")
    assert not host.file("/etc/modprobe.d/blacklist-nouveau.conf").exists
    assert host.run("apt-mark showhold").stdout.strip() == ""


def test_ubuntu2404_prebuilt_refusal_names_kernel_and_package(host):
    if not _name(host).endswith("ubuntu2404"):
        return
    text = host.file("/var/tmp/refusal-prebuilt-kernel-without-package.txt").content_string
    assert "kernel 6.8.0-999-generic (linux-modules-nvidia-580-open-6.8.0-999-generic)" in text
    # The refusal came before any change (the converge asserted it); its sources file came only with the
    # next case, which got past preflight.
    assert not host.file("/boot/vmlinuz-6.8.0-999-generic").exists


def test_ubuntu2404_listed_but_unserved_prebuilt_package_refused_and_auto_falls_back_to_dkms(host):
    """The 404 fallback against the real archive: the package of kernel 6.8.0-151 is listed, its file answers 404."""
    if not _name(host).endswith("ubuntu2404"):
        return
    text = host.file("/var/tmp/refusal-prebuilt-listed-but-not-served.txt").content_string
    assert ("kernel 6.8.0-151-generic (linux-modules-nvidia-580-open-6.8.0-151-generic: listed, but its file cannot be "
            "downloaded: 404 Not Found (http://") in text, text
    assert "6.8.0-151.151_amd64.deb)" in text, text
    reason = host.file("/var/tmp/fallback-auto.txt").content_string
    assert reason.startswith("auto: DKMS, because Ubuntu's archive has no prebuilt module package for kernel "
                             "6.8.0-151-generic (linux-modules-nvidia-580-open-6.8.0-151-generic: listed"), reason
    # The download left nothing behind: no .deb of it anywhere apt keeps them.
    assert not host.run("ls /var/cache/apt/archives/ | grep -F 6.8.0-151").stdout


def test_ubuntu2604_default_branch_from_an_archive_that_retired_580(host):
    """The decide step on an archive whose nvidia-driver-580 is a transitional package (a local index, TEST ONLY):
    595 chosen, with 595's packages."""
    if not _name(host).endswith("ubuntu2604"):
        return
    reason, install = host.file("/var/tmp/retired-default.txt").content_string.splitlines()[:2]
    assert reason.startswith("595, the newest supported NVIDIA branch (no Long Term Support Branch is a real package "
                             "here; this one is a Production Branch) that the archive ships (real packages: 595, 615"), reason
    assert "nvidia-headless-no-dkms-595-open" in install.split() and "580" not in install, install
    # The local index is gone again.
    assert not host.file("/etc/apt/sources.list.d/baremetal-test-retired.list").exists


def test_debian12_eol_refusal_names_the_variable_and_the_way_out(host):
    if not _name(host).endswith("debian12"):
        return
    text = host.file("/var/tmp/refusal-eol-branch-not-allowed.txt").content_string
    assert "nvidia_driver_allow_eol_branch is false" in text
    assert "nvidia_driver_source: cuda_repo" in text


def test_debian13_failed_open_build_names_make_log_and_did_not_reboot(host):
    if not _name(host).endswith("debian13"):
        return
    text = host.file("/var/tmp/refusal-open-modules-do-not-build.txt").content_string
    log = "/var/lib/dkms/nvidia-current-open/550.163.01/build/make.log"
    assert log in text
    make_log = host.file(log)
    assert make_log.exists, "the log the refusal names exists"
    # The failure the lead measured: nv-pci.c does not compile against 6.12.107.
    assert "nv-pci" in make_log.content_string
    assert not host.file("/var/lib/baremetal-gpu/nvidia_driver/reboot.json").exists
    assert host.run("modinfo -k 6.12.107+deb13-amd64 nvidia-current-open").rc != 0


def test_debian12_sign_refused_when_mokutil_has_no_candidate(host):
    """The node's own lists (mokutil pinned away) have no candidate for mokutil."""
    if not _name(host).endswith("debian12"):
        return
    text = host.file("/var/tmp/refusal-sign-tools-without-candidate.txt").content_string
    assert "apt cannot install mokutil on this node" in text, text
    assert _installed(host, "mokutil") == []
    assert not host.file("/etc/apt/preferences.d/baremetal-test-pin-away").exists
