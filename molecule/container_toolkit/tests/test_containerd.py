"""container_toolkit on the containerd nodes (1.5.9, 1.6.20, 1.7.24, 2.2.1): the real binary's merged view."""
import json
import os

import testinfra.utils.ansible_runner

RUNNER = testinfra.utils.ansible_runner.AnsibleRunner(os.environ["MOLECULE_INVENTORY_FILE"])
testinfra_hosts = ["podman://" + h for h in RUNNER.get_hosts("runtime_containerd")]
BINARY = "/usr/bin/nvidia-container-runtime"


def cri(host):
    text = host.check_output("containerd config dump")
    version = host.check_output("containerd --version")
    return text, (" 2." in version)


def test_dump_has_the_nvidia_runtime_with_its_binary(host):
    text, v2 = cri(host)
    q = "'" if v2 else '"'
    plugin = "'io.containerd.cri.v1.runtime'" if v2 else '"io.containerd.grpc.v1.cri"'
    header = "[plugins.%s.containerd.runtimes.nvidia.options]" % plugin
    assert header in text, text[:3000]
    options = text.split(header, 1)[1].split("[", 1)[0]
    assert "BinaryName = %s%s%s" % (q, BINARY, q) in options
    runtime = text.split("[plugins.%s.containerd.runtimes.nvidia]" % plugin, 1)[1].split("[", 1)[0]
    assert "runtime_type = %sio.containerd.runc.v2%s" % (q, q) in runtime
    assert "default_runtime_name = %srunc%s" % (q, q) in text  # not the default runtime


def test_user_settings_kept(host):
    text, v2 = cri(host)
    user = host.file("/var/tmp/containerd-config.user.toml").content_string
    if "oom_score = -999" in user:
        assert "oom_score = -999" in text
        assert "registry.example.com/pause:3." in text
        plugin = "'io.containerd.cri.v1.runtime'" if v2 else '"io.containerd.grpc.v1.cri"'
        runc = text.split("[plugins.%s.containerd.runtimes.runc.options]" % plugin, 1)[1].split("[", 1)[0]
        assert "SystemdCgroup = true" in runc
        nvidia = text.split("[plugins.%s.containerd.runtimes.nvidia.options]" % plugin, 1)[1].split("[", 1)[0]
        assert "SystemdCgroup = true" in nvidia  # copied from the user's runc options
    else:  # Debian's packaged config (debian13)
        assert 'bin_dir = "/usr/lib/cni"' in text


def test_main_config_only_gained_the_import(host):
    user = host.file("/var/tmp/containerd-config.user.toml").content_string.splitlines()
    now = host.file("/etc/containerd/config.toml").content_string.splitlines()
    assert [line for line in now if line not in user] == ['imports = ["/etc/containerd/conf.d/*.toml"]']
    assert [line for line in user if line not in now] == []


def test_dropin(host):
    dropin = host.file("/etc/containerd/conf.d/99-nvidia.toml")
    assert dropin.is_file and dropin.user == "root" and dropin.mode == 0o644
    text = dropin.content_string
    assert text.startswith("#")
    version = host.check_output("containerd --version")
    if " 2." in version:
        # containerd 2 merges key by key: the drop-in holds only the runtime, in the main config's version.
        assert "version = 3" in text and "sandbox" not in text and "registry" not in text
    else:
        assert "version = 2" in text


def test_containerd_running_on_the_merged_config(host):
    assert host.service("containerd").is_running
    pid = host.check_output("systemctl show -p MainPID --value containerd")
    log = host.check_output("journalctl --no-pager _PID=%s" % pid)
    # The CRI plugin logs its configuration when it starts: the running containerd has the runtime.
    assert "nvidia" in log and BINARY in log, log[-2000:]


def test_facts(host):
    facts = json.loads(host.file("/var/tmp/container_toolkit_facts.json").content_string)
    assert facts["container_toolkit_changed"] is False
    cdi = facts["container_toolkit_cdi"]
    assert cdi["runtime"] == "containerd"
    if host.file("/usr/bin/nvidia-ctk").exists:
        assert cdi["enabled"] is True and cdi["spec_version"] == "0.5.0"
    else:
        assert cdi["enabled"] is False and cdi["requested"] is False
