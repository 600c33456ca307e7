"""Own only what we made: a Helm release of the same name that this collection did not install.

The real helm binary (.bin/helm) reads the releases through the API stand-in (tests/integration/k8s_api_stub.py),
from Secrets in Helm's own storage format (helm.sh/helm/v3 pkg/storage/driver/secrets.go: a Secret
``sh.helm.release.v1.<name>.v<version>`` of type ``helm.sh/release.v1``, labels name, owner=helm, status,
version, and ``data.release`` = base64 of gzip of the release's JSON). If the format here were wrong, helm
would find no release or fail to decode it, and the refusal these tests wait for would not come. The charts
are small stand-ins with the pinned name and version; no Kubernetes API server runs here.
"""
import base64
import gzip
import io
import json
import os
import sys
import tarfile

import yaml

from conftest import ROOT, cluster_play, run_playbook
from k8s_api_stub import ApiStub

sys.path.insert(0, os.path.join(ROOT, ".ansible", "collections"))
from ansible_collections.baremetal.gpu.plugins.module_utils import support  # noqa: E402  pylint: disable=wrong-import-position

NO_CLUSTER_ENV = {"K8S_AUTH_KUBECONFIG": "/nonexistent/kubeconfig", "KUBECONFIG": "/nonexistent/kubeconfig"}
HELM = os.path.join(ROOT, ".bin", "helm")
NAMESPACE = "nvidia-dcgm"
RELEASE = "dcgm-exporter"
SECRETS = "/api/v1/namespaces/%s/secrets" % NAMESPACE
with open(os.path.join(ROOT, "tests", "fixtures", "k8s-api", "rke2-runtimeclass-nvidia.json"), encoding="utf-8") as _fh:
    RKE2_RC = json.load(_fh)
SERVICEMONITOR_CRD = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                      "metadata": {"name": "servicemonitors.monitoring.coreos.com"},
                      "spec": {"group": "monitoring.coreos.com", "versions": [{"name": "v1", "served": True}]}}
INSTALL = cluster_play("""---
- name: dcgm-exporter alone
  hosts: localhost
  gather_facts: false
  roles:
    - role: baremetal.gpu.dcgm_exporter
""")
UNINSTALL = cluster_play("""---
- name: dcgm-exporter's uninstall alone
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Uninstall
      ansible.builtin.include_role:
        name: baremetal.gpu.dcgm_exporter
        tasks_from: uninstall
""")


def chart_version():
    return support.DCGM_EXPORTER["chart_version"]


def release_secret(values, version=1):
    """A release as Helm 3 stores it (driver "secret")."""
    release = {"name": RELEASE, "namespace": NAMESPACE, "version": version, "config": values, "manifest": "",
               "info": {"first_deployed": "2026-11-20T10:01:02.123456789Z", "last_deployed": "2026-11-20T10:01:02.123456789Z",
                        "deleted": "", "description": "Install complete", "status": "deployed"},
               "chart": {"metadata": {"apiVersion": "v2", "name": "dcgm-exporter", "version": chart_version(),
                                      "appVersion": "4.4.1-4.5.2"},
                         "lock": None, "templates": [], "values": {}, "schema": None, "files": []}}
    encoded = base64.b64encode(gzip.compress(json.dumps(release).encode(), 9))
    name = "sh.helm.release.v1.%s.v%d" % (RELEASE, version)
    return SECRETS + "/" + name, {
        "apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
        "metadata": {"name": name, "namespace": NAMESPACE,
                     "labels": {"name": RELEASE, "owner": "helm", "status": "deployed", "version": str(version),
                                "modifiedAt": "1795600862"}},
        "data": {"release": base64.b64encode(encoded).decode()}}


