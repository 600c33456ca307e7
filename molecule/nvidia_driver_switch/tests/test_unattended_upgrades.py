"""unattended-upgrades, asked itself, on the nodes of the group unattended_upgrades (molecule/nvidia_driver_switch's
Ubuntu 24.04 node with Canonical's prebuilt modules; molecule/nvidia_driver_releases' Ubuntu 26.04 DKMS node, through
a symlink). Both carry Fabric Manager and NSCQ.

The node's NVIDIA and CUDA packages (the driver's user space, Fabric Manager, NSCQ, the kernel-module packages) get
a newer version from a local repository (uu_candidates.py, TEST ONLY: empty packages, the whole set bumped together so
that it is a consistent upgrade), the only origin unattended-upgrades may take from during the test; then
unattended-upgrades' own dry run says what it would upgrade. Control: with the role's blacklist file moved away and the
holds lifted, it upgrades every one of them, so the test can fail. The node is put back afterwards."""
import os
import re

import testinfra.utils.ansible_runner

testinfra_hosts = ["podman://" + h for h in testinfra.utils.ansible_runner.AnsibleRunner(
    os.environ["MOLECULE_INVENTORY_FILE"]).get_hosts("unattended_upgrades")]

UU_CONF = "/etc/apt/apt.conf.d/51baremetal-gpu-nvidia-driver"
KERNEL_SIDE = re.compile(r"^linux-(modules|objects|signatures)-nvidia-")


def _uu_would_upgrade(host):
    out = host.run("unattended-upgrade --dry-run --debug 2>&1")
    assert out.rc == 0, out.stdout[-3000:]
    found = re.search(r"^Packages that will be upgraded: (.*)$", out.stdout, re.M)
    return set(found.group(1).split()) if found else set()


def _driver_line(host):
    """The installed driver's user-space names: ("580", "-server") from nvidia-utils-580-server."""
    out = host.run_expect([0], "dpkg-query -W -f '${Package} ${db:Status-Abbrev}\\n' 'nvidia-utils-*'").stdout
    names = [line.split()[0] for line in out.splitlines() if line.split()[-1][1:2] == "i"]
    assert len(names) == 1, names
    found = re.match(r"^nvidia-utils-([0-9]+)(-server)?$", names[0])
    return found.group(1), found.group(2) or ""


def test_unattended_upgrades_dry_run_leaves_every_nvidia_user_space_package_alone(host):
    script = open(os.path.join(os.path.dirname(__file__), "uu_candidates.py"), encoding="utf-8").read()
    host.run_expect([0], "cat > /root/uu_candidates.py <<'BAREMETAL_EOF'\n%sBAREMETAL_EOF" % script)
    host.run_expect([0], "DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "
                         "unattended-upgrades apt-utils")
    branch, line = _driver_line(host)
    prebuilt = host.run("dpkg-query -W 'linux-modules-nvidia-*' 2>/dev/null").stdout.strip() != ""
    holds = host.run_expect([0], "apt-mark showhold").stdout.split()
    try:
        candidates = set(host.run_expect([0], "python3 /root/uu_candidates.py").stdout.split())
        user_space = set(p for p in candidates if not KERNEL_SIDE.match(p))
        # What the issue names: the driver's libraries and tools, Fabric Manager and NSCQ (the toolkit is not on this
        # node: NVIDIA's repository is unreachable here; its names are under the same ^nvidia- and ^libnvidia-).
        assert {"nvidia-fabricmanager-" + branch, "libnvidia-nscq-" + branch, "libnvidia-compute-%s%s" % (branch, line),
                "nvidia-utils-%s%s" % (branch, line)} <= user_space, sorted(candidates)
        if prebuilt:
            assert [p for p in candidates if p.startswith("linux-modules-nvidia-")], sorted(candidates)
        else:
            assert [p for p in candidates if p.startswith("nvidia-dkms-%s%s" % (branch, line))], sorted(candidates)
        # As the role left the node (its holds and its blacklist), and with the blacklist alone: nothing of the set,
        # the per-kernel module packages included (listed by their exact names: a new point release of the driver
        # comes as a new version of them, and without the holds unattended-upgrades took it).
        assert _uu_would_upgrade(host) & candidates == set()
        host.run_expect([0], "apt-mark unhold %s" % " ".join(holds))
        assert _uu_would_upgrade(host) & candidates == set()
        # Control: neither the blacklist nor the holds, and unattended-upgrades takes the whole set.
        host.run_expect([0], "mv %s /root/uu-blacklist.conf" % UU_CONF)
        try:
            assert _uu_would_upgrade(host) >= candidates
        finally:
            host.run_expect([0], "mv /root/uu-blacklist.conf %s" % UU_CONF)
    finally:
        host.run("apt-mark hold %s" % " ".join(holds))
        host.run("python3 /root/uu_candidates.py remove")
