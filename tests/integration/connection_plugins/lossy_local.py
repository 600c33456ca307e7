# -*- coding: utf-8 -*-
"""TEST ONLY: the local connection, which loses its host the way a node that never came back from its reboot is lost.

Once the file <BAREMETAL_TEST_LOST_DIR>/<host>.lost exists (a stand-in creates it, e.g. the stand-in nvidia-smi of
tests/integration/conftest.py when it resets a GPU), every command, upload and download for that host fails with
AnsibleConnectionFailure, which Ansible reports as UNREACHABLE, exactly as ssh does for a host that does not answer.
"""
from __future__ import annotations

DOCUMENTATION = """
    name: lossy_local
    short_description: TEST ONLY - local connection that becomes unreachable once a marker file exists
    description:
        - The local connection; once C(<BAREMETAL_TEST_LOST_DIR>/<host>.lost) exists, the host is unreachable.
    author: baremetal.gpu tests
    extends_documentation_fragment:
        - connection_pipelining
    notes:
        - Used only by tests/integration.
"""

import os

from ansible.errors import AnsibleConnectionFailure
from ansible.plugins.connection.local import Connection as LocalConnection


class Connection(LocalConnection):
    """The local connection, lost once the host's marker file exists."""

    transport = 'lossy_local'

    def _lost(self):
        directory = os.environ.get('BAREMETAL_TEST_LOST_DIR', '')
        host = self._play_context.remote_addr or ''
        if directory and os.path.exists(os.path.join(directory, '%s.lost' % host)):
            raise AnsibleConnectionFailure('TEST ONLY: %s does not answer (the lossy_local stand-in lost it)' % host)

    def exec_command(self, cmd, in_data=None, sudoable=True):
        self._lost()
        return super().exec_command(cmd, in_data=in_data, sudoable=sudoable)

    def put_file(self, in_path, out_path):
        self._lost()
        return super().put_file(in_path, out_path)

    def fetch_file(self, in_path, out_path):
        self._lost()
        return super().fetch_file(in_path, out_path)
