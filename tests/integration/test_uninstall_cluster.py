"""playbooks/uninstall.yml, cluster layer: render mode writes what it would delete; no API host refuses.

No cluster runs here: render mode contacts none (the Kubernetes API and helm are pointed at nothing, so a
task that tried would fail), and writes <dir>/<role>/uninstall.yaml for each cluster role. The deletions
themselves (kubernetes.core.helm state=absent, kubernetes.core.k8s state=absent by label selector) are
not run against a cluster by these tests.
"""
import os

import yaml

from conftest import ROOT, run_playbook, support

NO_CLUSTER_ENV = {"K8S_AUTH_HOST": "https://127.0.0.1:9", "K8S_AUTH_KUBECONFIG": "/nonexistent/kubeconfig",
                  "KUBECONFIG": "/nonexistent/kubeconfig", "HELM_DRIVER": "none-such"}
PLAYBOOK = os.path.join(ROOT, "playbooks", "uninstall.yml")
# The cluster layer's components, taken off in reverse install order (the support data's list).
ROLES = [row["role"] for row in reversed(support().CLUSTER_COMPONENTS)]


def uninstall(tmp_path, *extra):
    render = tmp_path / "render"
    res = run_playbook(PLAYBOOK, "-e", "cluster_addons_render_dir=%s" % render, "-e", "uninstall_host_enabled=false",
                       *extra, extra_env=NO_CLUSTER_ENV)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    out = {}
    for role in ROLES:
        with open(str(render / role / "uninstall.yaml"), encoding="utf-8") as handle:
            out[role] = yaml.safe_load(handle)
    return out, res


def test_render_writes_what_would_go(tmp_path):
    plan, res = uninstall(tmp_path)
    # Only a release that carries our marker goes (tests/integration/test_release_ownership.py runs that with helm).
    assert plan["kube_prometheus"]["helm_release"] == {"name": "kube-prometheus-stack", "namespace": "monitoring",
                                                       "only_if_values": {"baremetalGpu": {"managedBy": "baremetal.gpu"}}}
    kinds = [o["kind"] for o in plan["kube_prometheus"]["objects"]]
    assert kinds == ["ConfigMap", "Secret", "PrometheusRule"]
    for obj in plan["kube_prometheus"]["objects"]:
        assert "app.kubernetes.io/managed-by=baremetal.gpu" in obj["label_selectors"]
    assert plan["kube_prometheus"]["custom_resource_definitions"] == []
    assert plan["kube_prometheus"]["kept"] == ["the namespace monitoring"]
    assert plan["device_plugin"]["helm_release"]["name"] == "nvdp"
    assert plan["dcgm_exporter"]["helm_release"]["name"] == "dcgm-exporter"
    assert plan["runtime_class"]["helm_release"] is None
    assert plan["runtime_class"]["objects"] == [{"api_version": "node.k8s.io/v1", "kind": "RuntimeClass", "cluster_scoped": True,
                                                 "part_of": "baremetal.gpu",
                                                 "label_selectors": ["app.kubernetes.io/managed-by=baremetal.gpu"]}]
    assert "CRDs: kept" in res.stdout


def test_a_disabled_role_is_left_alone(tmp_path):
    # The inventory says the cluster's kube-prometheus-stack is not ours: the uninstall must not remove it.
    render = tmp_path / "render"
    res = run_playbook(PLAYBOOK, "-e", "cluster_addons_render_dir=%s" % render, "-e", "uninstall_host_enabled=false",
                       "-e", "cluster_addons_kube_prometheus_enabled=false", extra_env=NO_CLUSTER_ENV)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    assert not (render / "kube_prometheus").exists()
    for role in ("dcgm_exporter", "device_plugin", "runtime_class"):
        assert (render / role / "uninstall.yaml").exists()
    assert "Left alone, not enabled here so not ours to remove: cluster_addons_kube_prometheus_enabled=false." in res.stdout


def test_render_with_crds(tmp_path):
    plan, _res = uninstall(tmp_path, "-e", "uninstall_crds=true")
    crds = plan["kube_prometheus"]["custom_resource_definitions"]
    assert len(crds) == 10 and "servicemonitors.monitoring.coreos.com" in crds
    assert all(c.endswith(".monitoring.coreos.com") for c in crds)
    assert plan["device_plugin"]["custom_resource_definitions"] == []   # NFD's CRDs stay


def test_refused_without_api_host_or_render_dir(tmp_path):
    res = run_playbook(PLAYBOOK, "-e", "uninstall_host_enabled=false", extra_env=NO_CLUSTER_ENV)
    assert res.returncode != 0
    out = res.stdout + res.stderr
    assert "uninstall_cluster_enabled is true, but no host" in out and "cluster_addons_render_dir" in out


def test_refused_before_any_change_with_a_switch_that_is_not_a_boolean(tmp_path):
    """-e uninstall_nouveau_blacklist=maybe is refused by the check entry point's argument spec, naming the variable."""
    res = run_playbook(PLAYBOOK, "-e", "cluster_addons_render_dir=%s" % (tmp_path / "render"),
                       "-e", "uninstall_nouveau_blacklist=maybe", extra_env=NO_CLUSTER_ENV)
    out = res.stdout + res.stderr
    assert res.returncode != 0 and "uninstall_nouveau_blacklist" in out, out[-3000:]
    assert not (tmp_path / "render").exists()
