"""Shared helpers of the container_toolkit verify tests: run the role again on chosen nodes."""
import json
import os
import subprocess
import tomllib

INVENTORY = os.environ["MOLECULE_INVENTORY_FILE"]
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROJECT = os.environ.get("MOLECULE_PROJECT_DIRECTORY", os.path.join(HERE, "..", ".."))
SCENARIO = os.environ.get("MOLECULE_SCENARIO_NAME", "container_toolkit")


def node(name):
    return "%s-%s" % (SCENARIO, name)


def play(limit, extra_vars=None, *args, background=False, skip_repo=True, playbook="scenario_play.yml"):
    """Run scenario_play.yml (or another playbook of the scenario) on `limit` with extra vars; (rc, output), or the
    Popen when background."""
    env = dict(os.environ, ANSIBLE_INJECT_FACT_VARS="false", ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    cmd = ["ansible-playbook", "-i", INVENTORY, os.path.join(HERE, playbook), "--limit", limit,
           "-e", json.dumps(extra_vars or {})] + (["--skip-tags", "nvidia_repo"] if skip_repo else []) + list(args)
    if background:
        # Its own process group, so that a test can kill the run with every worker and command it started.
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                                start_new_session=True)
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, check=False)
    return res.returncode, res.stdout + res.stderr


def node_path(name, path):
    """`path` inside the running node `name`, read from this machine (/proc/PID/root): no command per look."""
    pid = subprocess.run(["podman", "inspect", "-f", "{{.State.Pid}}", name], capture_output=True, text=True,
                         check=True).stdout.strip()
    return "/proc/%s/root%s" % (pid, path)


def recap_changed(out, host):
    for line in out.splitlines():
        if line.startswith(host) and "changed=" in line:
            return int(line.split("changed=")[1].split()[0])
    raise AssertionError("no recap for %s in:\n%s" % (host, out[-2000:]))


# The user's containerd config of the test (tests/fixtures/containerd/user/), as prepare.yml put it on the node.
USER_CONFIG = "/var/tmp/containerd-config.user.toml"


def registry_password(toml_text):
    """The first registry password in a containerd config (the CRI plugin's registry.configs), or ""."""
    configs = tomllib.loads(toml_text).get("plugins", {}).get("io.containerd.grpc.v1.cri", {}).get(
        "registry", {}).get("configs", {})
    return next((c["auth"]["password"] for c in configs.values() if "password" in c.get("auth", {})), "")
