"""The cluster layer in cluster mode, in check mode, against the API stand-in (tests/integration/k8s_api_stub.py).

No Kubernetes API server can run here. The stand-in answers discovery, GET and list requests as the API
server does, so every cluster-mode step before an install runs for real: the wait for the API, the CRD
and RuntimeClass lookups, the NFD DaemonSet search, the GFD node labels, the RuntimeClass decision, and
kubernetes.core.helm with the real helm binary, which lists the releases (Helm's storage: Secrets) through
the stand-in and, in check mode, reports what it would install. The charts are small stand-ins packaged
here with the pinned names and versions (cluster_addons_chart_dir); the real charts are tested by
test_charts.py. Check mode must write nothing: the stand-in records every request.
"""
import base64
import io
import json
import os
import re
import tarfile

import yaml

from conftest import ROOT, chart_pin, roles_play, run_playbook
from k8s_api_stub import ApiStub
from oci_registry_stub import OciRegistry

PASSWORD = "Cluster-Mode-Passw0rd-91c2"
NO_CLUSTER_ENV = {"K8S_AUTH_KUBECONFIG": "/nonexistent/kubeconfig", "KUBECONFIG": "/nonexistent/kubeconfig"}
with open(os.path.join(ROOT, "tests", "fixtures", "k8s-api", "rke2-runtimeclass-nvidia.json"), encoding="utf-8") as _fh:
    RKE2_RC = json.load(_fh)
CRDS = {name: {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": name},
               "spec": {"group": name.split(".", 1)[1], "versions": [{"name": version, "served": True}]}}
        for name, version in (("servicemonitors.monitoring.coreos.com", "v1"), ("nodefeatures.nfd.k8s-sigs.io", "v1alpha1"))}
PLAY = roles_play("The cluster layer", "runtime_class", "kube_prometheus", "device_plugin", "dcgm_exporter")


def chart(directory, name, version):
    data = yaml.safe_dump({"apiVersion": "v2", "name": name, "version": version}).encode()
    with tarfile.open(os.path.join(directory, "%s-%s.tgz" % (name, version)), "w:gz") as tar:
        info = tarfile.TarInfo("%s/Chart.yaml" % name)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))


def test_whole_layer_in_check_mode_writes_nothing(tmp_path):
    charts = tmp_path / "charts"
    charts.mkdir()
    chart(str(charts), "kube-prometheus-stack", chart_pin("kube_prometheus"))
    chart(str(charts), "nvidia-device-plugin", chart_pin("device_plugin"))
    chart(str(charts), "dcgm-exporter", chart_pin("dcgm_exporter"))
    objects = {"/api/v1/namespaces/kube-system": {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-system"}},
               "/apis/node.k8s.io/v1/runtimeclasses/nvidia": RKE2_RC}
    for name, crd in CRDS.items():
        objects["/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + name] = crd
    (tmp_path / "play.yml").write_text(PLAY)
    with ApiStub(objects) as stub:
        kubeconfig = stub.kubeconfig(tmp_path / "kubeconfig")
        res = run_playbook(str(tmp_path / "play.yml"), "--check", "--diff", "-vvv",
                           "-e", "cluster_kubeconfig=%s" % kubeconfig, "-e", "cluster_addons_chart_dir=%s" % charts,
                           "-e", "cluster_addons_helm_binary_path=%s" % os.path.join(ROOT, ".bin", "helm"),
                           "-e", "kube_prometheus_grafana_admin_password=%s" % PASSWORD,
                           "-e", "dcgm_exporter_gpu_class=datacenter",
                           extra_env=NO_CLUSTER_ENV, timeout=900)
    out = res.stdout + res.stderr
    assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-3000:]
    # Check mode wrote nothing to the cluster: the namespaces and the Secret were server-side dry runs.
    assert stub.writes() == []
    assert sorted(stub.dry_runs) == [("POST", "/api/v1/namespaces")] * 3 + [("POST", "/api/v1/namespaces/monitoring/secrets")]
    # The API was waited for once; RKE2's RuntimeClass was left alone; the chart roles found what they need.
    waits = re.findall(r"TASK \[[^\]]*Wait for the Kubernetes API to answer\] \*+\n(?:[^\n]*\n)*?(ok|skipping): \[localhost\]", out)
    assert waits == ["ok", "skipping", "skipping", "skipping"], waits
    assert "managed by Helm release kube-system/rke2-runtimeclasses: left alone" in out
    for path in ("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/servicemonitors.monitoring.coreos.com",
                 "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/nodefeatures.nfd.k8s-sigs.io",
                 "/apis/node.k8s.io/v1/runtimeclasses/nvidia", "/apis/apps/v1/daemonsets"):
        assert ("GET", path) in stub.requests, path
    # Helm listed each release through the API (its storage: Secrets) and reported the install it would do.
    for namespace in ("monitoring", "nvidia-device-plugin", "nvidia-dcgm"):
        assert ("GET", "/api/v1/namespaces/%s/secrets" % namespace) in stub.requests, namespace
    helm = re.findall(r"TASK \[[^\]]*Install \| Install or upgrade the pinned chart\] \*+\n(?:[^\n]*\n)*?(changed|ok|skipping|fatal)", out)
    assert helm == ["skipping", "changed", "changed", "changed"], helm  # runtime_class has no chart
    # -vvv, --diff: the Grafana password is nowhere, plain or base64.
    assert PASSWORD not in out
    assert base64.b64encode(PASSWORD.encode()).decode() not in out


DEVICE_PLUGIN_PLAY = roles_play("The device plugin", "device_plugin")


def test_chart_from_an_oci_registry_in_check_mode(tmp_path):
    # The pinned chart from a site registry that serves charts over the OCI distribution API (the stand-in of
    # oci_registry_stub.py; helm pulls from it for real): <role>_chart_repo_url oci://<registry>/<path>, plain HTTP.
    charts = tmp_path / "charts"
    charts.mkdir()
    version = chart_pin("device_plugin")
    chart(str(charts), "nvidia-device-plugin", version)
    objects = {"/apis/node.k8s.io/v1/runtimeclasses/nvidia": RKE2_RC}
    for name, crd in CRDS.items():
        objects["/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + name] = crd
    (tmp_path / "play.yml").write_text(DEVICE_PLUGIN_PLAY)
    with OciRegistry() as registry, ApiStub(objects) as stub:
        url = registry.add_chart("site/charts", str(charts / ("nvidia-device-plugin-%s.tgz" % version)))
        res = run_playbook(str(tmp_path / "play.yml"), "--check",
                           "-e", "cluster_kubeconfig=%s" % stub.kubeconfig(tmp_path / "kubeconfig"),
                           "-e", "cluster_addons_helm_binary_path=%s" % os.path.join(ROOT, ".bin", "helm"),
                           "-e", "device_plugin_chart_repo_url=%s/" % url, "-e", "cluster_addons_chart_plain_http=true",
                           extra_env=NO_CLUSTER_ENV, timeout=600)
        pulled = list(registry.requests)
    out = res.stdout + res.stderr
    assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-3000:]
    assert stub.writes() == []
    helm = re.findall(r"TASK \[[^\]]*Install \| Install or upgrade the pinned chart\] \*+\n(?:[^\n]*\n)*?(changed|ok|skipping|fatal)", out)
    assert helm == ["changed"], helm
    # Helm resolved the pinned version in the registry, under the path given plus the chart's name.
    assert ("HEAD", "/v2/site/charts/nvidia-device-plugin/manifests/%s" % version) in pulled \
        or ("GET", "/v2/site/charts/nvidia-device-plugin/manifests/%s" % version) in pulled, pulled
