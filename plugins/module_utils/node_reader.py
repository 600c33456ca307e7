# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read Node objects through kubernetes.core's API client, with hard time limits and plain errors.

The connection (options, K8S_AUTH_* variables, kubeconfig, in-cluster config, impersonation) is
kubernetes.core's: ``get_api_client`` from ``kubernetes.core.plugins.module_utils.k8s.client``. What
this file adds:

- ``kubeconfig_secrets``: the secret values of a kubeconfig given as a dictionary, for
  ``no_log_values``, so that the option itself need not be ``no_log`` (with ``no_log`` the path of a
  kubeconfig file is masked as ``********`` in every message). kubernetes.core 6.2.0, the version
  this collection pins, still marks the whole option ``no_log``; 6.3.0 made the same change
  (ansible-collections/kubernetes.core#1014).
- ``time_limit``: a wall-clock limit on one API call, kept with SIGALRM. ``_request_timeout`` alone
  does not bound a call: urllib3 retries a read that timed out up to three times, and the discovery
  requests that ``get_api_client`` makes pass no timeout at all.
- ``NodeReader``: GET /api/v1/nodes[/<name>] as the plain JSON the API server returns, errors
  translated into ``K8sConnectionError`` with a ``kind`` and whether retrying can help.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib
import json
import signal
import traceback

from ansible.module_utils.basic import AnsibleModule

KUBERNETES_IMPORT_ERROR = None
try:
    import kubernetes
    import urllib3
    from kubernetes.client.rest import ApiException
    from kubernetes.dynamic.exceptions import DynamicApiError
except ImportError:
    KUBERNETES_IMPORT_ERROR = traceback.format_exc()
    ApiException = DynamicApiError = None  # pylint: disable=invalid-name

K8S_CONFIG = 'config'
K8S_UNREACHABLE = 'unreachable'
K8S_UNAUTHORIZED = 'unauthorized'
K8S_FORBIDDEN = 'forbidden'
K8S_NOT_FOUND = 'not_found'
K8S_API_ERROR = 'api_error'

# HTTP answers worth retrying: the API server (or a load balancer before it) is overloaded,
# restarting or not ready yet. Everything else (401, 403, 404, 400...) will not change by waiting.
RETRY_STATUSES = frozenset([429, 500, 502, 503, 504])

# Keys of a kubeconfig whose string values are secrets (users[].user, auth-provider config, exec env).
SECRET_KEYS = frozenset([
    'token', 'password', 'client-key-data', 'client-certificate-data', 'certificate-authority-data',
    'access-token', 'refresh-token', 'id-token', 'client-secret', 'secret', 'api_key',
])


class KubeModule(AnsibleModule):
    """An AnsibleModule that knows the secrets of a kubeconfig given as a dictionary before it logs its invocation.

    AnsibleModule.__init__ logs the invocation to the journal (or syslog) of the host it runs on, masking only the
    no_log options and the no_log_values known at that point: the token of a ``kubeconfig`` dictionary (an option
    that is not no_log, see ``kubeconfig_secrets``) would reach that journal. The secrets are added first.
    """

    def _log_invocation(self):
        self.no_log_values.update(kubeconfig_secrets(self.params.get('kubeconfig')))
        super(KubeModule, self)._log_invocation()


class K8sConnectionError(Exception):
    """The API could not be reached or refused us; ``kind`` is one of the K8S_* values."""

    def __init__(self, message, kind, status=None, retryable=False):
        super(K8sConnectionError, self).__init__(message)
        self.message = message
        self.kind = kind
        self.status = status
        self.retryable = retryable


class CallTimeout(Exception):
    """Raised by the SIGALRM handler of ``time_limit``."""


def kubeconfig_secrets(config):
    """Every secret string in a kubeconfig dictionary (see SECRET_KEYS); empty for a path or None."""
    found = set()

    def walk(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key in SECRET_KEYS and isinstance(value, str) and value:
                    found.add(value)
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    if isinstance(config, dict):
        walk(config)
    return found


@contextlib.contextmanager
def time_limit(seconds):
    """Raise CallTimeout in the block after ``seconds``; a no-op outside the main thread."""
    def expired(signum, frame):
        raise CallTimeout()

    try:
        previous = signal.signal(signal.SIGALRM, expired)
    except ValueError:  # not the main thread: signals cannot be used
        yield
        return
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _status_message(exc):
    try:
        body = exc.body.decode('utf-8') if isinstance(exc.body, bytes) else exc.body
        return json.loads(body).get('message') or exc.reason
    except (TypeError, ValueError, AttributeError):
        return exc.reason


def translate_api_exception(exc, what, host):
    """An ApiException (or kubernetes.dynamic DynamicApiError) as a K8sConnectionError."""
    message = _status_message(exc)
    if exc.status == 401:
        return K8sConnectionError('Kubernetes API at %s answered 401 Unauthorized reading %s (%s): the '
                                  'credentials (api_key, client certificate or kubeconfig user) were '
                                  'rejected' % (host, what, message), K8S_UNAUTHORIZED, 401)
    if exc.status == 403:
        return K8sConnectionError('Kubernetes API at %s answered 403 Forbidden reading %s (%s): the user '
                                  'needs get/list on nodes' % (host, what, message), K8S_FORBIDDEN, 403)
    if exc.status == 404:
        return K8sConnectionError('%s not found on the Kubernetes API at %s (%s)' % (what, host, message),
                                  K8S_NOT_FOUND, 404)
    if exc.status == 0 or exc.status is None:
        return K8sConnectionError('Kubernetes API at %s unreachable while reading %s: %s'
                                  % (host, what, message), K8S_UNREACHABLE, retryable=True)
    return K8sConnectionError('Kubernetes API at %s answered %s %s reading %s: %s'
                              % (host, exc.status, exc.reason, what, message), K8S_API_ERROR, exc.status,
                              retryable=exc.status in RETRY_STATUSES)


def guarded(what, host, limit, call):
    """``call()`` within ``limit`` seconds; every failure of the API becomes a K8sConnectionError."""
    try:
        with time_limit(limit):
            return call()
    except CallTimeout:
        raise K8sConnectionError('Kubernetes API at %s gave no answer within request_timeout (%s s) while reading %s'
                                 % (host, limit, what), K8S_UNREACHABLE, retryable=True)
    except (ApiException, DynamicApiError) as exc:
        raise translate_api_exception(exc, what, host)
    except urllib3.exceptions.HTTPError as exc:
        raise K8sConnectionError('Kubernetes API at %s unreachable while reading %s: %s' % (host, what, exc),
                                 K8S_UNREACHABLE, retryable=True)


class NodeReader(object):
    """Reads Node objects as the plain JSON dicts the API server returns.

    ``api_client`` is the kubernetes ``ApiClient`` of kubernetes.core's client
    (``get_api_client(module).client.client``).
    """

    def __init__(self, api_client, host, request_timeout):
        self.host = host
        self.request_timeout = request_timeout
        self.api = kubernetes.client.CoreV1Api(api_client)

    def read_node(self, name):
        return self._call('node %s' % name, self.api.read_node, name)

    def list_nodes(self, label_selector):
        return self._call('nodes with label selector %r' % label_selector, self.api.list_node,
                          label_selector=label_selector)['items'] or []

    def _call(self, what, func, *args, **kwargs):
        response = guarded(what, self.host, self.request_timeout,
                           lambda: func(*args, _preload_content=False, _request_timeout=self.request_timeout,
                                        **kwargs))
        try:
            return json.loads(response.data)
        except ValueError as exc:
            raise K8sConnectionError('Kubernetes API at %s returned a body that is not JSON for %s: %s'
                                     % (self.host, what, exc), K8S_API_ERROR, retryable=True)
