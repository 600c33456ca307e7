"""A small Kubernetes API stand-in on 127.0.0.1 for the cluster roles' kubernetes.core calls.

It answers what kubernetes.core.k8s_info and kubernetes.core.k8s (apply) ask, as the API server does:
discovery (/version, /api, /apis and the resource lists of the groups it serves), GET of a named
object (the object or a 404 Status), POST (create, 201) and PATCH (merge patch, 200) of cluster-scoped
RuntimeClasses and of Namespaces, PUT (replace; 409 Conflict when the body's resourceVersion is not the
stored one, as the API server's optimistic concurrency answers) and DELETE (200 Status Success, or 404) of
a named object, and lists of a collection filtered by an equality ``labelSelector`` (Helm finds its
releases, Secrets labelled owner=helm, that way); with ``?dryRun=All`` (kubernetes.core.k8s in check mode)
nothing is stored. Objects are served from ``objects`` ({path: object}); every request is recorded as (method, path),
dry runs in ``dry_runs``. ``unavailable`` answers the next N requests with 503 (an API server
that is starting, as right after an RKE2 server restart). The bodies follow the API conventions
(metav1.Status, APIResourceList, APIGroupList); the objects come from the tests' fixtures.
"""
import copy
import os
import sys
from urllib.parse import parse_qs

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "unit", "plugins", "modules"))
# pylint: disable=wrong-import-position
from k8s_replay import JsonHandler, LocalServer, selector_matches, status, write_kubeconfig  # noqa: E402

RESOURCES = {
    "/api/v1": [{"name": "namespaces", "singularName": "namespace", "namespaced": False, "kind": "Namespace",
                 "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"], "shortNames": ["ns"]},
                {"name": "nodes", "singularName": "node", "namespaced": False, "kind": "Node",
                 "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"], "shortNames": ["no"]},
                {"name": "secrets", "singularName": "secret", "namespaced": True, "kind": "Secret",
                 "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"]}],
    "/apis/node.k8s.io/v1": [{"name": "runtimeclasses", "singularName": "runtimeclass", "namespaced": False,
                              "kind": "RuntimeClass",
                              "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]}],
    "/apis/apiextensions.k8s.io/v1": [{"name": "customresourcedefinitions", "singularName": "customresourcedefinition",
                                       "namespaced": False, "kind": "CustomResourceDefinition", "shortNames": ["crd", "crds"],
                                       "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update",
                                                 "watch"]}],
    "/apis/apps/v1": [{"name": "daemonsets", "singularName": "daemonset", "namespaced": True, "kind": "DaemonSet",
                       "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"], "shortNames": ["ds"]},
                      {"name": "deployments", "singularName": "deployment", "namespaced": True, "kind": "Deployment",
                       "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"], "shortNames": ["deploy"]}],
}
GROUPS = ["node.k8s.io", "apiextensions.k8s.io", "apps"]


def merge(target, patch):
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge(out.get(key), value)
    return out


