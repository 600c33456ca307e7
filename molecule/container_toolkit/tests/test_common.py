"""container_toolkit, every node: the install part was skipped, and nothing pretends otherwise.

NVIDIA's repository cannot be reached here, so converge skips the tag nvidia_repo (repository,
packages, holds: NOT TESTED) and the runtime binary is absent: the configuration must be written anyway.
"""
import os

import testinfra.utils.ansible_runner

RUNNER = testinfra.utils.ansible_runner.AnsibleRunner(os.environ["MOLECULE_INVENTORY_FILE"])
testinfra_hosts = ["podman://" + h for h in RUNNER.get_hosts("all")]


def test_install_was_skipped_and_said_so(host):
    assert not host.file("/etc/apt/sources.list.d/nvidia-container-toolkit.list").exists
    assert not host.file("/usr/bin/nvidia-container-runtime").exists
    assert not host.package("nvidia-container-toolkit").is_installed
