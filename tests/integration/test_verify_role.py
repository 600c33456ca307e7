"""playbooks/verify.yml end to end on the controller, with stand-ins for what this machine lacks.

No GPU and no Kubernetes API exist here. So:
  - the GPU node is this machine (connection local) with a stand-in `nvidia-smi` that prints a real
    capture (tests/fixtures/nvidia-smi-xml: the GRID P4-1Q vGPU guest with one GPU; the A100 with
    MIG on and four MIG devices);
  - the API host is this machine too, with a kubeconfig pointing at the replay server of
    tests/unit/plugins/modules/k8s_replay.py, which answers with the recorded RKE2 node `nori`
    (tests/fixtures/k8s-nodes: nvidia.com/gpu capacity and allocatable 1, GFD labels, Ready);
  - Prometheus is a small HTTP server answering /api/v1/query in the shape of Prometheus's HTTP API
    (written by hand), with the label the support lookup names for the pinned dcgm-exporter.
The real playbook, role, modules, kubernetes client and kubernetes.core client run. Every role
variable is given with -e, as a string. The smoke-test pod needs a real cluster: it is switched off.
"""
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pytest
import yaml

from conftest import ROOT, ansible_env

sys.path.insert(0, os.path.join(ROOT, "tests", "unit", "plugins", "modules"))
from k8s_replay import ReplayServer, write_kubeconfig  # noqa: E402  pylint: disable=wrong-import-position

XML = os.path.join(ROOT, "tests", "fixtures", "nvidia-smi-xml")
NODES = os.path.join(ROOT, "tests", "fixtures", "k8s-nodes", "edgexr__rke2-vgpu-A16-4Q-nodes.json")
TOKEN = "verify-test-token"
PLAYBOOK = os.path.join(ROOT, "playbooks", "verify.yml")
sys.path.insert(0, os.path.join(ROOT, ".ansible", "collections"))
from ansible_collections.baremetal.gpu.plugins.module_utils import support  # noqa: E402  pylint: disable=wrong-import-position

NODE_LABEL = support.DCGM_EXPORTER["node_label"]


class FakePrometheus:
    """/api/v1/query answered with one series per node name given, labelled with the exporter's label."""

    def __init__(self, nodes):
        self.nodes = list(nodes)
        self.queries = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                url = urlparse(self.path)
                outer.queries.append(parse_qs(url.query).get("query", [""])[0])
                body = json.dumps({"status": "success", "data": {"resultType": "vector", "result": [
                    {"metric": {NODE_LABEL: node}, "value": [1767225600.0, "1"]} for node in outer.nodes]}})
                data = body.encode("utf-8")
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def api(tmp_path):
    server = ReplayServer(token=TOKEN).start()
    with open(NODES, encoding="utf-8") as handle:
        server.add_nodes(json.load(handle))
    yield server
    server.stop()


def run_verify(tmp_path, api, capture, prometheus_nodes, extra, playbook=PLAYBOOK, args=()):
    smi = tmp_path / "nvidia-smi"
    # Each run of the stand-in leaves a line in smi-runs: the tests count the nvidia-smi runs of a play.
    smi.write_text("#!/bin/sh\necho run >> %s\ncat %s\n" % (tmp_path / "smi-runs", os.path.join(XML, capture)))
    smi.chmod(0o755)
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", api.url, TOKEN)
    python = os.path.join(ROOT, ".venv", "bin", "python")
    inventory = {"all": {"children": {
        "gpu_nodes": {"hosts": {"gpu-node": {"ansible_connection": "local", "ansible_python_interpreter": python,
                                             "baremetal_gpu_node_name": "nori"}}},
        "k8s_control": {"hosts": {"api-host": {"ansible_connection": "local",
                                               "ansible_python_interpreter": python}}},
    }}}
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    prometheus = FakePrometheus(prometheus_nodes)
    evars = {
        "ansible_become": "false",
        "cluster_kubeconfig": kubeconfig,
        "verify_nvidia_smi_path": str(smi),
        "verify_nvidia_smi_timeout": "20",
        "verify_expect_gpu": "true",
        "verify_capacity_timeout": "2",
        "verify_smoke_test_enabled": "false",
        "verify_prometheus_url": prometheus.url + "/",
        "verify_prometheus_timeout": "0",
        # The GPU node is this controller: its kernels (if it has any in /boot) carry no NVIDIA module. The kernel
        # guard runs for real in molecule/nvidia_driver_next_kernel (a node that would boot a kernel without one).
        "verify_kernels_enabled": "false",
        # This controller has no /dev/nvidia*: the device-node check is on in its own test below.
        "verify_device_nodes_enabled": "false",
    }
    evars.update(extra)
    args = ["ansible-playbook", "-i", str(tmp_path / "hosts.yml"), playbook] + list(args)
    for key, value in evars.items():
        args += ["-e", "%s=%s" % (key, value)]
    env = ansible_env({"TMPDIR": str(tmp_path)})
    try:
        res = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300, check=False)
    finally:
        prometheus.stop()
    return res, res.stdout + res.stderr, prometheus


