"""container_toolkit on the containerd nodes (1.5.9, 1.6.20, 1.7.24, 2.2.1): the real binary's merged view."""
import json
import os
import tomllib

import pytest
import testinfra.utils.ansible_runner

from helpers import USER_CONFIG, registry_password
from running import cri_plugin_ok, logged_cri_config, started_after_its_config

RUNNER = testinfra.utils.ansible_runner.AnsibleRunner(os.environ["MOLECULE_INVENTORY_FILE"])
testinfra_hosts = ["podman://" + h for h in RUNNER.get_hosts("runtime_containerd")]
BINARY = "/usr/bin/nvidia-container-runtime"


def cri(host):
    """The CRI runtime plugin table of the real `containerd config dump` (parsed here with tomllib)."""
    dump = tomllib.loads(host.check_output("containerd config dump"))
    plugins = dump["plugins"]
    table = plugins.get("io.containerd.cri.v1.runtime") or plugins["io.containerd.grpc.v1.cri"]
    return dump, table


def test_dump_has_the_nvidia_runtime_with_its_binary(host):
    _dump, table = cri(host)
    runtimes = table["containerd"]["runtimes"]
    assert runtimes["nvidia"]["runtime_type"] == "io.containerd.runc.v2"
    assert runtimes["nvidia"]["options"]["BinaryName"] == BINARY
    assert table["containerd"]["default_runtime_name"] == "runc"  # not the default runtime


def test_user_settings_kept(host):
    dump, table = cri(host)
    user = host.file("/var/tmp/containerd-config.user.toml").content_string
    if "oom_score = -999" in user:
        assert dump["oom_score"] == -999
        images = dump["plugins"].get("io.containerd.cri.v1.images")
        sandbox = images["pinned_images"]["sandbox"] if images else dump["plugins"]["io.containerd.grpc.v1.cri"]["sandbox_image"]
        assert sandbox.startswith("registry.example.com/pause:3.")
        runtimes = table["containerd"]["runtimes"]
        assert runtimes["runc"]["options"]["SystemdCgroup"] is True
        assert runtimes["nvidia"]["options"]["SystemdCgroup"] is True  # copied from the user's runc options
    else:  # Debian's packaged config (debian13)
        assert table["cni"]["bin_dir"] == "/usr/lib/cni"


def test_main_config_only_gained_the_import(host):
    user = host.file("/var/tmp/containerd-config.user.toml").content_string.splitlines()
    now = host.file("/etc/containerd/config.toml").content_string.splitlines()
    assert [line for line in now if line not in user] == ['imports = ["/etc/containerd/conf.d/*.toml"]']
    assert [line for line in user if line not in now] == []


def test_dropin(host):
    dropin = host.file("/etc/containerd/conf.d/99-nvidia.toml")
    text = dropin.content_string
    assert text.startswith("#")
    if " 2." in host.check_output("containerd --version"):
        # containerd 2 merges key by key: the drop-in holds only the runtime, in the main config's version.
        assert "version = 3" in text and "sandbox" not in text and "registry" not in text
        assert dropin.mode == 0o644
    else:
        assert "version = 2" in text
        # containerd 1.x: the drop-in carries the user's whole CRI table, registry credentials included (the
        # debian12 node's config has some): then it is 0600, and so is the main config that holds them.
        password = registry_password(host.file(USER_CONFIG).content_string)
        assert dropin.mode == (0o600 if password else 0o644), oct(dropin.mode)
        if password:
            assert password in text
            assert host.file("/etc/containerd/config.toml").mode == 0o600
    assert dropin.is_file and dropin.user == "root"


def test_registry_credentials_still_reach_containerd(host):
    password = registry_password(host.file(USER_CONFIG).content_string)
    if not password:
        pytest.skip("this node's user config has no registry credentials (debian12's has)")
    _dump, table = cri(host)
    assert table["registry"]["configs"]["registry.example.com"]["auth"]["password"] == password


def test_containerd_running_on_the_merged_config(host):
    assert host.service("containerd").is_running
    assert started_after_its_config(host)
    assert cri_plugin_ok(host), host.check_output("ctr plugins ls")
    # The CRI configuration the running containerd logged: the runtime with its binary.
    config = logged_cri_config(host)
    assert "nvidia" in config and BINARY in config, config[-3000:]


def test_facts(host):
    facts = json.loads(host.file("/var/tmp/container_toolkit_facts.json").content_string)
    assert facts["container_toolkit_changed"] is False
    cdi = facts["container_toolkit_cdi"]
    assert cdi["runtime"] == "containerd"
    if host.file("/usr/bin/nvidia-ctk").exists:
        assert cdi["enabled"] is True and cdi["spec_version"] == "0.5.0"
    else:
        assert cdi["enabled"] is False and cdi["requested"] is False
