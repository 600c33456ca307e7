# Copyright (c) baremetal.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""TEST ONLY: pytest plugin (-p podman_nsenter_testinfra) for the molecule verify steps.

Testinfra's podman:// backend runs every command through `podman exec` (about 0.35 s each); this plugin
makes it run the same command the way connection/podman_nsenter.py does for Ansible: the container's
namespaces, root, configured environment and capability bounding set, through nsenter (milliseconds).
The tests still name their hosts podman://NODE; only the transport changes.
"""
import importlib.util
import os
import shlex

from testinfra.backend import podman

_SPEC = importlib.util.spec_from_file_location(
    "baremetal_podman_nsenter", os.path.join(os.path.dirname(os.path.abspath(__file__)), "connection", "podman_nsenter.py"))
_PLUGIN = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(_PLUGIN)


def _run(self, command, *args, **kwargs):
    if self.user is not None:
        return _ORIGINAL_RUN(self, command, *args, **kwargs)
    cmd = self.get_command(command, *args)
    node = _PLUGIN.node_info(self.name)
    env = ["env", "-i"] + ["%s=%s" % item for item in sorted(node["env"].items())]
    argv = _PLUGIN.node_argv(node, env + ["/bin/sh", "-c", cmd])
    out = self.run_local(" ".join(shlex.quote(a) for a in argv))
    out.command = self.encode(cmd)
    return out


_ORIGINAL_RUN = podman.PodmanBackend.run
podman.PodmanBackend.run = _run
