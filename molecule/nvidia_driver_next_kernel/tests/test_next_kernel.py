"""The next kernel, brought without the role (side_effect.yml): read each node independently of the role.

The DKMS nodes: every kernel in /boot has the NVIDIA module (modinfo -k), the new one included, built by DKMS's
kernel hook and signed with the same key as the module of the kernel the node had. Prebuilt node: the new kernel
has no module (Canonical's package for it is listed, but the archive answers 404), and the refused and check-mode
runs of the role changed no NVIDIA package.
"""
import os
import re

import pytest
import testinfra.utils.ansible_runner

testinfra_hosts = ["podman://" + h for h in testinfra.utils.ansible_runner.AnsibleRunner(
    os.environ["MOLECULE_INVENTORY_FILE"]).get_hosts("all")]


def _kernels(host):
    return sorted(f[len("vmlinuz-"):] for f in host.run("ls /boot").stdout.split() if f.startswith("vmlinuz-"))


def _before(host):
    lines = host.file("/var/tmp/next_kernel_before.txt").content_string.splitlines()
    return ([line for line in lines if not line.startswith("vmlinuz-")],
            sorted(line[len("vmlinuz-"):] for line in lines if line.startswith("vmlinuz-")))


def _modinfo(host, kernel, field):
    # Debian's packages name the module nvidia-current, Ubuntu's nvidia.
    name = "nvidia-current" if host.system_info.distribution == "debian" else "nvidia"
    cmd = host.run("modinfo -k %s -F %s %s" % (kernel, field, name))
    return cmd.rc, cmd.stdout.strip()


def _dkms(host):
    return host.backend.get_hostname().endswith(("debian12", "ubuntu2404-dkms"))


def changed_tasks(log):
    """{host: [task, ...]}: the tasks that reported a change, read from an ansible-playbook log (default callback)."""
    changed, task = {}, None
    for line in log.splitlines():
        match = re.match(r"(TASK|RUNNING HANDLER) \[(.*)\] \*+$", line)
        if match:
            task = match.group(2)
            continue
        match = re.match(r"changed: \[([^\]]+)\]", line)
        if match:
            changed.setdefault(match.group(1), [])
            if task not in changed[match.group(1)]:
                changed[match.group(1)].append(task)
    return changed


def test_a_new_kernel_arrived(host):
    _packages, before = _before(host)
    after = _kernels(host)
    new = sorted(set(after) - set(before))
    assert len(before) == 1 and len(new) == 1, (before, after)
    expected = "6.8.0-151-generic" if host.system_info.distribution == "ubuntu" else None
    if expected:
        assert new == [expected]
    else:
        assert new[0].endswith("-amd64") and new[0] > before[0], (before, new)


def test_dkms_built_the_module_for_every_kernel_with_the_same_key(host):
    if not _dkms(host):
        pytest.skip("the prebuilt node: its test is below")
    kernels = _kernels(host)
    signers, versions = set(), set()
    for kernel in kernels:
        rc, filename = _modinfo(host, kernel, "filename")
        assert rc == 0 and filename.startswith("/lib/modules/%s/updates/dkms/" % kernel), (kernel, filename)
        signers.add(_modinfo(host, kernel, "signer")[1])
        versions.add(_modinfo(host, kernel, "version")[1])
    assert len(versions) == 1 and len(signers) == 1 and "" not in signers, (versions, signers)
    # DKMS's kernel postinst hook built it while apt installed the kernel, not the role (it ran afterwards).
    log = host.file("/var/tmp/next_kernel_apt.log").content_string
    assert "dkms" in log.lower() and kernels[-1] in log, log[-2000:]


def test_debian_headers_metapackage_came_from_the_role_and_moved_with_the_kernel(host):
    if host.system_info.distribution != "debian":
        pytest.skip("the headers metapackage of the Ubuntu nodes came with the side effect, not the role")
    pkg = host.package("linux-headers-amd64")
    assert pkg.is_installed
    depends = host.run("dpkg-query -W -f '${Depends}' linux-headers-amd64").stdout
    assert _kernels(host)[-1] in depends, depends
    assert "linux-headers-amd64" not in host.run("apt-mark showhold").stdout.split()


def test_prebuilt_node_new_kernel_has_no_module_and_nothing_changed(host):
    if _dkms(host):
        pytest.skip("a DKMS node: its test is above")
    before_packages, before_kernels = _before(host)
    rc, filename = _modinfo(host, "6.8.0-151-generic", "filename")
    assert rc != 0, filename
    rc, filename = _modinfo(host, before_kernels[0], "filename")
    assert rc == 0 and "/updates/dkms/" not in filename, filename
    now = host.run("dpkg-query -W -f '${db:Status-Abbrev} ${Package} ${Version}\\n' '*nvidia*'").stdout
    now = [line for line in now.splitlines() if line.startswith("ii")]
    assert sorted(now) == sorted(before_packages)


# The only change the role may make when it runs again after the next kernel: it lists the new kernel's initramfs
# once (the nouveau blacklist is in it: the kernel's own postinst built it) and records that. Nothing installed,
# built, held or rebuilt.
RECORD = "baremetal.gpu.nvidia_driver : Record which initramfs hold the current blacklist"


def test_role_again_on_dkms_node_changed_only_its_initramfs_record(host):
    if not _dkms(host):
        pytest.skip("the prebuilt node: the role ran there refused or in check mode (above)")
    name = host.backend.get_hostname()
    with open(os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "rerun-dkms.log"), encoding="utf-8") as fh:
        log = fh.read()
    recap = re.search(re.escape(name) + r" +: ok=[0-9]+ +changed=([0-9]+) +unreachable=0 +failed=0", log)
    assert recap, log[-3000:]
    changed = changed_tasks(log).get(name, [])
    # The recap counts the same tasks the log shows changed (the log was read right).
    assert len(changed) == int(recap.group(1)), (recap.group(0), changed)
    assert changed in ([], [RECORD]), changed
