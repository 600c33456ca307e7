"""A stateful Kubernetes API double on 127.0.0.1, for the cluster steps of the day-2 playbooks.

No Kubernetes API can run here. This double answers, from Node objects recorded from a real RKE2
cluster (tests/fixtures/k8s-nodes) and Pod objects written in the tests, the requests that
kubernetes.core's modules (k8s_info, k8s, k8s_drain) and baremetal.gpu.gpu_node_capacity make:

- discovery: GET /version, /api, /apis, /api/v1 (the core group's resource list, written from the
  Kubernetes API reference: nodes, pods, pods/eviction);
- GET and PATCH /api/v1/nodes[/<name>] (strategic merge patch of plain maps: a null deletes a key;
  applied to the stored Node, as the API server would for the fields these playbooks touch); every write
  bumps metadata.resourceVersion, and a PATCH or PUT that carries a stale metadata.resourceVersion is
  refused with 409 Conflict, as the API server does (optimistic concurrency); a PATCH with ?dryRun=All (what
  kubernetes.core sends in check mode) answers the patched Node and stores nothing, as the API server does;
- coordination.k8s.io/v1 Leases: GET, POST (201; 409 AlreadyExists when one of that name exists), PUT
  (409 Conflict on a stale or missing resourceVersion; 404 when none), DELETE, with the discovery of the group;
- GET /api/v1/pods?fieldSelector=spec.nodeName=<n>&labelSelector=..., GET and DELETE
  /api/v1/namespaces/<ns>/pods/<name>, POST .../pods/<name>/eviction (the pod is gone afterwards);
- the DaemonSet controller's part the tests need: a pod owned by a DaemonSet leaves a Node whose labels its required
  node affinity no longer admits once the Node is written, and a new pod of it comes back once they admit it again.

Every request is kept (method, path, body) so the tests can assert what was asked, and in which order.
Status bodies follow the API conventions (metav1.Status).
"""
import copy
import datetime
import os
import sys
from urllib.parse import parse_qs, unquote, urlparse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "unit", "plugins", "modules"))
# pylint: disable=wrong-import-position
from k8s_replay import JsonHandler, LocalServer, label_selector_matches, selector_matches, status, write_kubeconfig  # noqa: E402

__all__ = ['ApiDouble', 'merge_patch', 'write_kubeconfig']

