"""The signing tools' apt transaction killed with dpkg inside it, and the next run (after test_next_kernel.py).

On the Ubuntu DKMS node (Secure Boot signing on, its MOK key there): mokutil taken off, as on a node that never had
it, and molecule/maintenance_kill's TEST-ONLY package whose file trigger (on /usr/bin/mokutil here) holds dpkg once
(armed); the role's run is then killed (kill -9 of its process group, and apt and dpkg in the node, as a dropped SSH
session ends them) while dpkg is held inside the role's install of mokutil. dpkg is left interrupted with the role's record of that transaction: the
next run finishes it (dpkg --configure -a) and goes on, and mokutil is installed, dpkg's journal empty, the record gone.
"""
import json
import os
import subprocess

import pytest
import testinfra.utils.ansible_runner
from kill_run import kill_when_held

testinfra_hosts = ["podman://" + h for h in testinfra.utils.ansible_runner.AnsibleRunner(
    os.environ["MOLECULE_INVENTORY_FILE"]).get_hosts("all") if h.endswith("-ubuntu2404-dkms")]

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECORD = "/var/lib/baremetal-gpu/nvidia_driver/apt-transaction.json"
# TEST ONLY: molecule/maintenance_kill's dpkg trigger package, its trigger on /usr/bin/mokutil here; it holds dpkg
# once while armed.
BLOCKER_PLAYBOOK = os.path.join(HERE, "..", "maintenance_kill", "dpkg_blocker.yml")
ARMED = "/run/baremetal-gpu-test/dpkg-block-armed"
HOLDING = "/run/baremetal-gpu-test/dpkg-blocking"


def journal(host):
    return int(host.check_output("find /var/lib/dpkg/updates -regex '.*/[0-9]+' | wc -l"))


def playbook(path, name, *args, background=False):
    cmd = ["ansible-playbook", "-i", os.environ["MOLECULE_INVENTORY_FILE"], path, "--limit", name] + list(args)
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    if background:
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                                start_new_session=True)
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1200, check=False)
    return res.returncode, res.stdout + res.stderr


@pytest.fixture
def blocker(host):
    """The blocker installed (and mokutil taken off); purged after the test, so nothing of it stays on the node."""
    rc, out = playbook(BLOCKER_PLAYBOOK, host.backend.get_hostname(), "-e", "dpkg_blocker_interest=/usr/bin/mokutil")
    assert rc == 0, out[-3000:]
    host.run_expect([0], "mkdir -p %s && DEBIAN_FRONTEND=noninteractive apt-get purge -y -q mokutil >/dev/null"
                    % os.path.dirname(ARMED))
    yield
    host.run("rm -f %s %s; dpkg -P baremetal-gpu-test-dpkg-blocker; "
             "rm -rf /usr/local/src/baremetal-gpu-test-dpkg-blocker /usr/local/src/baremetal-gpu-test-dpkg-blocker.deb"
             % (ARMED, HOLDING))


def test_a_run_killed_inside_the_signing_tools_install_is_finished_by_the_next(host, blocker):
    name = host.backend.get_hostname()
    assert host.run("dpkg-query -W -f '${db:Status-Abbrev}' mokutil").stdout.strip() in ("", "pn", "un")
    host.run_expect([0], "touch %s" % ARMED)
    converge = os.path.join(HERE, "converge.yml")
    out = kill_when_held(host, playbook(converge, name, background=True), HOLDING, seconds=600)
    assert host.run("test -e %s" % HOLDING).rc == 0, "dpkg was never held in the install of mokutil:\n" + out[-3000:]
    assert "Record the signing tools' apt transaction before starting it" in out, out[-3000:]
    # What the dropped session does in the node: apt, dpkg and the held trigger die with it.
    host.run("pkill -9 -x apt-get; pkill -9 -x dpkg; pkill -9 -f baremetal-gpu-test-dpkg-blocker.postinst; "
             "pkill -9 -x sleep; rm -f %s" % HOLDING)
    assert journal(host) > 0, out[-3000:]
    record = json.loads(host.file(RECORD).content_string)
    assert record["install"] == ["mokutil"] and record["remove"] == [], record

    rc, out = playbook(converge, name)
    assert rc == 0, out[-4000:]
    assert "Finished the apt transaction an earlier run of this role started on %s" % name in " ".join(out.split()), \
        out[-4000:]
    assert host.run("dpkg-query -W -f '${db:Status-Abbrev}' mokutil").stdout.strip() == "ii"
    assert journal(host) == 0 and not host.file(RECORD).exists
