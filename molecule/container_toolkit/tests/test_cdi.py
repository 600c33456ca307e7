"""CDI on the containerd 1.7 and 2.2 nodes and on Docker 26: the spec (from the stand-in nvidia-ctk), the
engine configured to read its directory, and the real containerd's own record of that configuration.

What the stand-in covers: it answers `--version` and writes a real CDI spec file. The real toolkit's spec
content (the node's GPUs and driver files) is NOT tested here.
"""
import json
import os

import testinfra.utils.ansible_runner

RUNNER = testinfra.utils.ansible_runner.AnsibleRunner(os.environ["MOLECULE_INVENTORY_FILE"])
testinfra_hosts = ["podman://" + h for h in RUNNER.get_hosts("cdi_on")]
SPEC = "/var/run/cdi/nvidia.yaml"


def test_spec_written(host):
    spec = host.file(SPEC)
    assert spec.is_file
    assert 'cdiVersion: "0.5.0"' in spec.content_string and "kind: nvidia.com/gpu" in spec.content_string
    facts = json.loads(host.file("/var/tmp/container_toolkit_facts.json").content_string)["container_toolkit_cdi"]
    assert facts["enabled"] is True and facts["spec_file"] == SPEC and facts["spec_version"] == "0.5.0"
    toolkit = host.file("/etc/standin-nvidia-ctk/version").content_string.strip()
    assert facts["toolkit_version"] == toolkit
    if toolkit >= "1.18":
        assert facts["refresh"] == "nvidia-cdi-refresh"
        assert host.service("nvidia-cdi-refresh.path").is_enabled and host.service("nvidia-cdi-refresh.path").is_running
        assert host.service("nvidia-cdi-refresh.service").is_enabled
    else:
        assert facts["refresh"] == "nvidia-ctk cdi generate (by this role)"
