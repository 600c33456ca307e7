"""rke2_nvidia_runtime against a stand-in RKE2 that writes the real generated configs (tests/fixtures/rke2).

The tests run in file order and drive the role again (scenario_play.yml) through the other cases:
the "before" config must be refused with the file path, an RKE2 older than the auto-detection gets
exactly the template, and the template is removed again once RKE2 detects the runtime.
"""
import json
import os
import signal
import subprocess
import threading

import testinfra.utils.ansible_runner

INVENTORY = os.environ["MOLECULE_INVENTORY_FILE"]
testinfra_hosts = ["podman://" + h for h in testinfra.utils.ansible_runner.AnsibleRunner(INVENTORY).get_hosts("all")]

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(os.environ.get("MOLECULE_PROJECT_DIRECTORY", os.path.join(HERE, "..", "..")),
                        "tests", "fixtures", "rke2")
GENERATED = "/var/lib/rancher/rke2/agent/etc/containerd/config.toml"
TEMPLATE = "/var/lib/rancher/rke2/agent/etc/containerd/config.toml.tmpl"
SHARE = "/usr/local/share/fake-rke2"

EXPECTED_TEMPLATE = """{{ template "base" . }}

#
# Ansible managed
#
# baremetal.gpu.rke2_nvidia_runtime: RKE2 v1.21.14+rke2r1 does not detect the NVIDIA runtime
# itself, so this template adds it to RKE2's base template. Removed by the role once RKE2 detects it.
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes."nvidia"]
  runtime_type = "io.containerd.runc.v2"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes."nvidia".options]
  BinaryName = "/usr/bin/nvidia-container-runtime"
  SystemdCgroup = true
"""