def test_one_gpu_node_verified_end_to_end(tmp_path, api):
    res, out, prometheus = run_verify(tmp_path, api, "telegraf__tesla_p4.xml", ["nori"],
                                      {"verify_gpu_count": "1", "verify_driver_branch": "513",
                                       "verify_capacity_replicas": "1"})
    assert res.returncode == 0, out[-4000:]
    assert "gpu-node: driver 513.46 (branch 513, CUDA 11.6), 1 GPU(s): GRID P4-1Q" in out
    assert "Cluster part runs on api-host" in out
    assert "nori (gpu-node): nvidia.com/gpu = 1 expected (1 x 1 replicas, MIG strategy none)" in out
    # the module read the recorded node through the replay server
    assert "/api/v1/nodes/nori" in api.node_requests()
    assert prometheus.queries == ["count by (%s) (DCGM_FI_DEV_GPU_TEMP)" % NODE_LABEL]
    assert "DCGM series present for nori" in out
    assert "failed=0" in out


def test_a_node_whose_gpus_show_without_their_device_nodes_fails_naming_them(tmp_path, api):
    """nvidia-smi (the stand-in) shows a GPU, but this machine has none of the device nodes a CUDA container needs:
    the run fails there, naming each (the unit tests of gpu_device_nodes cover the nodes being there)."""
    res, out, _prometheus = run_verify(tmp_path, api, "device__h100-80gb-hbm3__580.159.04.xml", ["nori"],
                                       {"verify_device_nodes_enabled": "true"})
    assert res.returncode != 0, out[-3000:]
    assert "missing: /dev/nvidiactl, /dev/nvidia-uvm, /dev/nvidia-uvm-tools, /dev/nvidia0" in out, out[-3000:]
    assert "nvidia-modprobe -u -c=0" in out


@pytest.mark.parametrize("tags, queries", [("verify", 1), ("verify_nvidia_smi,verify_capacity", 0)])
def test_the_verify_tags_run_the_cluster_part_too(tmp_path, api, tags, queries):
    """--tags verify and --tags verify_capacity (README: slices by tag) pick the API host as a run without tags does.
    Before the API-host pick became cluster_addons' api_host entry point (included with its tags applied, always),
    the include was tagged but its tasks were not, and not tagged verify_capacity at all: those slices ran no
    cluster check, and said nothing of it. (verify_capacity reads what the node part saw, hence verify_nvidia_smi
    with it; that slice makes no DCGM query.)"""
    res, out, prometheus = run_verify(tmp_path, api, "telegraf__tesla_p4.xml", ["nori"],
                                      {"verify_gpu_count": "1", "verify_driver_branch": "513",
                                       "verify_capacity_replicas": "1"}, args=["--tags", tags])
    assert res.returncode == 0, out[-4000:]
    assert "Cluster part runs on api-host" in out
    assert "/api/v1/nodes/nori" in api.node_requests()
    assert len(prometheus.queries) == queries, prometheus.queries