def cluster(*releases):
    objects = {"/api/v1/namespaces/kube-system": {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-system"}},
               "/apis/node.k8s.io/v1/runtimeclasses/nvidia": RKE2_RC,
               "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + SERVICEMONITOR_CRD["metadata"]["name"]:
                   SERVICEMONITOR_CRD}
    objects.update(dict(releases))
    return ApiStub(objects)


def run(tmp_path, stub, play, *extra):
    charts = tmp_path / "charts"
    charts.mkdir(exist_ok=True)
    data = yaml.safe_dump({"apiVersion": "v2", "name": "dcgm-exporter", "version": chart_version()}).encode()
    with tarfile.open(str(charts / ("dcgm-exporter-%s.tgz" % chart_version())), "w:gz") as tar:
        info = tarfile.TarInfo("dcgm-exporter/Chart.yaml")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    (tmp_path / "play.yml").write_text(play)
    res = run_playbook(str(tmp_path / "play.yml"), "-e", "cluster_kubeconfig=%s" % stub.kubeconfig(tmp_path / "kubeconfig"),
                       "-e", "cluster_addons_chart_dir=%s" % charts, "-e", "cluster_addons_helm_binary_path=%s" % HELM,
                       "-e", "dcgm_exporter_gpu_class=datacenter", *extra, extra_env=NO_CLUSTER_ENV, timeout=600)
    return res, res.stdout + res.stderr


def test_someone_elses_release_is_refused_before_any_change(tmp_path):
    with cluster(release_secret({"image": {"tag": "mine"}})) as stub:
        res, out = run(tmp_path, stub, INSTALL, "--check")
    assert res.returncode != 0, out[-4000:]
    assert ("Helm release nvidia-dcgm/dcgm-exporter (dcgm-exporter-%s) exists and was not installed by baremetal.gpu"
            % chart_version()) in out, out[-4000:]
    assert "Set dcgm_exporter_adopt_release: true to take it over" in out
    # helm read the release through the API; nothing was written, not even a dry run.
    assert ("GET", SECRETS) in stub.requests
    assert stub.writes() == [] and stub.dry_runs == []


def test_adopt_release_takes_it_over(tmp_path):
    with cluster(release_secret({"image": {"tag": "mine"}})) as stub:
        res, out = run(tmp_path, stub, INSTALL, "--check", "-e", "dcgm_exporter_adopt_release=true")
    assert res.returncode == 0, out[-4000:]
    assert "dcgm_exporter_adopt_release is true: upgrading it with our values, which marks it ours" in out


def test_our_release_is_upgraded_without_asking(tmp_path):
    with cluster(release_secret({"baremetalGpu": {"managedBy": "baremetal.gpu"}, "image": {"tag": "x"}})) as stub:
        res, out = run(tmp_path, stub, INSTALL, "--check")
    assert res.returncode == 0, out[-4000:]
    assert "Helm release nvidia-dcgm/dcgm-exporter (dcgm-exporter-%s) is ours: upgrading it" % chart_version() in out


def test_uninstall_leaves_a_release_that_is_not_ours(tmp_path):
    path, secret = release_secret({"image": {"tag": "mine"}})
    with cluster((path, secret)) as stub:
        res, out = run(tmp_path, stub, UNINSTALL)
        kept = path in stub.objects
    assert res.returncode == 0, out[-4000:]
    assert "was not installed by baremetal.gpu (its values carry no baremetalGpu.managedBy): left alone" in out
    assert kept
    assert [r for r in stub.requests if r[0] != "GET"] == []


def test_uninstall_removes_ours(tmp_path):
    path, secret = release_secret({"baremetalGpu": {"managedBy": "baremetal.gpu"}})
    with cluster((path, secret)) as stub:
        res, out = run(tmp_path, stub, UNINSTALL)
        gone = path not in stub.objects
    assert res.returncode == 0, out[-4000:]
    assert "is ours: removing it" in out
    assert gone, stub.requests
    assert ("DELETE", path) in stub.requests


# The CRDs a chart brings (here the ServiceMonitor CRD, given as the role's CRD list through extra vars, which win over
# the role's own): deleted with cluster_addons_uninstall_crds only when the release is ours, never with one we leave.
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + SERVICEMONITOR_CRD["metadata"]["name"]
WITH_CRDS = ("-e", "cluster_addons_uninstall_crds=true",
             "-e", json.dumps({"_cluster_addons_uninstall_crds": [SERVICEMONITOR_CRD["metadata"]["name"]]}))


def test_uninstall_crds_never_for_a_release_that_is_not_ours(tmp_path):
    path, secret = release_secret({"image": {"tag": "mine"}})
    with cluster((path, secret)) as stub:
        res, out = run(tmp_path, stub, UNINSTALL, *WITH_CRDS)
        kept = CRD_PATH in stub.objects
    assert res.returncode == 0, out[-4000:]
    assert "left alone" in out
    assert kept
    assert [r for r in stub.requests if r[0] != "GET"] == []


def test_uninstall_crds_for_our_release(tmp_path):
    path, secret = release_secret({"baremetalGpu": {"managedBy": "baremetal.gpu"}})
    with cluster((path, secret)) as stub:
        res, out = run(tmp_path, stub, UNINSTALL, *WITH_CRDS)
    assert res.returncode == 0, out[-4000:]
    assert ("DELETE", CRD_PATH) in stub.requests, stub.requests
