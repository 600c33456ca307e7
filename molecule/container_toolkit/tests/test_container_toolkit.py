"""container_toolkit: the nvidia runtime merged into containerd and Docker, the user's settings kept.

NVIDIA's repository cannot be reached here, so converge skips the tag nvidia_repo (key, repository,
packages, holds: NOT TESTED) and the runtime binary is absent: the configuration must be written anyway.
"""
import json
import os
import re

import pytest
import testinfra.utils.ansible_runner

RUNNER = testinfra.utils.ansible_runner.AnsibleRunner(os.environ["MOLECULE_INVENTORY_FILE"])
testinfra_hosts = ["podman://" + h for h in RUNNER.get_hosts("all")]

BINARY = "/usr/bin/nvidia-container-runtime"


def _table(dump, header):
    """The key lines of one table of `containerd config dump`, up to the next table header."""
    body = dump.split(header + "\n", 1)[1]
    return re.split(r"\n\s*\[", body, maxsplit=1)[0]


def _is(host, group):
    return host.backend.get_hostname() in RUNNER.get_hosts(group)


@pytest.fixture
def containerd_host(host):
    if not _is(host, "runtime_containerd"):
        pytest.skip("containerd checks run on the containerd node")
    return host


@pytest.fixture
def docker_host(host):
    if not _is(host, "runtime_docker"):
        pytest.skip("docker checks run on the docker node")
    return host


def test_install_was_skipped_and_said_so(host):
    # nvidia_repo skipped: no repository, no key, no packages, no runtime binary.
    assert not host.file("/etc/apt/sources.list.d/nvidia-container-toolkit.list").exists
    assert not host.file(BINARY).exists
    assert not host.package("nvidia-container-toolkit").is_installed


def test_containerd_dump_has_the_nvidia_runtime(containerd_host):
    dump = containerd_host.check_output("containerd config dump")
    assert '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]' in dump
    options = _table(dump, '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]')
    assert 'BinaryName = "/usr/bin/nvidia-container-runtime"' in options
    assert "SystemdCgroup = true" in options  # copied from the user's runc options
    runtime = _table(dump, '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]')
    assert 'runtime_type = "io.containerd.runc.v2"' in runtime
    # Not the default runtime (container_toolkit_default_runtime is false).
    assert 'default_runtime_name = "runc"' in dump


def test_containerd_keeps_the_user_settings(containerd_host):
    dump = containerd_host.check_output("containerd config dump")
    assert 'sandbox_image = "registry.example.com/pause:3.9"' in dump
    assert "oom_score = -999" in dump
    assert 'endpoint = ["https://mirror.example.com"]' in dump
    runc = _table(dump, '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]')
    assert "SystemdCgroup = true" in runc


def test_main_config_only_gained_the_import(containerd_host):
    user = containerd_host.file("/var/tmp/containerd-config.user.toml").content_string.splitlines()
    now = containerd_host.file("/etc/containerd/config.toml").content_string.splitlines()
    added = [line for line in now if line not in user]
    assert added == ['imports = ["/etc/containerd/conf.d/*.toml"]'], added
    assert [line for line in user if line not in now] == []


def test_dropin(containerd_host):
    dropin = containerd_host.file("/etc/containerd/conf.d/99-nvidia.toml")
    assert dropin.is_file and dropin.user == "root" and dropin.mode == 0o644
    text = dropin.content_string
    assert text.startswith("#")
    assert "version = 2" in text
    assert 'BinaryName = "/usr/bin/nvidia-container-runtime"' in text


def test_containerd_running_on_the_merged_config(containerd_host):
    assert containerd_host.service("containerd").is_running


def test_daemon_json_merged_not_replaced(docker_host):
    data = json.loads(docker_host.file("/etc/docker/daemon.json").content_string)
    assert data == {
        "log-driver": "json-file",
        "log-opts": {"max-size": "10m", "max-file": "3"},
        "data-root": "/srv/docker",
        "runtimes": {"crun": {"path": "/usr/bin/crun"},
                     "nvidia": {"path": "/usr/bin/nvidia-container-runtime", "args": []}},
    }
    assert "default-runtime" not in data