def site_like_playbook(tmp_path):
    """What site.yml does before verify.yml, reduced to the one part verify reads: a play that reads the GPUs once
    and publishes the reading as the fact nvidia_smi (as roles/nvidia_driver/tasks/verify-nvidia-smi.yml does),
    then verify.yml imported, as site.yml imports it. verify_nvidia_smi_path is left empty there."""
    path = tmp_path / "site-like.yml"
    path.write_text(yaml.safe_dump([
        {"name": "Read the GPUs once, as the nvidia_driver role does", "hosts": "gpu_nodes", "gather_facts": False,
         "tasks": [{"name": "Read", "baremetal.gpu.nvidia_smi": {"binary_path": str(tmp_path / "nvidia-smi"),
                                                                 "allow_no_gpu": True}, "register": "__read"},
                   {"name": "Publish", "ansible.builtin.set_fact": {"nvidia_smi": "{{ __read }}"}}]},
        {"ansible.builtin.import_playbook": PLAYBOOK}]))
    return str(path)


def test_verify_reads_this_runs_reading_instead_of_nvidia_smi_again(tmp_path, api):
    """Read once: in one run, verify checks the published reading; nvidia-smi ran once on the node."""
    res, out, prometheus = run_verify(tmp_path, api, "telegraf__tesla_p4.xml", ["nori"],
                                      {"verify_nvidia_smi_path": "", "verify_gpu_count": "1",
                                       "verify_driver_branch": "513", "verify_capacity_replicas": "1"},
                                      playbook=site_like_playbook(tmp_path))
    assert res.returncode == 0, out[-4000:]
    assert "gpu-node: driver 513.46 (branch 513, CUDA 11.6), 1 GPU(s): GRID P4-1Q" in out
    assert (tmp_path / "smi-runs").read_text().splitlines() == ["run"]
    assert "DCGM series present for nori" in out and len(prometheus.queries) == 1


def test_verify_checks_the_expectations_on_this_runs_reading(tmp_path, api):
    """The reading reused is held to verify_driver_branch and verify_gpu_count as the module holds its own."""
    res, out, prometheus = run_verify(tmp_path, api, "telegraf__tesla_p4.xml", ["nori"],
                                      {"verify_nvidia_smi_path": "", "verify_gpu_count": "2",
                                       "verify_driver_branch": "580"}, playbook=site_like_playbook(tmp_path))
    assert res.returncode != 0
    assert ("nvidia-smi on this node does not meet 2 expectation(s): driver_branch: expected 580, found 513; "
            "gpu_count: expected 2, found 1") in out
    assert (tmp_path / "smi-runs").read_text().splitlines() == ["run"]
    assert prometheus.queries == []


def test_mig_single_counts_mig_devices(tmp_path, api):
    # The A100 capture has MIG on with four MIG devices: with the single strategy the node must
    # advertise 4 nvidia.com/gpu; the recorded node advertises 1, so the capacity check fails, naming both.
    res, out, prometheus = run_verify(tmp_path, api, "telegraf__a100-sxm4-v12.xml", ["nori"],
                                      {"verify_mig_strategy": "single", "verify_capacity_gfd_labels": "false"})
    assert res.returncode != 0
    assert "nori (gpu-node): nvidia.com/gpu = 4 expected (4 x 1 replicas, MIG strategy single)" in out
    assert "node nori reports nvidia.com/gpu capacity 1, expected 4 after 2 s" in out
    assert prometheus.queries == []  # the play stopped at the failed capacity check


def test_replicas_derived_from_device_plugin_time_slicing(tmp_path, api):
    # verify_capacity_replicas defaults to null: derived from device_plugin_time_slicing_* (3 here), so the
    # one GPU must be advertised 3 times; the recorded node advertises 1, and the check names both.
    res, out, prometheus = run_verify(tmp_path, api, "telegraf__tesla_p4.xml", ["nori"],
                                      {"device_plugin_time_slicing_enabled": "true",
                                       "device_plugin_time_slicing_replicas": "3"})
    assert res.returncode != 0
    assert "nori (gpu-node): nvidia.com/gpu = 3 expected (1 x 3 replicas, MIG strategy none)" in out
    assert "node nori reports nvidia.com/gpu capacity 1, expected 3 after 2 s" in out
    assert prometheus.queries == []


