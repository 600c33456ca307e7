"""container_toolkit on the Docker node (Docker 26.1.5): daemon.json merged, not replaced; the cdi feature on."""
import json
import os

import testinfra.utils.ansible_runner

RUNNER = testinfra.utils.ansible_runner.AnsibleRunner(os.environ["MOLECULE_INVENTORY_FILE"])
testinfra_hosts = ["podman://" + h for h in RUNNER.get_hosts("runtime_docker")]


def test_daemon_json_merged_not_replaced(host):
    data = json.loads(host.file("/etc/docker/daemon.json").content_string)
    assert data == {
        "log-driver": "json-file",
        "log-opts": {"max-size": "10m", "max-file": "3"},
        "iptables": False, "ip6tables": False, "bridge": "none", "storage-driver": "vfs",
        "runtimes": {"crun": {"path": "/usr/bin/crun"},
                     "nvidia": {"path": "/usr/bin/nvidia-container-runtime", "args": []}},
        # Docker 26 reads CDI specs only with this feature (on by default from 28.2).
        "features": {"cdi": True},
    }


def test_docker_accepts_it_and_runs_on_it(host):
    host.run_expect([0], "dockerd --validate --config-file /etc/docker/daemon.json")
    assert host.service("docker").is_running
    started = host.check_output("systemctl show -p ActiveEnterTimestamp --value docker")
    assert started


def test_cdi_fact(host):
    facts = json.loads(host.file("/var/tmp/container_toolkit_facts.json").content_string)["container_toolkit_cdi"]
    assert facts["runtime"] == "docker" and facts["enabled"] is True
