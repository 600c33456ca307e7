"""container_toolkit on the containerd node: the nvidia runtime merged, the user's settings kept."""
import os
import re

import testinfra.utils.ansible_runner

RUNNER = testinfra.utils.ansible_runner.AnsibleRunner(os.environ["MOLECULE_INVENTORY_FILE"])
testinfra_hosts = ["podman://" + h for h in RUNNER.get_hosts("runtime_containerd")]


def _table(dump, header):
    """The key lines of one table of `containerd config dump`, up to the next table header."""
    body = dump.split(header + "\n", 1)[1]
    return re.split(r"\n\s*\[", body, maxsplit=1)[0]


def test_containerd_dump_has_the_nvidia_runtime(host):
    dump = host.check_output("containerd config dump")
    assert '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]' in dump
    options = _table(dump, '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]')
    assert 'BinaryName = "/usr/bin/nvidia-container-runtime"' in options
    assert "SystemdCgroup = true" in options  # copied from the user's runc options
    runtime = _table(dump, '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]')
    assert 'runtime_type = "io.containerd.runc.v2"' in runtime
    # Not the default runtime (container_toolkit_default_runtime is false).
    assert 'default_runtime_name = "runc"' in dump


def test_containerd_keeps_the_user_settings(host):
    dump = host.check_output("containerd config dump")
    assert 'sandbox_image = "registry.example.com/pause:3.9"' in dump
    assert "oom_score = -999" in dump
    assert 'endpoint = ["https://mirror.example.com"]' in dump
    runc = _table(dump, '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]')
    assert "SystemdCgroup = true" in runc


def test_main_config_only_gained_the_import(host):
    user = host.file("/var/tmp/containerd-config.user.toml").content_string.splitlines()
    now = host.file("/etc/containerd/config.toml").content_string.splitlines()
    added = [line for line in now if line not in user]
    assert added == ['imports = ["/etc/containerd/conf.d/*.toml"]'], added
    assert [line for line in user if line not in now] == []


def test_dropin(host):
    dropin = host.file("/etc/containerd/conf.d/99-nvidia.toml")
    assert dropin.is_file and dropin.user == "root" and dropin.mode == 0o644
    text = dropin.content_string
    assert text.startswith("#")
    assert "version = 2" in text
    assert 'BinaryName = "/usr/bin/nvidia-container-runtime"' in text


def test_containerd_running_on_the_merged_config(host):
    assert host.service("containerd").is_running
