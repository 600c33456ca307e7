"""container_toolkit driven again (scenario_play.yml) through the refusals and the failure cases.

Independent cases run on different nodes at the same time. Each refusal must fail in preflight and
change nothing (the recap's changed=0; the files are compared before and after).
"""
import os
import signal
import threading
import time

import pytest
import testinfra

from helpers import node, node_path, play, recap_changed
from running import logged_cri_config

DEB12, DEB13, NOBLE, DOCKER = node("debian12"), node("debian13"), node("ubuntu2404"), node("docker")
CONFIGURE = "container_toolkit_preflight,container_toolkit_configure"


def host(name):
    return testinfra.get_host("podman://" + name)


V4 = """version = 4
[plugins."io.containerd.server.v1.grpc"]
  address = "/run/containerd/containerd.sock"
[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
  SystemdCgroup = true
"""


@pytest.fixture(scope="module")
def refusals():
    """Three refusals at once, preflight only: config version 4, CDI on containerd 1.6, CDI on Docker 20.10."""
    noble, docker = host(NOBLE), host(DOCKER)
    noble.run_expect([0], "cp /etc/containerd/config.toml /var/tmp/config.keep && cat > /etc/containerd/config.toml <<'EOF'\n%sEOF" % V4)
    docker.run_expect([0], "printf '#!/bin/sh\\necho \"Docker version 20.10.24+dfsg1, build 5d6db84\"\\n' > /usr/local/bin/dockerd-20 "
                           "&& chmod 0755 /usr/local/bin/dockerd-20")
    before = {n: host(n).check_output("sha256sum /etc/containerd/config.toml /etc/containerd/conf.d/* /etc/docker/daemon.json 2>/dev/null; true")
              for n in (NOBLE, DEB12, DOCKER)}
    procs = {
        "v4": play(NOBLE, {}, "--tags", "container_toolkit_preflight", background=True),
        "cdi16": play(DEB12, {"container_toolkit_cdi_enabled": True}, "--tags", "container_toolkit_preflight", background=True),
        "docker20": play(DOCKER, {"container_toolkit_docker_binary": "/usr/local/bin/dockerd-20"},
                         "--tags", "container_toolkit_preflight", background=True),
        "name": play(DEB13, {"container_toolkit_runtime_name": "runc"}, "--tags", "container_toolkit_preflight", background=True),
    }
    out = {k: (p.wait(timeout=600), p.stdout.read()) for k, p in procs.items()}
    after = {n: host(n).check_output("sha256sum /etc/containerd/config.toml /etc/containerd/conf.d/* /etc/docker/daemon.json 2>/dev/null; true")
             for n in (NOBLE, DEB12, DOCKER)}
    noble.run_expect([0], "mv /var/tmp/config.keep /etc/containerd/config.toml")
    return out, before, after


def test_config_version_4_refused_before_any_change(refusals):
    out, before, after = refusals
    rc, text = out["v4"]
    assert rc != 0 and "config version 4 (containerd 2.3 and later)" in text, text[-3000:]
    assert "changes nothing" in text and "container_toolkit_runtime=none" in text
    assert recap_changed(text, NOBLE) == 0 and before[NOBLE] == after[NOBLE]


def test_cdi_refused_on_containerd_16(refusals):
    out, before, after = refusals
    rc, text = out["cdi16"]
    assert rc != 0 and "container_toolkit_cdi_enabled is true, but containerd 1.6.20 cannot read CDI specs" in text, text[-3000:]
    assert recap_changed(text, DEB12) == 0 and before[DEB12] == after[DEB12]


def test_cdi_refused_on_docker_without_cdi(refusals):
    out, before, after = refusals
    rc, text = out["docker20"]
    assert rc != 0 and "container_toolkit_cdi_enabled is true, but Docker 20.10.24" in text, text[-3000:]
    assert recap_changed(text, DOCKER) == 0 and before[DOCKER] == after[DOCKER]


def test_builtin_runtime_name_refused(refusals):
    out, _before, _after = refusals
    rc, text = out["name"]
    assert rc != 0 and "container_toolkit_runtime_name was removed" in text and '(got "runc")' in text, text[-3000:]