def test_prometheus_without_the_node_fails(tmp_path, api):
    res, out, prometheus = run_verify(tmp_path, api, "telegraf__tesla_p4.xml", ["some-other-node"], {})
    assert res.returncode != 0
    assert "has no DCGM series (count by (%s) (DCGM_FI_DEV_GPU_TEMP)) for nori" % NODE_LABEL in out
    assert "found some-other-node" in out


def test_module_defaults_group_reaches_gpu_node_capacity(tmp_path, api):
    # meta/runtime.yml: group/baremetal.gpu.k8s = gpu_node_capacity + kubernetes.core's k8s group
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", api.url, TOKEN)
    (tmp_path / "play.yml").write_text(yaml.safe_dump([{
        "name": "module_defaults through the collection's k8s group",
        "hosts": "localhost",
        "gather_facts": False,
        "module_defaults": {"group/baremetal.gpu.k8s": {"kubeconfig": kubeconfig}},
        "tasks": [{"name": "Read nori with only the node name given",
                   "baremetal.gpu.gpu_node_capacity": {"name": "nori", "timeout": 0}}],
    }]))
    res = subprocess.run(["ansible-playbook", "-i", "localhost,", "-c", "local", str(tmp_path / "play.yml")],
                         capture_output=True, text=True, env=ansible_env({"TMPDIR": str(tmp_path)}), timeout=120,
                         check=False)
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    assert api.node_requests() == ["/api/v1/nodes/nori"]


POD_PLAY = """---
- name: The smoke-test pod verify would create
  hosts: localhost
  gather_facts: false
  tasks:
    - name: The role's defaults and variables, as the role loads them
      ansible.builtin.include_vars:
        file: "{{ item }}"
      loop: ["%(role)s/defaults/main.yml", "%(role)s/vars/main.yml"]
    - name: Write the pod
      ansible.builtin.copy:
        content: "{{ __verify_smoke_test_pod | to_json }}"
        dest: "{{ out }}"
        mode: "0600"
"""


@pytest.mark.parametrize("extra,image,secrets", [
    ({}, "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0", []),
    ({"cluster_addons_image_registry": "registry.site:5000/mirror", "cluster_addons_image_pull_secrets": "site-pull"},
     "registry.site:5000/mirror/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0", [{"name": "site-pull"}]),
    # An image the site names on its own registry is pulled as given.
    ({"cluster_addons_image_registry": "registry.site", "verify_smoke_test_image": "harbor.site/gpu/vectoradd:1"},
     "harbor.site/gpu/vectoradd:1", []),
    ({"cluster_addons_image_registry_map": '{"nvcr.io":"registry.site/nvcr"}'},
     "registry.site/nvcr/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0", []),
], ids=["public", "site registry", "own image wins", "per-source mapping"])
def test_smoke_test_pod_pulls_from_the_site_registry(tmp_path, extra, image, secrets):
    (tmp_path / "play.yml").write_text(POD_PLAY % {"role": os.path.join(ROOT, "roles", "verify")})
    args = ["ansible-playbook", "-i", "localhost,", "-c", "local", str(tmp_path / "play.yml"),
            "-e", "out=%s" % (tmp_path / "pod.json")]
    for key, value in extra.items():
        args += ["-e", "%s=%s" % (key, value)]
    res = subprocess.run(args, capture_output=True, text=True, env=ansible_env(), timeout=300, check=False)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    pod = json.loads((tmp_path / "pod.json").read_text())
    assert pod["spec"]["containers"][0]["image"] == image
    assert pod["spec"]["imagePullSecrets"] == secrets
