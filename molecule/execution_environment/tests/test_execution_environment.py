"""The execution environment built and run as AWX runs it: make ee, then a job in the EE.

Runs on the controller: the node is reached only over SSH from inside the EE container (its podman address,
the key prepare made, loaded by ansible-runner into an ssh-agent as AWX's machine credential is), never
through podman. The job runs with ansible-runner's process isolation in podman, as an AWX execution node
runs it (ansible-navigator, the same runner underneath, refuses to start here: it requires /dev/mqueue,
which this machine lacks). Not real here: AWX itself, a registry base image (the EE is built on the
project's own Debian 12 base, tests/ee/base), a GPU (the lab's settings: no GPU expected).
"""
import json
import os
import re
import shutil
import subprocess

import pytest
import testinfra.utils.ansible_runner
import yaml

ROOT = os.environ["BAREMETAL_ROOT"]
EPHEMERAL = os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]
NODES = testinfra.utils.ansible_runner.AnsibleRunner(os.environ["MOLECULE_INVENTORY_FILE"]).get_hosts("all")
# The controller-side checks run once, not once per node.
testinfra_hosts = ["local://"]


def _build_ee():
    proc = subprocess.run(["bash", os.path.join(ROOT, "scripts", "build-ee.sh")], cwd=ROOT, capture_output=True,
                          text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout.strip().splitlines()[-1], proc.stderr


@pytest.fixture(scope="module")
def ee():
    image, log = _build_ee()
    assert re.fullmatch(r"localhost/baremetal-gpu-ee:[0-9a-f]{12}", image), image
    return {"image": image, "log": log}


def _address(node):
    out = subprocess.run(["podman", "inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}",
                          node], capture_output=True, text=True, check=True).stdout.split()
    assert out, "node %s has no address on a podman network" % node
    return out[0]


def _private_data_dir(name, port=22):
    """What AWX hands ansible-runner for a job: a project (the playbook), an inventory, the machine credential's
    key (env/ssh_key: runner loads it into an ssh-agent inside the EE), the job template's options (env/cmdline)."""
    pdd = os.path.join(EPHEMERAL, name)
    shutil.rmtree(pdd, ignore_errors=True)
    for sub in ("project/reports", "inventory", "env"):
        os.makedirs(os.path.join(pdd, sub))
    shutil.copyfile(os.path.join(EPHEMERAL, "ee_ssh_key"), os.path.join(pdd, "env", "ssh_key"))
    os.chmod(os.path.join(pdd, "env", "ssh_key"), 0o600)
    hosts = {n: {"ansible_host": _address(n), "ansible_port": port} for n in NODES}
    inventory = {"all": {"children": {"gpu_nodes": {"hosts": hosts}, "k8s_control": {"hosts": {}}}, "vars": {
        "ansible_user": "root",
        "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null",
        "ansible_python_interpreter": "/usr/bin/python3",
        # The lab's settings, as the converge had them (molecule.yml).
        "preflight_require_gpu": False, "verify_expect_gpu": False, "nvidia_driver_reboot_enabled": False,
        # The project as the job sees it: ansible-runner mounts it at /runner/project, as AWX does.
        "preflight_report_dir": "/runner/project/reports"}}}
    with open(os.path.join(pdd, "inventory", "hosts.yml"), "w") as f:
        yaml.safe_dump(inventory, f)
    with open(os.path.join(pdd, "project", "site_ee.yml"), "w") as f:
        f.write("---\n# The collection's own playbooks, by FQCN from the EE's copy (as an AWX project would).\n"
                "- name: Preflight\n  ansible.builtin.import_playbook: baremetal.gpu.preflight\n"
                "- name: The host layer\n  ansible.builtin.import_playbook: baremetal.gpu.gpu_nodes\n")
    with open(os.path.join(pdd, "env", "cmdline"), "w") as f:
        f.write("--skip-tags nvidia_repo,rke2_nvidia_runtime")
    return pdd


def _run_in_ee(pdd, image):
    """ansible-runner with process isolation in the EE, as an AWX execution node runs a job."""
    cmd = ["ansible-runner", "run", pdd, "--playbook", "site_ee.yml", "--process-isolation",
           "--process-isolation-executable", "podman", "--container-image", image, "--ident", "job",
           # The EE's user is uid 1000; here podman runs as root and the job's files are root's (an AWX execution
           # node's rootless podman maps them to its own user instead): the job runs as root in the EE.
           "--container-option=--user=0"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    with open(os.path.join(pdd, "run.log"), "w") as f:
        f.write(proc.stdout + proc.stderr)
    return proc, re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr)


def _recap(output):
    recap = {}
    for line in output.split("PLAY RECAP")[-1].splitlines():
        m = re.match(r"^(\S+)\s+: (.*)$", line.strip())
        if m:
            recap[m.group(1)] = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(2))}
    return recap


def test_the_ee_runs_preflight_and_the_host_layer_over_ssh(ee):
    pdd = _private_data_dir("job")
    proc, out = _run_in_ee(pdd, ee["image"])
    assert proc.returncode == 0, out[-6000:]
    # Every play's recap: the provisioned node is reached and nothing changes (the converge did it all).
    recaps = [_recap("PLAY RECAP" + part) for part in out.split("PLAY RECAP")[1:]]
    assert recaps, out[-3000:]
    for node in NODES:
        seen = [r[node] for r in recaps if node in r]
        assert seen, "no recap for %s: %s" % (node, out[-3000:])
        for r in seen:
            assert r["failed"] == 0 and r["unreachable"] == 0, r
            assert r["changed"] == 0, (node, r, out[-6000:])
    # Preflight's report, written from inside the EE into the project directory (runner mounts it, as AWX does).
    with open(os.path.join(pdd, "project", "reports", "preflight.json")) as f:
        report = json.load(f)
    assert sorted(report["hosts"]) == sorted(NODES), report["hosts"].keys()


def test_the_ee_documents_the_collection(ee):
    proc = subprocess.run(["podman", "run", "--rm", ee["image"], "ansible-doc", "baremetal.gpu.nvidia_smi"],
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "baremetal.gpu.nvidia_smi" in proc.stdout and "nvidia-smi -q -x" in proc.stdout, proc.stdout[:2000]


def test_a_node_refusing_ssh_is_named_and_the_ee_is_not_built_again(ee):
    pdd = _private_data_dir("job-refused", port=1)
    proc, out = _run_in_ee(pdd, ee["image"])
    assert proc.returncode != 0, out[-3000:]
    for node in NODES:
        assert re.search(r"%s.*UNREACHABLE!.*Connection refused" % re.escape(node), out), out[-3000:]
        assert _recap(out)[node]["unreachable"] == 1, out[-3000:]
    image, log = _build_ee()
    assert image == ee["image"]
    assert "reusing %s" % image in log, log