COORDINATION = {
    'kind': 'APIResourceList', 'apiVersion': 'v1', 'groupVersion': 'coordination.k8s.io/v1',
    'resources': [{'name': 'leases', 'singularName': 'lease', 'namespaced': True, 'kind': 'Lease',
                   'verbs': ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch']}],
}
GROUPS = {'kind': 'APIGroupList', 'apiVersion': 'v1', 'groups': [
    {'name': 'coordination.k8s.io', 'versions': [{'groupVersion': 'coordination.k8s.io/v1', 'version': 'v1'}],
     'preferredVersion': {'groupVersion': 'coordination.k8s.io/v1', 'version': 'v1'}}]}

CORE_RESOURCES = {
    'kind': 'APIResourceList', 'apiVersion': 'v1', 'groupVersion': 'v1',
    'resources': [
        {'name': 'nodes', 'singularName': 'node', 'namespaced': False, 'kind': 'Node',
         'verbs': ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'], 'shortNames': ['no']},
        {'name': 'nodes/status', 'singularName': '', 'namespaced': False, 'kind': 'Node', 'verbs': ['get', 'patch', 'update']},
        {'name': 'pods', 'singularName': 'pod', 'namespaced': True, 'kind': 'Pod',
         'verbs': ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'], 'shortNames': ['po']},
        {'name': 'pods/eviction', 'singularName': '', 'namespaced': True, 'group': 'policy', 'version': 'v1',
         'kind': 'Eviction', 'verbs': ['create']},
    ],
}


def conflict(kind, name):
    """The API server's answer to a write with a stale resourceVersion."""
    return status(409, 'Conflict', 'Operation cannot be fulfilled on %s "%s": the object has been modified; please '
                  'apply your changes to the latest version and try again' % (kind, name), {'name': name, 'kind': kind})


def merge_patch(target, patch):
    """Apply a merge patch of maps (null deletes); lists are replaced, as for these fields."""
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict) and isinstance(target.get(key), dict):
            merge_patch(target[key], value)
        else:
            target[key] = copy.deepcopy(value)
    return target


def daemon_pod(pod):
    return any(o.get('kind') == 'DaemonSet' for o in (pod.get('metadata') or {}).get('ownerReferences') or [])


def node_affinity_admits(pod, labels):
    """Whether a pod's required node affinity admits a Node with ``labels``: any of its nodeSelectorTerms, each a
    label selector's matchExpressions; no required affinity admits every Node."""
    required = (((pod.get('spec') or {}).get('affinity') or {}).get('nodeAffinity') or {}).get(
        'requiredDuringSchedulingIgnoredDuringExecution') or {}
    terms = required.get('nodeSelectorTerms') or []
    return not terms or any(label_selector_matches({'matchExpressions': t.get('matchExpressions') or []}, labels)
                            for t in terms)


class ApiDouble(LocalServer):
    def __init__(self, token='test-token', version='v1.31.6+rke2r1'):
        self.token = token
        self.version = version
        self.nodes = {}
        self.pods = {}          # (namespace, name) -> Pod
        self.daemon_pods_off = {}   # (namespace, name) -> a DaemonSet's Pod taken off its Node (the Node's labels)
        self.pod_watchers = []      # (node name, label, path): path exists while a pod with that label runs there
        self.leases = {}        # (namespace, name) -> Lease
        self.resource_version = 100
        self.conflicts = 0      # writes refused with 409
        super(ApiDouble, self).__init__(self._handler())
        self.requests = []      # (method, path, body or None)

    def add_node(self, node):
        node = copy.deepcopy(node)
        self._bump(node)
        self.nodes[node['metadata']['name']] = node

    def _bump(self, obj):
        self.resource_version += 1
        obj.setdefault('metadata', {})['resourceVersion'] = str(self.resource_version)
        return obj

    def stale(self, stored, body):
        """A write carrying a resourceVersion other than the stored one (the API server's 409 Conflict)."""
        wanted = ((body or {}).get('metadata') or {}).get('resourceVersion')
        return wanted is not None and str(wanted) != str((stored.get('metadata') or {}).get('resourceVersion'))

    def hold_lease(self, namespace, name, holder, duration=600):
        """A Lease held by another run (``holder``), renewed now: live for ``duration`` seconds."""
        now = datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%S.%fZ')
        self.leases[(namespace, name)] = self._bump({
            'apiVersion': 'coordination.k8s.io/v1', 'kind': 'Lease', 'metadata': {'name': name, 'namespace': namespace},
            'spec': {'holderIdentity': holder, 'leaseDurationSeconds': duration, 'renewTime': now, 'acquireTime': now}})

    def release_lease(self, namespace, name):
        """That run releases it (holderIdentity emptied, a new resourceVersion), as maintenance_lock does."""
        lease = self.leases[(namespace, name)]
        lease['spec'].pop('holderIdentity', None)
        self._bump(lease)

    def add_pod(self, pod):
        self.pods[(pod['metadata']['namespace'], pod['metadata']['name'])] = copy.deepcopy(pod)
        self._pods_changed()

    def watch_pods(self, node, label, path):
        """Keep ``path`` while a pod carrying ``label`` (key=value) runs on Node ``node`` (a stand-in on the node
        reads it: the pod holds its GPU); several watches of one path keep it while any of their pods runs."""
        self.pod_watchers.append((node, label, path))
        self._pods_changed()

    def _pods_changed(self):
        held = {}
        for node, label, path in self.pod_watchers:
            key, value = label.split('=', 1)
            held[path] = held.get(path, False) or any(
                p['spec'].get('nodeName') == node and (p['metadata'].get('labels') or {}).get(key) == value
                for p in self.pods.values())
        for path, there in held.items():
            if there:
                open(path, 'a', encoding='utf-8').close()
            elif os.path.exists(path):
                os.remove(path)

    def _daemonsets(self, node):
        """As the DaemonSet controller after a write of ``node``: its daemon pods that the Node's labels no longer
        admit are deleted; those taken off before that the labels admit again come back (a new pod)."""
        name = node['metadata']['name']
        labels = node['metadata'].get('labels') or {}
        for key, pod in sorted(self.pods.items()):
            if pod['spec'].get('nodeName') == name and daemon_pod(pod) and not node_affinity_admits(pod, labels):
                self.daemon_pods_off[key] = self.pods.pop(key)
        for (namespace, pod_name), pod in sorted(self.daemon_pods_off.items()):
            if pod['spec'].get('nodeName') == name and node_affinity_admits(pod, labels):
                del self.daemon_pods_off[(namespace, pod_name)]
                pod = copy.deepcopy(pod)
                pod['metadata']['name'] = '%s-%d' % (pod_name.rsplit('-', 1)[0], self.resource_version)
                self.pods[(namespace, pod['metadata']['name'])] = self._bump(pod)
        self._pods_changed()

    def calls(self, method=None):
        """The requests made, without discovery, as 'METHOD path' strings (bodies in self.requests)."""
        return ['%s %s' % (m, p) for m, p, _b in self.requests
                if (method is None or m == method) and not p.startswith(('/version', '/api?', '/apis'))
                and p not in ('/api', '/api/v1')]

    def cordon_writes(self, name=None):
        """The writes of a Node's spec.unschedulable (cordon True, uncordon False or None), in order, as (index in
        self.requests, value); of Node ``name`` only when given. A server-side dry run (?dryRun=All) stores nothing and
        is left out."""
        def of_the_node(path):
            path = path.split('?')[0]
            return path == '/api/v1/nodes/%s' % name if name else path.startswith('/api/v1/nodes/')
        return [(i, b['spec']['unschedulable']) for i, (m, p, b) in enumerate(self.requests)
                if m in ('PATCH', 'PUT') and 'dryRun=All' not in p and of_the_node(p)
                and 'unschedulable' in ((b or {}).get('spec') or {})]

    def _handler(self):
        double = self

        class Handler(JsonHandler):
            def _route(self, method):
                url = urlparse(self.path)
                path = unquote(url.path)
                query = parse_qs(url.query)
                body = self._body() if method in ('PATCH', 'POST', 'PUT', 'DELETE') else None
                with double.lock:
                    double.requests.append((method, self.path, body))
                    if self.headers.get('Authorization') != 'Bearer %s' % double.token:
                        return self._send(401, status(401, 'Unauthorized', 'Unauthorized'))
                    return self._dispatch(method, path, query, body)

            def _dispatch(self, method, path, query, body):
                parts = [p for p in path.split('/') if p]
                if path == '/version':
                    major, minor = double.version.lstrip('v').split('.')[:2]
                    return self._send(200, {'major': major, 'minor': minor, 'gitVersion': double.version})
                if path == '/api':
                    return self._send(200, {'kind': 'APIVersions', 'versions': ['v1'], 'serverAddressByClientCIDRs': []})
                if path == '/apis':
                    return self._send(200, GROUPS)
                if path == '/apis/coordination.k8s.io/v1':
                    return self._send(200, COORDINATION)
                if parts[:4] == ['apis', 'coordination.k8s.io', 'v1', 'namespaces'] and len(parts) >= 6 \
                        and parts[5] == 'leases':
                    return self._lease(method, parts[4], parts[6] if len(parts) > 6 else None, body)
                if path == '/api/v1':
                    return self._send(200, CORE_RESOURCES)
                if parts[:3] == ['api', 'v1', 'nodes']:
                    return self._nodes(method, parts[3] if len(parts) > 3 else None, query, body)
                if parts == ['api', 'v1', 'pods'] and method == 'GET':
                    return self._list_pods(query)
                if parts[:3] == ['api', 'v1', 'namespaces'] and len(parts) >= 6 and parts[4] == 'pods':
                    return self._pod(method, parts[3], parts[5], parts[6] if len(parts) > 6 else None, query)
                return self._send(404, status(404, 'NotFound', 'the server could not find the requested resource'))

            def _nodes(self, method, name, query, body):
                if name is None:
                    selector = query.get('labelSelector', [''])[0]
                    items = [n for _k, n in sorted(double.nodes.items())
                             if selector_matches(selector, n['metadata'].get('labels') or {})]
                    return self._send(200, {'kind': 'NodeList', 'apiVersion': 'v1', 'metadata': {'resourceVersion': '1'},
                                            'items': items})
                node = double.nodes.get(name)
                if node is None:
                    return self._send(404, status(404, 'NotFound', 'nodes "%s" not found' % name,
                                                  {'name': name, 'kind': 'nodes'}))
                if method in ('PATCH', 'PUT') and double.stale(node, body):
                    double.conflicts += 1
                    return self._send(409, conflict('nodes', name))
                if method == 'PATCH':
                    patch = dict(body or {})
                    patch.pop('kind', None)
                    patch.pop('apiVersion', None)
                    if query.get('dryRun') == ['All']:
                        # Server-side dry run (kubernetes.core in check mode): the result, nothing stored.
                        return self._send(200, merge_patch(copy.deepcopy(node), patch))
                    merge_patch(node, patch)
                    double._bump(node)
                    double._daemonsets(node)
                return self._send(200, node)

            def _lease(self, method, namespace, name, body):
                if name is None and method == 'POST':
                    name = ((body or {}).get('metadata') or {}).get('name')
                    if (namespace, name) in double.leases:
                        return self._send(409, status(409, 'AlreadyExists', 'leases.coordination.k8s.io "%s" already '
                                                      'exists' % name, {'name': name, 'group': 'coordination.k8s.io',
                                                                        'kind': 'leases'}))
                    lease = copy.deepcopy(body)
                    lease['metadata']['namespace'] = namespace
                    lease['metadata'].pop('resourceVersion', None)
                    double.leases[(namespace, name)] = double._bump(lease)
                    return self._send(201, lease)
                if name is None:
                    items = [v for (ns, _n), v in sorted(double.leases.items()) if ns == namespace]
                    return self._send(200, {'kind': 'LeaseList', 'apiVersion': 'coordination.k8s.io/v1',
                                            'metadata': {'resourceVersion': str(double.resource_version)}, 'items': items})
                lease = double.leases.get((namespace, name))
                if lease is None:
                    return self._send(404, status(404, 'NotFound', 'leases.coordination.k8s.io "%s" not found' % name,
                                                  {'name': name, 'group': 'coordination.k8s.io', 'kind': 'leases'}))
                if method == 'PUT':
                    if not ((body or {}).get('metadata') or {}).get('resourceVersion') or double.stale(lease, body):
                        double.conflicts += 1
                        return self._send(409, conflict('leases.coordination.k8s.io', name))
                    new = copy.deepcopy(body)
                    new['metadata']['namespace'] = namespace
                    double.leases[(namespace, name)] = double._bump(new)
                    return self._send(200, new)
                if method == 'DELETE':
                    del double.leases[(namespace, name)]
                    return self._send(200, status(200, '', ''))
                return self._send(200, lease)

            def _list_pods(self, query):
                field = query.get('fieldSelector', [''])[0]
                selector = query.get('labelSelector', [''])[0]
                on_node = field.split('=', 1)[1] if field.startswith('spec.nodeName=') else None
                items = [p for _k, p in sorted(double.pods.items())
                         if (on_node is None or p['spec'].get('nodeName') == on_node)
                         and selector_matches(selector, p['metadata'].get('labels') or {})]
                return self._send(200, {'kind': 'PodList', 'apiVersion': 'v1', 'metadata': {'resourceVersion': '1'},
                                        'items': items})

            def _pod(self, method, namespace, name, sub, query):
                key = (namespace, name)
                pod = double.pods.get(key)
                if pod is None:
                    return self._send(404, status(404, 'NotFound', 'pods "%s" not found' % name,
                                                  {'name': name, 'kind': 'pods'}))
                # Server-side dry run (kubernetes.core in check mode): answered as done, nothing removed.
                dry_run = query.get('dryRun') == ['All']
                if sub == 'eviction' and method == 'POST':
                    if not dry_run:
                        del double.pods[key]
                        double._pods_changed()
                    return self._send(201, status(201, '', ''))
                if method == 'DELETE':
                    if not dry_run:
                        del double.pods[key]
                        double._pods_changed()
                    return self._send(200, pod)
                return self._send(200, pod)

            def do_GET(self):
                self._route('GET')

            def do_PATCH(self):
                self._route('PATCH')

            def do_POST(self):
                self._route('POST')

            def do_DELETE(self):
                self._route('DELETE')

            def do_PUT(self):
                self._route('PUT')

        return Handler
