"""A chart registry that speaks the OCI distribution API as Harbor and other site registries serve Helm charts.

No registry can run here. This stand-in serves chart tarballs the way `helm push` stores them (the OCI
distribution spec, https://github.com/opencontainers/distribution-spec/blob/main/spec.md, with Helm's media types,
https://helm.sh/docs/topics/registries/): GET /v2/, GET or HEAD /v2/<repository>/manifests/<tag or digest>,
GET /v2/<repository>/blobs/<digest> and /v2/<repository>/tags/list; a manifest whose config blob is the chart's
Chart.yaml as JSON (application/vnd.cncf.helm.config.v1+json) and whose one layer is the tarball
(application/vnd.cncf.helm.chart.content.v1.tar+gzip). An unknown repository, tag or blob answers 404 with the
spec's error body. Plain HTTP (helm --plain-http); every request is recorded.
"""
import hashlib
import json
import tarfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import yaml

MANIFEST = "application/vnd.oci.image.manifest.v1+json"
CONFIG = "application/vnd.cncf.helm.config.v1+json"
CHART = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"


def _digest(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


class OciRegistry:
    """Serves each chart tarball added as <prefix>/<chart name>:<chart version>."""

    def __init__(self):
        self.blobs = {}
        self.manifests = {}  # (repository, tag or digest) -> bytes
        self.requests = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status, body=b"", ctype="application/json", headers=None):
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def _unknown(self, code):
                self._send(404, json.dumps({"errors": [{"code": code, "message": code.lower()}]}).encode())

            def _answer(self):
                outer.requests.append((self.command, self.path))
                path = self.path.split("?", 1)[0]
                if path in ("/v2", "/v2/"):
                    return self._send(200, b"{}")
                if not path.startswith("/v2/"):
                    return self._unknown("NAME_UNKNOWN")
                rest = path[len("/v2/"):]
                if rest.endswith("/tags/list"):
                    repo = rest[:-len("/tags/list")]
                    tags = sorted(t for (r, t) in outer.manifests if r == repo and not t.startswith("sha256:"))
                    if not tags:
                        return self._unknown("NAME_UNKNOWN")
                    return self._send(200, json.dumps({"name": repo, "tags": tags}).encode())
                for kind in ("/manifests/", "/blobs/"):
                    if kind in rest:
                        repo, ref = rest.rsplit(kind, 1)
                        if kind == "/manifests/":
                            body = outer.manifests.get((repo, ref))
                            if body is None:
                                return self._unknown("MANIFEST_UNKNOWN")
                            return self._send(200, body, MANIFEST, {"Docker-Content-Digest": _digest(body)})
                        body = outer.blobs.get(ref)
                        if body is None or not any(r == repo for (r, _t) in outer.manifests):
                            return self._unknown("BLOB_UNKNOWN")
                        return self._send(200, body, "application/octet-stream", {"Docker-Content-Digest": ref})
                return self._unknown("NAME_UNKNOWN")

            def do_GET(self):
                self._answer()

            def do_HEAD(self):
                self._answer()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.host = "127.0.0.1:%d" % self.httpd.server_address[1]

    def add_chart(self, prefix, tarball):
        with open(tarball, "rb") as fh:
            content = fh.read()
        with tarfile.open(tarball) as tar:
            member = next(m for m in tar.getmembers() if m.name.count("/") == 1 and m.name.endswith("/Chart.yaml"))
            meta = yaml.safe_load(tar.extractfile(member))
        config = json.dumps(meta).encode()
        self.blobs[_digest(config)] = config
        self.blobs[_digest(content)] = content
        manifest = json.dumps({
            "schemaVersion": 2, "mediaType": MANIFEST,
            "config": {"mediaType": CONFIG, "digest": _digest(config), "size": len(config)},
            "layers": [{"mediaType": CHART, "digest": _digest(content), "size": len(content)}],
        }).encode()
        repo = "%s/%s" % (prefix.strip("/"), meta["name"])
        self.manifests[(repo, str(meta["version"]))] = manifest
        self.manifests[(repo, _digest(manifest))] = manifest
        return "oci://%s/%s" % (self.host, prefix.strip("/"))

    def __enter__(self):
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
