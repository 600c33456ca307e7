"""baremetal.gpu.runtime_class: the RuntimeClass of the NVIDIA runtime, rendered, validated, and applied.

Render mode (cluster_addons_render_dir) writes the manifest; it is validated against the Kubernetes
OpenAPI schemas (kubernetes-validate, strict) of every supported Kubernetes version.

Cluster mode runs against an API stand-in on 127.0.0.1 (tests/integration/k8s_api_stub.py): the real
kubernetes client of kubernetes.core does discovery, GET, POST over HTTP. The RuntimeClass that RKE2
adopts into its rke2-runtimeclasses Helm release is tests/fixtures/k8s-api/rke2-runtimeclass-nvidia.json.
  - none exists: created, and a second run changes nothing;
  - RKE2's (Helm release, same handler): left alone and reported, nothing written;
  - another handler: refused before any change, naming the owner, the handler and what to do;
  - an API that answers 503 at first (right after an RKE2 server restart): waited for, bounded;
    one that never answers: a clear failure after cluster_addons_api_wait_timeout.
"""
import copy
import json
import os
import re
import stat

import kubernetes_validate
import pytest
import yaml

from conftest import ROOT, roles_play, run_playbook
from k8s_api_stub import ApiStub

K8S_VERSIONS = ["1.29.0", "1.30.0", "1.31.0", "1.32.0", "1.33.0"]
RC_PATH = "/apis/node.k8s.io/v1/runtimeclasses/nvidia"
NS_PATH = "/api/v1/namespaces/kube-system"
KUBE_SYSTEM = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-system"}}
with open(os.path.join(ROOT, "tests", "fixtures", "k8s-api", "rke2-runtimeclass-nvidia.json"), encoding="utf-8") as _fh:
    RKE2_RC = json.load(_fh)
NO_CLUSTER_ENV = {
    "K8S_AUTH_HOST": "https://127.0.0.1:9",
    "K8S_AUTH_KUBECONFIG": "/nonexistent/kubeconfig",
    "KUBECONFIG": "/nonexistent/kubeconfig",
}
PLAY = roles_play("RuntimeClass, as the cluster layer applies it", "runtime_class")


def play(tmp_path):
    path = tmp_path / "play.yml"
    path.write_text(PLAY)
    return str(path)


def render(tmp_path, *args):
    return run_playbook(play(tmp_path), "-e", "cluster_addons_render_dir=%s" % (tmp_path / "out"), *args,
                        extra_env=NO_CLUSTER_ENV)


def against(stub, tmp_path, *args):
    kubeconfig = stub.kubeconfig(tmp_path / "kubeconfig")
    return run_playbook(play(tmp_path), "-e", "cluster_kubeconfig=%s" % kubeconfig, *args, extra_env=NO_CLUSTER_ENV)


def recap(res):
    match = re.search(r"localhost\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", res.stdout)
    assert match, res.stdout[-3000:] + res.stderr[-3000:]
    return {"changed": int(match.group(2)), "failed": int(match.group(4))}


def failed_task(res):
    head = res.stdout.split("fatal:")[0]
    return re.findall(r"^TASK \[(?P<name>[^\]]*)\]", head, re.M)[-1]


def load(path):
    with open(path, encoding="utf-8") as fh:
        docs = [d for d in yaml.safe_load_all(fh) if d is not None]
    assert len(docs) == 1, path
    return docs[0]


# ---------------------------------------------------------------- render mode

@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("runtimeclass")
    first = render(tmp)
    second = render(tmp)
    return {"first": first, "second": second, "file": tmp / "out" / "runtime_class" / "manifests" / "01-runtimeclass-nvidia.yaml"}


def test_render_succeeds_without_a_cluster(rendered):
    res = rendered["first"]
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert recap(res)["changed"] == 1  # one write (baremetal.gpu.render_files): the directories and the manifest
    assert "Render mode: RuntimeClass nvidia (handler nvidia) is rendered, not applied" in res.stdout
    for task in ("Preflight | Read the RuntimeClass if it exists", "Preflight | Wait for the Kubernetes API to answer"):
        block = re.search(r"TASK \[[^\]]*%s\] \*+\n(.*?)(?=\nTASK |\nPLAY RECAP)" % re.escape(task), res.stdout, re.S).group(1)
        assert "skipping" in block and "ok:" not in block and "changed:" not in block


def test_second_render_changes_nothing(rendered):
    assert rendered["second"].returncode == 0
    assert recap(rendered["second"])["changed"] == 0, rendered["second"].stdout[-3000:]


def test_manifest_content_and_mode(rendered):
    path = rendered["file"]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    assert path.read_text().startswith("#")  # ansible_managed
    assert load(path) == {
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": {"name": "nvidia", "labels": {"app.kubernetes.io/managed-by": "baremetal.gpu",
                                                  "app.kubernetes.io/part-of": "baremetal.gpu"}},
        "handler": "nvidia",
    }


