"""container_toolkit, every node: the install part was skipped, and nothing pretends otherwise.

NVIDIA's repository cannot be reached here, so converge skips the tag nvidia_repo (key, repository,
packages, holds: NOT TESTED) and the runtime binary is absent: the configuration must be written anyway.
"""
import os

import testinfra.utils.ansible_runner

RUNNER = testinfra.utils.ansible_runner.AnsibleRunner(os.environ["MOLECULE_INVENTORY_FILE"])
testinfra_hosts = ["podman://" + h for h in RUNNER.get_hosts("all")]

BINARY = "/usr/bin/nvidia-container-runtime"


def test_install_was_skipped_and_said_so(host):
    # nvidia_repo skipped: no repository, no key, no packages, no runtime binary.
    assert not host.file("/etc/apt/sources.list.d/nvidia-container-toolkit.list").exists
    assert not host.file(BINARY).exists
    assert not host.package("nvidia-container-toolkit").is_installed
