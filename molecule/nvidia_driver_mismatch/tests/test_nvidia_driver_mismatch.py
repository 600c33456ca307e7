"""The role refused branch 525 on Ubuntu 22.04 and installed nothing."""
import os

import testinfra.utils.ansible_runner

testinfra_hosts = ["podman://" + h for h in testinfra.utils.ansible_runner.AnsibleRunner(
    os.environ["MOLECULE_INVENTORY_FILE"]).get_hosts("all")]


def test_refusal_names_both_branches_and_the_way_out(host):
    text = host.file("/var/tmp/nvidia_driver_refusal.txt").content_string
    assert "Branch mismatch" in text
    assert "nvidia_driver_branch 525 was asked for" in text
    assert "apt would install the 580" in text
    assert "nvidia_driver_source: cuda_repo" in text


def test_nothing_was_installed(host):
    out = host.run("dpkg-query -W -f '${Package} ${Status}\\n' 'nvidia-*' 'libnvidia-*' 'dkms' 'linux-headers-*' 2>/dev/null")
    installed = [line.split()[0] for line in out.stdout.splitlines() if line.endswith("install ok installed")]
    assert installed == [], installed
    assert not host.exists("nvidia-smi")
    assert not host.file("/var/lib/dkms").exists


def test_no_driver_configuration_written(host):
    assert not host.file("/etc/modprobe.d/blacklist-nouveau.conf").exists
    assert host.run("apt-mark showhold").stdout.strip() == ""