class ApiStub(LocalServer):
    def __init__(self, objects=None, unavailable=0):
        self.objects = {k: copy.deepcopy(v) for k, v in (objects or {}).items()}
        self.unavailable = unavailable
        self.dry_runs = []
        self.resource_version = 1000
        super(ApiStub, self).__init__(self._handler())

    def writes(self):
        return [(m, p) for m, p in self.requests if m not in ("GET",)]

    def kubeconfig(self, path):
        return write_kubeconfig(path, self.url, "stub-token", name="stub")

    def _store(self, path, obj):
        self.resource_version += 1
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        meta.setdefault("uid", "00000000-0000-4000-8000-%012d" % self.resource_version)
        meta.setdefault("creationTimestamp", "2026-11-23T05:00:00Z")
        meta["resourceVersion"] = str(self.resource_version)
        self.objects[path] = obj
        return obj

    def _handler(self):
        stub = self

        class Handler(JsonHandler):

            def _answer(self, method):
                path = self.path.split("?", 1)[0].rstrip("/")
                dry_run = "dryRun=" in self.path
                with stub.lock:
                    (stub.dry_runs if dry_run and method != "GET" else stub.requests).append((method, path))
                    if stub.unavailable > 0:
                        stub.unavailable -= 1
                        return self._send(503, status(503, "ServiceUnavailable", "the server is starting up"))
                    if method == "GET":
                        query = parse_qs(self.path.split("?", 1)[1]) if "?" in self.path else {}
                        return self._get(path, (query.get("labelSelector") or [""])[0])
                    if method == "POST":
                        obj = self._body({})
                        target = "%s/%s" % (path, obj["metadata"]["name"])
                        if target in stub.objects:
                            return self._send(409, status(409, "AlreadyExists", "%s already exists" % target))
                        return self._send(201, obj if dry_run else stub._store(target, obj))
                    if method == "PATCH":
                        if path not in stub.objects:
                            return self._send(404, status(404, "NotFound", "%s not found" % path))
                        merged = merge(stub.objects[path], self._body({}))
                        return self._send(200, merged if dry_run else stub._store(path, merged))
                    if method == "PUT":
                        if path not in stub.objects:
                            return self._send(404, status(404, "NotFound", "%s not found" % path))
                        body = self._body({})
                        sent = (body.get("metadata") or {}).get("resourceVersion")
                        if sent and sent != stub.objects[path]["metadata"].get("resourceVersion"):
                            return self._send(409, status(409, "Conflict", "Operation cannot be fulfilled on %s: the object "
                                                          "has been modified; please apply your changes to the latest "
                                                          "version and try again" % path))
                        return self._send(200, body if dry_run else stub._store(path, body))
                    if method == "DELETE":
                        if path not in stub.objects:
                            return self._send(404, status(404, "NotFound", "%s not found" % path))
                        if not dry_run:
                            del stub.objects[path]
                        kind, name = path.rsplit("/", 2)[-2:]
                        return self._send(200, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                                                "details": {"name": name, "kind": kind}})
                    return self._send(405, status(405, "MethodNotAllowed", method))

            def _get(self, path, selector=""):
                if path == "/version":
                    return self._send(200, {"major": "1", "minor": "33", "gitVersion": "v1.33.5+rke2r1",
                                            "platform": "linux/amd64"})
                if path == "/api":
                    return self._send(200, {"kind": "APIVersions", "versions": ["v1"],
                                            "serverAddressByClientCIDRs": []})
                if path == "/apis":
                    groups = [{"name": g, "versions": [{"groupVersion": g + "/v1", "version": "v1"}],
                               "preferredVersion": {"groupVersion": g + "/v1", "version": "v1"}} for g in GROUPS]
                    return self._send(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
                if path in RESOURCES:
                    group_version = path[len("/apis/"):] if path.startswith("/apis/") else "v1"
                    return self._send(200, {"kind": "APIResourceList", "apiVersion": "v1",
                                            "groupVersion": group_version, "resources": RESOURCES[path]})
                if path in stub.objects:
                    return self._send(200, stub.objects[path])
                if path.rsplit("/", 1)[-1] in ("daemonsets", "deployments", "nodes", "secrets"):
                    # A collection: the stored objects right under it that the label selector matches.
                    items = [obj for key, obj in sorted(stub.objects.items())
                             if key.rsplit("/", 1)[0] == path
                             and selector_matches(selector, (obj.get("metadata") or {}).get("labels") or {})]
                    plural = path.rsplit("/", 1)[-1]
                    kind = [r["kind"] for rs in RESOURCES.values() for r in rs if r["name"] == plural][0]
                    group_version = "v1" if path.startswith("/api/") else "/".join(path.split("/")[2:4])
                    return self._send(200, {"kind": kind + "List", "apiVersion": group_version,
                                            "metadata": {"resourceVersion": str(stub.resource_version)}, "items": items})
                return self._send(404, status(404, "NotFound", "%s not found" % path.rsplit("/", 1)[-1]))

            def do_GET(self):
                self._answer("GET")

            def do_POST(self):
                self._answer("POST")

            def do_PATCH(self):
                self._answer("PATCH")

            def do_PUT(self):
                self._answer("PUT")

            def do_DELETE(self):
                self._answer("DELETE")

        return Handler