@pytest.mark.parametrize("k8s_version", K8S_VERSIONS)
def test_manifest_matches_kubernetes_schema(rendered, k8s_version):
    kubernetes_validate.validate(load(rendered["file"]), k8s_version, strict=True)


def test_schema_check_is_real(rendered):
    obj = load(rendered["file"])
    for bad in ({**obj, "handlers": "nvidia"}, {k: v for k, v in obj.items() if k != "handler"}):
        with pytest.raises(kubernetes_validate.utils.ValidationError):
            kubernetes_validate.validate(bad, K8S_VERSIONS[-1], strict=True)


def test_the_one_name_override(tmp_path):
    res = render(tmp_path, "-e", "baremetal_gpu_runtime_class_name=gpu")
    assert res.returncode == 0, res.stdout[-3000:]
    obj = load(tmp_path / "out" / "runtime_class" / "manifests" / "01-runtimeclass-gpu.yaml")
    assert obj["metadata"]["name"] == "gpu" and obj["handler"] == "nvidia"
    for version in K8S_VERSIONS:
        kubernetes_validate.validate(obj, version, strict=True)


# ---------------------------------------------------------------- cluster mode (API stand-in)

def test_creates_the_runtime_class_then_changes_nothing(tmp_path):
    with ApiStub({NS_PATH: KUBE_SYSTEM}) as stub:
        res = against(stub, tmp_path)
        assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
        assert recap(res)["changed"] == 1
        assert "RuntimeClass nvidia does not exist: creating it" in res.stdout
        assert stub.writes() == [("POST", "/apis/node.k8s.io/v1/runtimeclasses")]
        created = stub.objects[RC_PATH]
        assert created["handler"] == "nvidia"
        assert created["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "baremetal.gpu"
        again = against(stub, tmp_path)
        assert again.returncode == 0, again.stdout[-4000:]
        assert recap(again)["changed"] == 0, again.stdout[-4000:]
        assert "exists, app.kubernetes.io/managed-by=baremetal.gpu: applying ours" in again.stdout
        assert stub.writes() == [("POST", "/apis/node.k8s.io/v1/runtimeclasses")]


def test_leaves_rke2s_runtime_class_alone(tmp_path):
    with ApiStub({NS_PATH: KUBE_SYSTEM, RC_PATH: RKE2_RC}) as stub:
        res = against(stub, tmp_path)
        assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
        assert recap(res)["changed"] == 0
        assert ("RuntimeClass nvidia (handler nvidia) is managed by Helm release kube-system/rke2-runtimeclasses: "
                "left alone") in res.stdout
        assert ("GET", RC_PATH) in stub.requests
        assert stub.writes() == []
        assert stub.objects[RC_PATH] == RKE2_RC


def test_refuses_another_handler_before_any_change(tmp_path):
    other = copy.deepcopy(RKE2_RC)
    other["handler"] = "nvidia-experimental"
    with ApiStub({NS_PATH: KUBE_SYSTEM, RC_PATH: other}) as stub:
        res = against(stub, tmp_path)
        assert res.returncode != 0
        out = " ".join(res.stdout.split())
        assert 'RuntimeClass nvidia exists with handler "nvidia-experimental", not "nvidia", owned by Helm release ' \
               'kube-system/rke2-runtimeclasses' in out
        assert "change the handler in that release" in out and "baremetal_gpu_runtime_class_name" in out
        assert "Preflight" in failed_task(res)
        assert recap(res)["changed"] == 0
        assert stub.writes() == []


def test_waits_for_an_api_that_is_starting(tmp_path):
    with ApiStub({NS_PATH: KUBE_SYSTEM}, unavailable=2) as stub:
        res = against(stub, tmp_path, "-e", "cluster_addons_api_wait_timeout=60")
        assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
        assert "FAILED - RETRYING: [localhost]: Preflight | Wait for the Kubernetes API to answer" in res.stdout
        assert stub.unavailable == 0
        assert ("POST", "/apis/node.k8s.io/v1/runtimeclasses") in stub.writes()


def test_gives_up_on_an_api_that_never_answers(tmp_path):
    with ApiStub() as stub:
        kubeconfig = stub.kubeconfig(tmp_path / "kubeconfig")
    # The stub is stopped: nothing listens on its port any more.
    res = run_playbook(play(tmp_path), "-e", "cluster_kubeconfig=%s" % kubeconfig,
                       "-e", "cluster_addons_api_wait_timeout=5", extra_env=NO_CLUSTER_ENV)
    assert res.returncode != 0
    assert failed_task(res) == "baremetal.gpu.cluster_addons : Preflight | Wait for the Kubernetes API to answer"
    assert res.stdout.count("FAILED - RETRYING") == 1  # 5 s: one retry after the first try, then it gives up
    assert recap(res)["changed"] == 0
