# Copyright (c) baremetal.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""TEST ONLY: the connection the molecule scenarios use to reach their podman test nodes."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = """
name: podman_nsenter
short_description: TEST ONLY - run commands in a local rootful podman container through nsenter
description:
  - The molecule scenarios' test nodes are rootful podman containers on the same machine. The
    C(containers.podman.podman) connection starts two to four C(podman) processes per task and host
    (mount, exec of the temporary directory, exec of the module, cleanup), about 0.35 s each; this plugin
    enters the container's namespaces with C(nsenter) (a few milliseconds) and pipelines the module
    over standard input, as the ssh connection does on a real node.
  - What runs in the node is what C(podman exec) runs there - the container's namespaces (mount, UTS, IPC,
    network, PID), its root and working directory, its configured environment (C(podman inspect)
    C(.Config.Env)), uid 0, and its capability bounding set (C(.EffectiveCaps), applied by the node's own
    C(setpriv)), so a task cannot do on the test machine what it could not do through C(podman exec).
    Not applied, unlike C(podman exec) - the container's cgroup and seccomp profile.
  - Files are copied in and out through the node's own C(cat), inside its namespaces.
  - Each command runs in a session of its own, so killing ansible-playbook's process group leaves it
    running in the node, as with ssh or C(podman exec).
  - Lives in tests/ and is not part of the collection (galaxy.yml build_ignore).
options:
  remote_addr:
    description: The name of the podman container.
    default: inventory_hostname
    vars:
      - name: inventory_hostname
      - name: ansible_host
  pipelining:
    description: Send the module over standard input instead of copying it (always possible here).
    type: boolean
    default: true
    env:
      - name: ANSIBLE_PIPELINING
    vars:
      - name: ansible_pipelining
"""

import json
import os
import shlex
import subprocess

from ansible.errors import AnsibleConnectionFailure, AnsibleError
from ansible.module_utils.common.text.converters import to_bytes, to_native
from ansible.plugins.connection import ConnectionBase
from ansible.utils.display import Display

display = Display()

# Node metadata is cached per container in the controller's ANSIBLE_LOCAL_TEMP (each task runs in a new
# worker process), and trusted only while the container's init still carries the same container_uuid.
CACHE_DIR = os.environ.get("ANSIBLE_LOCAL_TEMP") or os.environ.get("TMPDIR") or "/tmp"


def _init_environ(pid):
    try:
        with open("/proc/%d/environ" % pid, "rb") as handle:
            return handle.read().split(b"\0")
    except OSError:
        return []


def node_info(name):
    """{"pid", "uuid", "env", "caps"} of the running container `name` (podman container inspect, cached)."""
    path = os.path.join(CACHE_DIR, "podman-nsenter-%s.json" % name.replace("/", "_"))
    try:
        with open(path, encoding="utf-8") as handle:
            node = json.load(handle)
        if to_bytes("container_uuid=%s" % node["uuid"]) in _init_environ(node["pid"]):
            return node
    except (OSError, ValueError, KeyError):
        pass
    proc = subprocess.run(["podman", "container", "inspect", name], capture_output=True, check=False)
    if proc.returncode != 0:
        raise AnsibleConnectionFailure("podman container inspect %s: %s" % (name, to_native(proc.stderr).strip()))
    data = json.loads(proc.stdout)[0]
    if not data["State"]["Running"]:
        raise AnsibleConnectionFailure("container %s is not running" % name)
    env = dict(item.split("=", 1) for item in data["Config"]["Env"])
    node = {
        "pid": data["State"]["Pid"],
        "uuid": env.get("container_uuid", ""),
        "env": env,
        "caps": [cap.lower().replace("cap_", "", 1) for cap in data.get("EffectiveCaps") or []],
    }
    tmp = "%s.%d" % (path, os.getpid())
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(node, handle)
    os.replace(tmp, path)
    return node


def node_argv(node, argv):
    """`argv` run in the node as `podman exec` runs it: its namespaces and root, its capability bounding set."""
    bounding = ",".join(["-all"] + ["+" + cap for cap in node["caps"]])
    return ["nsenter", "-t", str(node["pid"]), "-m", "-u", "-i", "-n", "-p", "-r", "-w",
            "setpriv", "--bounding-set", bounding, "--"] + list(argv)


class Connection(ConnectionBase):
    """nsenter into a local podman container (TEST ONLY)."""

    transport = "podman_nsenter"
    has_pipelining = True

    def __init__(self, *args, **kwargs):
        super(Connection, self).__init__(*args, **kwargs)
        self._node = None

    def _connect(self):
        super(Connection, self)._connect()
        if not self._connected:
            self._node = node_info(self.get_option("remote_addr"))
            self._connected = True
        return self

    def _run(self, argv, in_data=None):
        cmd = node_argv(self._node, argv)
        display.vvv("NSENTER %s" % argv, host=self.get_option("remote_addr"))
        # A session of its own, as a command run by sshd or `podman exec` is not in the controller's process
        # group: a test that kill -9s ansible-playbook's group leaves the node's command running, as on a
        # real node (it ends when it writes to the closed pipe, or finishes).
        proc = subprocess.run([to_bytes(a, errors="surrogate_or_strict") for a in cmd], input=in_data,
                              capture_output=True, env=self._node["env"], check=False, start_new_session=True)
        return proc.returncode, proc.stdout, proc.stderr

    def exec_command(self, cmd, in_data=None, sudoable=True):
        super(Connection, self).exec_command(cmd, in_data=in_data, sudoable=sudoable)
        return self._run(shlex.split(to_native(cmd, errors="surrogate_or_strict")), in_data)

    def put_file(self, in_path, out_path):
        super(Connection, self).put_file(in_path, out_path)
        with open(to_bytes(in_path, errors="surrogate_or_strict"), "rb") as handle:
            data = handle.read()
        rc, _out, err = self._run(["/bin/sh", "-c", 'cat > "$1"', "sh", out_path], data)
        if rc != 0:
            raise AnsibleError("failed to copy %s to %s: %s" % (in_path, out_path, to_native(err)))

    def fetch_file(self, in_path, out_path):
        super(Connection, self).fetch_file(in_path, out_path)
        rc, out, err = self._run(["cat", in_path])
        if rc != 0:
            raise AnsibleError("failed to fetch %s: %s" % (in_path, to_native(err)))
        with open(to_bytes(out_path, errors="surrogate_or_strict"), "wb") as handle:
            handle.write(out)

    def close(self):
        super(Connection, self).close()
        self._connected = False
