# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A small Kubernetes API stand-in on 127.0.0.1 that replays recorded Node objects.

It answers the requests gpu_node_capacity makes, as the API server does:
``GET /api/v1/nodes/<name>`` (one Node) and ``GET /api/v1/nodes?labelSelector=...`` (a NodeList),
from recorded ``kubectl get nodes -o json`` output (tests/fixtures/k8s-nodes); and the discovery
that kubernetes.core's client reads when it connects (``/version``, ``/api``, ``/apis``), in the
shapes of the API conventions (written by hand: no recording of them is at hand), with the version
of the recorded node's kubelet. A node may have a timeline: a list of Node objects served one per
request, the last one repeating. ``failures`` is a queue of HTTP codes answered, with the API
server's Status body, to the next node requests instead of the nodes (503 while an API server
starts); ``delay`` holds every answer that many seconds (an API that does not answer).
Requests without the expected bearer token get the API server's 401 Status; unknown nodes its
404 Status. Everything the client sends is recorded for assertions (header names in lower case).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import threading
import time

from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

# metav1.Status bodies in the shape the API server sends (written from the API conventions;
# the recorded fixtures contain Node lists only).
STATUS_UNAUTHORIZED = {'kind': 'Status', 'apiVersion': 'v1', 'metadata': {}, 'status': 'Failure',
                       'message': 'Unauthorized', 'reason': 'Unauthorized', 'code': 401}


def status(code, reason, message, details=None):
    """A metav1.Status body as the API server sends it."""
    body = {'kind': 'Status', 'apiVersion': 'v1', 'metadata': {}, 'status': 'Success' if code < 300 else 'Failure',
            'message': message, 'reason': reason, 'code': code}
    if details:
        body['details'] = details
    return body


def status_not_found(name):
    return {'kind': 'Status', 'apiVersion': 'v1', 'metadata': {}, 'status': 'Failure',
            'message': 'nodes "%s" not found' % name, 'reason': 'NotFound',
            'details': {'name': name, 'kind': 'nodes'}, 'code': 404}


def status_forbidden(name):
    return {'kind': 'Status', 'apiVersion': 'v1', 'metadata': {}, 'status': 'Failure',
            'message': 'nodes "%s" is forbidden: User "system:serviceaccount:default:reader" cannot get '
                       'resource "nodes" in API group "" at the cluster scope' % name,
            'reason': 'Forbidden', 'details': {'name': name, 'kind': 'nodes'}, 'code': 403}


def status_failure(code):
    """The Status an API server (or its load balancer, as JSON) sends with a 429 or 5xx answer."""
    reasons = {429: 'TooManyRequests', 500: 'InternalError', 502: 'BadGateway', 503: 'ServiceUnavailable',
               504: 'Timeout'}
    messages = {503: 'the server is currently unable to handle the request', 429: 'Too many requests, please '
                'try again later.', 500: 'Internal error occurred: etcdserver: leader changed'}
    return status(code, reasons.get(code, 'InternalError'), messages.get(code, 'error'))


def discovery(path, version):
    """/version, /api and /apis for a cluster that serves only the core group (enough for Nodes)."""
    if path == '/version':
        major, minor = version.lstrip('v').split('.')[:2]
        return {'major': major, 'minor': minor, 'gitVersion': version, 'gitCommit': '', 'gitTreeState': 'clean',
                'buildDate': '2025-02-13T00:00:00Z', 'goVersion': 'go1.23.6', 'compiler': 'gc',
                'platform': 'linux/amd64'}
    if path == '/api':
        return {'kind': 'APIVersions', 'versions': ['v1'],
                'serverAddressByClientCIDRs': [{'clientCIDR': '0.0.0.0/0', 'serverAddress': '127.0.0.1:6443'}]}
    if path == '/apis':
        return {'kind': 'APIGroupList', 'apiVersion': 'v1', 'groups': []}
    return None


def selector_matches(selector, labels):
    """Equality-based label selectors: k=v, k==v, k!=v, k, !k (comma = and)."""
    for term in [t.strip() for t in (selector or '').split(',') if t.strip()]:
        if '!=' in term:
            key, value = term.split('!=', 1)
            if labels.get(key.strip()) == value.strip():
                return False
        elif '=' in term:
            key, value = term.replace('==', '=').split('=', 1)
            if labels.get(key.strip()) != value.strip():
                return False
        elif term.startswith('!'):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    return True


def label_selector_matches(selector, labels):
    """Kubernetes LabelSelector semantics (matchLabels, matchExpressions with In, NotIn, Exists, DoesNotExist; a
    node affinity's term has the same matchExpressions); ``None`` matches nothing, ``{}`` matches everything."""
    if selector is None:
        return False
    labels = labels or {}
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


