"""container_toolkit on the Docker node: daemon.json merged, not replaced."""
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
        "data-root": "/srv/docker",
        "runtimes": {"crun": {"path": "/usr/bin/crun"},
                     "nvidia": {"path": "/usr/bin/nvidia-container-runtime", "args": []}},
    }
    assert "default-runtime" not in data