def fixture(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as fh:
        return fh.read()


def play(extra_vars=None, *args, playbook="scenario_play.yml"):
    env = dict(os.environ, ANSIBLE_INJECT_FACT_VARS="false", ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    cmd = ["ansible-playbook", "-i", INVENTORY, os.path.join(HERE, playbook),
           "-e", json.dumps(extra_vars or {})] + list(args)
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, check=False)
    return res.returncode, res.stdout + res.stderr


def test_converge_left_the_after_config(host):
    # converge restarted the stand-in once: RKE2 rewrote its config with the nvidia runtime.
    assert host.file(GENERATED).content_string == fixture("config.toml.after")
    assert host.service("rke2-server").is_enabled
    # v1.24.9 detects the runtime itself: no template, no default-runtime option.
    assert not host.file(TEMPLATE).exists
    assert not host.file("/var/lib/rancher/rke2/agent/etc/containerd/config-v3.toml.tmpl").exists
    assert not host.file("/etc/rancher/rke2/config.yaml.d/50-baremetal-gpu-default-runtime.yaml").exists


def test_before_config_is_refused_with_the_path(host):
    # RKE2 that does not pick the runtime up: the generated file stays the "before" one.
    host.run_expect([0], "touch %s/no-detect && systemctl restart rke2-server" % SHARE)
    assert host.file(GENERATED).content_string == fixture("config.toml.before")
    rc, out = play({"rke2_nvidia_runtime_wait_timeout": 6})
    assert rc != 0, out[-3000:]
    assert "Verify | Fail when the nvidia runtime did not appear in time" in out
    assert GENERATED + " on rke2_nvidia_runtime-debian12 has no" in out, out[-3000:]
    assert "restarted" in out.lower()


def test_stale_binary_name_is_refused(host):
    # A generated config whose BinaryName points at a runtime that is not there (k3s-io/k3s#4391).
    host.run_expect([0], "rm -f %s/no-detect && sed 's#/usr/bin/nvidia-container-runtime#/usr/local/nvidia/toolkit/'"
                         "'nvidia-container-runtime#' %s/config.toml.after > %s" % (SHARE, SHARE, GENERATED))
    rc, out = play({"rke2_nvidia_runtime_wait_timeout": 6})
    assert rc != 0
    assert ('sets BinaryName = "/usr/local/nvidia/toolkit/nvidia-container-runtime" for the nvidia runtime, '
            'but that file does not exist') in out, out[-3000:]
    assert GENERATED in out
    host.run_expect([0], "systemctl restart rke2-server")


def test_old_rke2_gets_exactly_the_template(host, tmp_path):
    host.run_expect([0], "echo v1.21.14+rke2r1 > %s/version && touch %s/no-detect" % (SHARE, SHARE))
    rc, out = play()
    assert rc == 0, out[-4000:]
    tmpl = host.file(TEMPLATE)
    assert tmpl.content_string == EXPECTED_TEMPLATE
    assert tmpl.user == "root" and tmpl.mode == 0o600
    assert "Restarted rke2-server" in out
    # The stand-in rendered it with the real "before" config as base; containerd must accept the result.
    generated = host.file(GENERATED).content_string
    assert generated.startswith(fixture("config.toml.before"))
    path = tmp_path / "config.toml"
    path.write_text(generated)
    dump = subprocess.run(["containerd", "--config", str(path), "config", "dump"], capture_output=True, text=True,
                          check=False)
    assert dump.returncode == 0, dump.stderr
    assert 'BinaryName = "/usr/bin/nvidia-container-runtime"' in dump.stdout
    assert 'sandbox_image = "index.docker.io/rancher/pause:3.6"' in dump.stdout


def test_default_runtime_refused_on_old_rke2(host):
    # Preflight only: RKE2 v1.21.14 has no default-runtime option, and a template cannot set it.
    rc, out = play({"rke2_nvidia_runtime_default_runtime": True}, "--tags", "rke2_nvidia_runtime_preflight")
    assert rc != 0
    assert "no default-runtime option (needs v1.28.5 or later)" in out, out[-3000:]
    assert "duplicated" in out


def test_newer_rke2_drops_the_template_and_sets_the_default_runtime(host):
    # RKE2 that detects the runtime: the role's own template goes (it would define the nvidia table twice),
    # and the default runtime is RKE2's default-runtime option.
    host.run_expect([0], "echo v1.31.6+rke2r1 > %s/version && rm -f %s/no-detect" % (SHARE, SHARE))
    rc, out = play({"rke2_nvidia_runtime_default_runtime": True})
    assert rc == 0, out[-4000:]
    assert not host.file(TEMPLATE).exists
    assert host.file(GENERATED).content_string == fixture("config.toml.after")
    opt = host.file("/etc/rancher/rke2/config.yaml.d/50-baremetal-gpu-default-runtime.yaml")
    assert opt.user == "root" and opt.mode == 0o600
    assert "default-runtime: nvidia" in opt.content_string.splitlines()
    flat = " ".join(out.split())
    assert "the containerd template changed; the default-runtime option changed" in flat


def test_agent_node_restarts_the_agent_not_the_server(host):
    """Defect 14.1: both units installed, the agent enabled but not active yet (just after a reboot)."""
    host.run_expect([0], "systemctl disable --now rke2-server && systemctl enable rke2-agent && rm -f %s" % GENERATED)
    assert not host.service("rke2-agent").is_running and not host.service("rke2-server").is_running
    rc, out = play()
    assert rc == 0, out[-4000:]
    assert "Restarted rke2-agent" in out and "Restarted rke2-server" not in out, out[-4000:]
    assert "only rke2-agent is enabled" in " ".join(out.split())
    assert host.service("rke2-agent").is_running and not host.service("rke2-server").is_running


def test_unclear_service_is_refused_naming_the_variable(host):
    host.run_expect([0], "systemctl disable --now rke2-agent")
    rc, out = play({}, "--tags", "rke2_nvidia_runtime_preflight")
    flat = " ".join(out.split())
    assert rc != 0 and "is unclear" in flat and "Set rke2_nvidia_runtime_service to rke2-server or rke2-agent" in flat, out[-3000:]
    host.run_expect([0], "systemctl enable --now rke2-server")


def test_generated_config_version_4(host):
    """containerd 2.3 (RKE2 v1.36+): the runtime is read from the version 4 layout; a template is refused."""
    host.run_expect([0], "cp %s/config.toml.after %s/config.toml.v2 && cp %s/config-v4.toml.after %s/config.toml.after "
                         "&& echo v1.37.0+rke2r1 > %s/version && systemctl restart rke2-server" % ((SHARE,) * 5))
    rc, out = play()
    rc2, out2 = play({"rke2_nvidia_runtime_autodetect_min_version": "v9.0.0"}, "--tags", "rke2_nvidia_runtime_preflight")
    host.run_expect([0], "mv %s/config.toml.v2 %s/config.toml.after && echo v1.31.6+rke2r1 > %s/version "
                         "&& systemctl restart rke2-server" % ((SHARE,) * 3))
    assert rc == 0, out[-4000:]
    assert "has the nvidia runtime with BinaryName /usr/bin/nvidia-container-runtime" in " ".join(out.split())
    flat = " ".join(out2.split())
    assert rc2 != 0 and "is containerd config version 4 (containerd 2.3 and later)" in flat, out2[-3000:]
    assert "changed nothing" in flat


# ---- Kill tests: an RKE2 restart must not be lost when the run is killed -----------------------------
# The role records the restart a configuration change needs BEFORE making the change
# (/var/lib/baremetal-gpu/rke2_nvidia_runtime/restart-pending.json) and clears it after the restart. Each test
# kill -9s the whole ansible-playbook process group when a task starts (its line printed, plus a delay), then
# reruns: RKE2 must be restarted after the change, the record gone, and a further run must change nothing.
PENDING = "/var/lib/baremetal-gpu/rke2_nvidia_runtime/restart-pending.json"
DROPIN = "/etc/rancher/rke2/config.yaml.d/50-baremetal-gpu-default-runtime.yaml"
DECIDE = "TASK [baremetal.gpu.rke2_nvidia_runtime : Service | Decide whether RKE2 must restart"
RESTART = "TASK [baremetal.gpu.rke2_nvidia_runtime : Service | Restart RKE2"


def play_killed(extra_vars, marker, delay, playbook="scenario_play.yml"):
    """``playbook`` (scenario_play.yml), kill -9'd (process group) ``delay`` s after a line starting with ``marker``."""
    env = dict(os.environ, ANSIBLE_INJECT_FACT_VARS="false", ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    cmd = ["ansible-playbook", "-i", INVENTORY, os.path.join(HERE, playbook), "-e", json.dumps(extra_vars)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            start_new_session=True)
    lines, timer = [], None
    for line in proc.stdout:
        lines.append(line)
        if timer is None and line.startswith(marker):
            timer = threading.Timer(delay, os.killpg, (proc.pid, signal.SIGKILL))
            timer.start()
    rc = proc.wait(timeout=600)
    return rc, "".join(lines), timer is not None


def invocation(host):
    return host.run("systemctl show -p InvocationID --value rke2-server").stdout.strip()


def kill_then_rerun(host, extra_vars, marker, delay):
    before = invocation(host)
    rc, out, reached = play_killed(extra_vars, marker, delay)
    print("kill point: %r + %s s; run rc %s" % (marker, delay, rc))
    assert reached and rc == -signal.SIGKILL, out[-3000:]
    # The change was recorded before it was made; the record is still there after the kill.
    assert host.file(PENDING).exists, out[-3000:]
    state_at_kill = host.run("systemctl is-active rke2-server").stdout.strip()
    rc, out = play(extra_vars)
    assert rc == 0, out[-4000:]
    assert host.service("rke2-server").is_running
    assert invocation(host) != before, "RKE2 was not restarted after the killed run's change"
    assert not host.file(PENDING).exists
    rc, again = play(extra_vars)
    flat = " ".join(again.split())
    assert rc == 0 and "No restart:" in flat and "changed=0" in flat, again[-3000:]
    return state_at_kill, out


def test_kill_between_the_option_change_and_the_restart(host):
    """The default-runtime option written, RKE2 not restarted yet: the next run restarts it (from the record)."""
    assert not host.file(PENDING).exists
    host.run_expect([0], "rm -f %s && systemctl restart rke2-server" % DROPIN)
    before = invocation(host)
    rc, out, reached = play_killed({"rke2_nvidia_runtime_default_runtime": True}, DECIDE, 0)
    assert reached and rc == -signal.SIGKILL, out[-3000:]
    # Killed after the change and before the restart: the option is there, RKE2 still runs with the old one.
    assert host.file(DROPIN).exists and invocation(host) == before
    record = json.loads(host.file(PENDING).content_string)
    assert record["reasons"] == ["the default-runtime option changes"], record
    rc, out = play({"rke2_nvidia_runtime_default_runtime": True})
    flat = " ".join(out.split())
    assert rc == 0 and "a restart recorded by an earlier run that stopped before it" in flat, out[-4000:]
    assert invocation(host) != before and not host.file(PENDING).exists
    rc, again = play({"rke2_nvidia_runtime_default_runtime": True})
    assert rc == 0 and "No restart:" in " ".join(again.split()), again[-3000:]


def test_kill_during_the_restart(host):
    """Killed while systemd restarts RKE2 (the stand-in's stop takes 3 s): the next run restarts it again."""
    host.run_expect([0], "mkdir -p /etc/systemd/system/rke2-server.service.d && printf '[Service]\\nExecStopPost=/bin/sleep 3\\n'"
                         " > /etc/systemd/system/rke2-server.service.d/slow-stop.conf && systemctl daemon-reload")
    try:
        # The option goes again (the inventory without it): the removal needs a restart too.
        state, out = kill_then_rerun(host, {"rke2_nvidia_runtime_default_runtime": False}, RESTART, 1)
    finally:
        host.run("rm -rf /etc/systemd/system/rke2-server.service.d && systemctl daemon-reload")
    print("rke2-server when the run was killed: %s" % state)
    assert not host.file(DROPIN).exists
    assert "a restart recorded by an earlier run that stopped before it" in " ".join(out.split()), out[-4000:]


REMOVED = "TASK [baremetal.gpu.rke2_nvidia_runtime : Uninstall | Look at RKE2's config.yaml.d"


def test_kill_between_the_uninstalls_removal_and_the_restart(host):
    """The uninstall (its uninstall entry point) killed once its files are gone and before RKE2's restart: the restart
    was recorded before the removal, so the next uninstall, which finds nothing left to remove, still restarts RKE2
    (else it would keep a containerd config whose default runtime names a runtime about to go)."""
    rc, out = play({"rke2_nvidia_runtime_default_runtime": True})
    assert rc == 0 and host.file(DROPIN).exists, out[-3000:]
    assert not host.file(PENDING).exists
    before = invocation(host)
    rc, out, reached = play_killed({}, REMOVED, 0, playbook="uninstall_play.yml")
    assert reached and rc == -signal.SIGKILL, out[-3000:]
    assert not host.file(DROPIN).exists and invocation(host) == before, out[-3000:]
    assert json.loads(host.file(PENDING).content_string)["reasons"] == [
        "the files of rke2_nvidia_runtime are removed (uninstall)"]
    rc, out = play(playbook="uninstall_play.yml")
    flat = " ".join(out.split())
    assert rc == 0 and "a restart recorded by an earlier run that stopped before it" in flat, flat[-3000:]
    assert invocation(host) != before and host.service("rke2-server").is_running
    assert not host.file(PENDING).exists
    rc, out = play(playbook="uninstall_play.yml")
    flat = " ".join(out.split())
    assert rc == 0 and "Nothing of rke2_nvidia_runtime on this node" in flat and "changed=0" in flat, flat[-3000:]