class JsonHandler(BaseHTTPRequestHandler):
    """The request handler every API stand-in of the tests builds on: quiet, JSON in and out."""

    def log_message(self, *args):  # keep pytest output clean
        pass

    def _send(self, code, body):
        data = json.dumps(body).encode('utf-8')
        self.send_response(code)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self, empty=None):
        length = int(self.headers.get('Content-Length') or 0)
        return json.loads(self.rfile.read(length) or b'null') if length else empty


class LocalServer(object):
    """An HTTP server on 127.0.0.1 (a free port unless given) in a daemon thread; usable with ``with``."""

    def __init__(self, handler, port=0):
        self.lock = threading.Lock()
        self.requests = []
        ThreadingHTTPServer.allow_reuse_address = True
        self.httpd = ThreadingHTTPServer(('127.0.0.1', port), handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = 'http://127.0.0.1:%d' % self.port
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={'poll_interval': 0.05})
        self.thread.daemon = True

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


class ReplayServer(LocalServer):
    def __init__(self, token='test-token', port=0):
        self.token = token
        self.timelines = {}   # name -> [Node dict, ...]
        self.served = {}      # name -> how many times served
        self.forbidden = False  # answer 403 (RBAC denies the user) to authenticated requests
        self.failures = []    # HTTP codes for the next node requests (429, 500, 503, ...)
        self.delay = 0.0      # seconds every answer is held back
        self.version = 'v1.31.6+rke2r1'
        super(ReplayServer, self).__init__(self._handler(), port)
        self.requests = []    # (method, path, headers dict)

    def add_nodes(self, node_list):
        for node in node_list['items']:
            self.timelines[node['metadata']['name']] = [node]
            self.version = node['status']['nodeInfo']['kubeletVersion']

    def node_requests(self):
        return [path for method, path, headers in self.requests if path.startswith('/api/v1/nodes')]

    def set_timeline(self, name, nodes):
        self.timelines[name] = list(nodes)

    def _next(self, name):
        timeline = self.timelines[name]
        count = self.served.get(name, 0)
        self.served[name] = count + 1
        return timeline[min(count, len(timeline) - 1)]

    def _handler(self):
        server = self

        class Handler(JsonHandler):
            def do_GET(self):
                url = urlparse(self.path)
                if server.delay:
                    time.sleep(server.delay)
                with server.lock:
                    server.requests.append(('GET', self.path, dict((k.lower(), v) for k, v in self.headers.items())))
                    if self.headers.get('Authorization') != 'Bearer %s' % server.token:
                        return self._send(401, STATUS_UNAUTHORIZED)
                    found = discovery(url.path, server.version)
                    if found is not None:
                        return self._send(200, found)
                    if server.forbidden:
                        return self._send(403, status_forbidden(url.path.rsplit('/', 1)[-1]))
                    if server.failures and url.path.startswith('/api/v1/nodes'):
                        code = server.failures.pop(0)
                        return self._send(code, status_failure(code))
                    if url.path == '/api/v1/nodes':
                        selector = parse_qs(url.query).get('labelSelector', [''])[0]
                        items = [server._next(name) for name in sorted(server.timelines)]
                        items = [n for n in items if selector_matches(selector, n['metadata'].get('labels') or {})]
                        return self._send(200, {'kind': 'NodeList', 'apiVersion': 'v1',
                                                'metadata': {'resourceVersion': '1'}, 'items': items})
                    if url.path.startswith('/api/v1/nodes/'):
                        name = url.path[len('/api/v1/nodes/'):]
                        if name not in server.timelines:
                            return self._send(404, status_not_found(name))
                        return self._send(200, server._next(name))
                    return self._send(404, {'kind': 'Status', 'apiVersion': 'v1', 'metadata': {},
                                            'status': 'Failure', 'message': 'the server could not find the '
                                            'requested resource', 'reason': 'NotFound', 'code': 404})

        return Handler


def write_kubeconfig(path, server_url, token, name='replay'):
    """A kubeconfig (JSON is valid YAML) pointing at ``server_url`` with a bearer token."""
    config = {
        'apiVersion': 'v1', 'kind': 'Config', 'current-context': name, 'preferences': {},
        'clusters': [{'name': name, 'cluster': {'server': server_url}}],
        'users': [{'name': name + '-user', 'user': {'token': token}}],
        'contexts': [{'name': name, 'context': {'cluster': name, 'user': name + '-user'}},
                     {'name': 'other', 'context': {'cluster': name, 'user': name + '-user'}}],
    }
    with open(str(path), 'w') as handle:
        json.dump(config, handle)
    return str(path)
