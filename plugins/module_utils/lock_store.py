# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where the maintenance lock lives: a coordination.k8s.io/v1 Lease, or a file on each node without a cluster.

Both stores answer get(), create(obj) and replace(obj) with plain Lease-shaped dicts, and raise
``maintenance.LockConflict`` when the write must not happen because someone else wrote first: for the
Lease, the API server's 409 (AlreadyExists on a create, Conflict on a replace whose
metadata.resourceVersion is stale); for the file, a resourceVersion other than the one stored (the file is
locked with flock for the whole read-decide-write, so only another writer that ignored the flock could
cause it). The decisions are in ``maintenance.lock_acquire`` and ``maintenance.lock_release``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fcntl
import json
import os
import time

from ansible_collections.baremetal.gpu.plugins.module_utils.maintenance_lease import LockConflict
from ansible_collections.baremetal.gpu.plugins.module_utils.node_reader import (
    ApiException,
    K8S_API_ERROR,
    K8sConnectionError,
    guarded,
)

try:
    import kubernetes
except ImportError:  # the module reports the missing library (node_reader.KUBERNETES_IMPORT_ERROR)
    kubernetes = None


class LeaseStore(object):
    """The Lease ``namespace``/``name`` through the kubernetes client (kubernetes.core's ApiClient).

    A call that fails in a way worth trying again (no answer within request_timeout, the API unreachable, 429, 500,
    502, 503, 504: node_reader.RETRY_STATUSES) is tried again after ``RETRY_DELAYS`` seconds, so that one blip of the
    API server (a control-plane restart, a load balancer switching over) does not end a rollout with its nodes out of
    service. Retrying a write is safe: a create or replace that did reach the server before the answer was lost is
    refused the second time with 409 (AlreadyExists, or Conflict on the now stale resourceVersion), which the lock's
    decisions read as "read the Lease again and decide", never as an overwrite."""

    RETRY_DELAYS = (1, 3, 6)

    def __init__(self, api_client, host, namespace, name, request_timeout, sleep=None):
        self.api = kubernetes.client.CoordinationV1Api(api_client)
        self.host = host
        self.namespace = namespace
        self.name = name
        self.request_timeout = request_timeout
        self.sleep = sleep or time.sleep
        self.retried = 0

    def _call(self, what, func, *args, **kwargs):
        def call():
            try:
                return func(*args, _preload_content=False, _request_timeout=self.request_timeout, **kwargs)
            except ApiException as exc:
                if exc.status == 409:
                    raise LockConflict(str(exc.reason))
                if exc.status == 404 and what.startswith('read'):
                    return None
                raise
        for attempt, delay in enumerate(self.RETRY_DELAYS + (None,)):
            try:
                response = guarded(what, self.host, self.request_timeout, call)
                break
            except K8sConnectionError as exc:
                if not exc.retryable or delay is None:
                    if attempt:
                        exc.message = '%s (tried %d times)' % (exc.message, attempt + 1)
                        exc.args = (exc.message,)
                    raise
                self.retried += 1
                self.sleep(delay)
        if response is None:
            return None
        try:
            return json.loads(response.data)
        except ValueError as exc:
            raise K8sConnectionError('Kubernetes API at %s returned a body that is not JSON for %s: %s'
                                     % (self.host, what, exc), K8S_API_ERROR, retryable=True)

    def get(self):
        return self._call('read lease %s/%s' % (self.namespace, self.name),
                          self.api.read_namespaced_lease, self.name, self.namespace)

    def create(self, obj):
        return self._call('create lease %s/%s' % (self.namespace, self.name),
                          self.api.create_namespaced_lease, self.namespace, obj)

    def replace(self, obj):
        return self._call('replace lease %s/%s' % (self.namespace, self.name),
                          self.api.replace_namespaced_lease, self.name, self.namespace, obj)


class FileStore(object):
    """A Lease-shaped JSON file (mode 0644: it holds no secret), locked with flock while open (use as a context
    manager). The resourceVersion is a counter kept in the file."""

    def __init__(self, path, name, namespace):
        self.path = path
        self.name = name
        self.namespace = namespace
        self.handle = None

    def __enter__(self):
        directory = os.path.dirname(self.path)
        if directory and not os.path.isdir(directory):
            os.makedirs(directory, 0o755)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        self.handle = os.fdopen(fd, 'r+')
        fcntl.flock(self.handle.fileno(), fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.handle.fileno(), fcntl.LOCK_UN)
        self.handle.close()
        self.handle = None
        return False

    def get(self):
        self.handle.seek(0)
        text = self.handle.read()
        if not text.strip():
            return None
        try:
            return json.loads(text)
        except ValueError:
            # A torn write (a kill in the middle): treated as no lock, and rewritten.
            return None

    def _write(self, obj, version):
        obj = json.loads(json.dumps(obj))
        obj['metadata']['resourceVersion'] = str(version)
        self.handle.seek(0)
        self.handle.truncate()
        self.handle.write(json.dumps(obj, indent=2, sort_keys=True) + '\n')
        self.handle.flush()
        os.fsync(self.handle.fileno())
        return obj

    def create(self, obj):
        if self.get() is not None:
            raise LockConflict('the lock file %s exists' % self.path)
        return self._write(obj, 1)

    def replace(self, obj):
        current = self.get()
        stored = ((current or {}).get('metadata') or {}).get('resourceVersion')
        wanted = (obj.get('metadata') or {}).get('resourceVersion')
        if current is None or str(stored) != str(wanted):
            raise LockConflict('the lock file %s changed since it was read' % self.path)
        return self._write(obj, int(stored or 0) + 1)