def test_spec_regenerated_after_a_driver_change_and_unreadable_version_refused():
    deb13 = host(DEB13)
    count = int(deb13.check_output("wc -l < /var/tmp/standin-nvidia-ctk.log"))
    # A driver install or upgrade: the driver library is newer than the spec.
    deb13.run_expect([0], "mkdir -p /usr/lib/x86_64-linux-gnu && sleep 1 && touch /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1")
    rc, text = play(DEB13, {}, "--tags", "container_toolkit_preflight,container_toolkit_cdi")
    assert rc == 0, text[-3000:]
    assert int(deb13.check_output("wc -l < /var/tmp/standin-nvidia-ctk.log")) == count + 1
    # A toolkit writing a spec version containerd 1.7.24's CDI library (0.8.0, Debian Built-Using) cannot read.
    deb13.run_expect([0], "echo 0.9.0 > /etc/standin-nvidia-ctk/spec-version && sleep 1 "
                          "&& touch /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1")
    rc, text = play(DEB13, {}, "--tags", "container_toolkit_preflight,container_toolkit_cdi")
    deb13.run_expect([0], "echo 0.5.0 > /etc/standin-nvidia-ctk/spec-version && rm /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1 "
                          "&& nvidia-ctk cdi generate --output=/var/run/cdi/nvidia.yaml")
    flat = " ".join(text.split())
    assert rc != 0 and "cannot read the CDI spec /var/run/cdi/nvidia.yaml" in flat, text[-3000:]
    assert "spec 0.9.0 is newer than 0.8.0, the newest its CDI library 0.8.0 reads" in flat
    assert "nvidia-container-toolkit#1940" in flat


def _killed_run():
    """Defect 14.5: a run killed after the config change and before the restart; the rerun restarts."""
    deb13 = host(DEB13)
    deb13.run_expect([0], "rm -f /etc/containerd/conf.d/99-nvidia.toml && systemctl restart containerd")
    pid = deb13.check_output("systemctl show -p MainPID --value containerd")
    dropin = node_path(DEB13, "/etc/containerd/conf.d/99-nvidia.toml")
    proc = play(DEB13, {}, "--tags", CONFIGURE, background=True)
    # Looked at every 10 ms from this machine (a command in the node per look took 0.35 s, and a loaded CI
    # machine let the run reach the restart in between), then the run's whole process group is killed.
    deadline = time.time() + 300
    while time.time() < deadline and not os.path.exists(dropin):
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert deb13.file("/etc/containerd/conf.d/99-nvidia.toml").exists
    assert deb13.check_output("systemctl show -p MainPID --value containerd") == pid, "killed too late: restarted already"
    rc, text = play(DEB13, {}, "--tags", CONFIGURE)
    assert rc == 0, text[-3000:]
    assert "newer than its start (a run stopped before the restart)" in " ".join(text.split()), text[-3000:]
    new_pid = deb13.check_output("systemctl show -p MainPID --value containerd")
    assert new_pid != pid
    assert "/usr/bin/nvidia-container-runtime" in logged_cri_config(deb13)


def _v2_config():
    noble = host(NOBLE)
    fixtures = os.path.join(os.environ["MOLECULE_PROJECT_DIRECTORY"], "tests", "fixtures", "containerd", "user")
    with open(os.path.join(fixtures, "v2-user.toml"), encoding="utf-8") as handle:
        v2 = handle.read()
    noble.run_expect([0], "cp /etc/containerd/config.toml /var/tmp/config.v3 && cat > /etc/containerd/config.toml <<'EOF'\n%sEOF" % v2)
    rc, text = play(NOBLE, {}, "--tags", CONFIGURE)
    dump = noble.check_output("containerd config dump")
    dropin = noble.file("/etc/containerd/conf.d/99-nvidia.toml").content_string
    noble.run_expect([0], "cp /var/tmp/config.v3 /etc/containerd/config.toml && rm /etc/containerd/conf.d/99-nvidia.toml")
    rc2, text2 = play(NOBLE, {}, "--tags", CONFIGURE)
    assert rc == 0, text[-3000:]
    assert "version = 2" in dropin and '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]' in dropin
    # containerd 2.2.1 migrated both files to version 3: the runtime and the user's settings are all there.
    assert "BinaryName = '/usr/bin/nvidia-container-runtime'" in dump
    assert "sandbox = 'registry.example.com/pause:3.9'" in dump and "oom_score = -999" in dump
    assert "endpoint = ['https://mirror.example.com']" in dump
    assert rc2 == 0, text2[-3000:]


@pytest.fixture(scope="module")
def parallel_cases():
    """The kill case (Debian 13) and the version 2 case (Ubuntu 24.04) at the same time; failures re-raised in the tests."""
    results = {}

    def run(name, func):
        try:
            func()
            results[name] = None
        except BaseException as exc:  # noqa: BLE001 - re-raised by the test below
            results[name] = exc

    threads = [threading.Thread(target=run, args=("kill", _killed_run)), threading.Thread(target=run, args=("v2", _v2_config))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def test_killed_run_is_finished_by_the_next_one(parallel_cases):
    if parallel_cases["kill"] is not None:
        raise parallel_cases["kill"]


def test_v2_config_that_containerd_2_migrates_keeps_its_settings(parallel_cases):
    if parallel_cases["v2"] is not None:
        raise parallel_cases["v2"]
