"""RuntimeClass "nvidia" from rke2_nvidia_runtime (entry point runtimeclass), rendered and validated.

There is no Kubernetes API here, so the role runs in render mode (rke2_nvidia_runtime_render_dir), as
the cluster layer does with cluster_addons_render_dir, against localhost with the API pointed at
nothing. The manifest is validated against the Kubernetes OpenAPI schemas (kubernetes-validate,
strict) of every supported Kubernetes version.
"""
import os
import re
import stat

import kubernetes_validate
import pytest
import yaml

from conftest import run_playbook

K8S_VERSIONS = ["1.29.0", "1.30.0", "1.31.0", "1.32.0", "1.33.0"]
NO_CLUSTER_ENV = {
    "K8S_AUTH_HOST": "https://127.0.0.1:9",
    "K8S_AUTH_KUBECONFIG": "/nonexistent/kubeconfig",
    "KUBECONFIG": "/nonexistent/kubeconfig",
}
PLAY = """---
- name: RuntimeClass, as the cluster layer applies it
  hosts: localhost
  gather_facts: false
  tasks:
    - name: RuntimeClass
      ansible.builtin.include_role:
        name: baremetal.gpu.rke2_nvidia_runtime
        tasks_from: runtimeclass
"""


def render(tmp_path, *args):
    play = tmp_path / "play.yml"
    play.write_text(PLAY)
    return run_playbook(str(play), "-e", "rke2_nvidia_runtime_render_dir=%s" % (tmp_path / "out"), *args,
                        extra_env=NO_CLUSTER_ENV)


def recap(res):
    match = re.search(r"localhost\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", res.stdout)
    assert match, res.stdout[-3000:] + res.stderr[-3000:]
    return {"changed": int(match.group(2)), "failed": int(match.group(4))}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("runtimeclass")
    first = render(tmp)
    second = render(tmp)
    return {"first": first, "second": second, "file": tmp / "out" / "runtimeclass-nvidia.yaml", "tmp": tmp}


def load(path):
    with open(path, encoding="utf-8") as fh:
        docs = [d for d in yaml.safe_load_all(fh) if d is not None]
    assert len(docs) == 1, path
    return docs[0]


def test_render_succeeds_without_a_cluster(rendered):
    res = rendered["first"]
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert recap(res)["changed"] == 2  # the directory and the manifest
    # The cluster task was skipped, never attempted.
    block = re.search(r"TASK \[[^\]]*RuntimeClass \| Apply it to the cluster\] \*+\n(.*?)(?=\nTASK |\nPLAY RECAP)",
                      res.stdout, re.S).group(1)
    assert "skipping" in block and "ok:" not in block and "changed:" not in block


def test_second_render_changes_nothing(rendered):
    assert rendered["second"].returncode == 0
    assert recap(rendered["second"])["changed"] == 0, rendered["second"].stdout[-3000:]


def test_manifest_content_and_mode(rendered):
    path = rendered["file"]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    text = path.read_text()
    assert text.startswith("#")  # ansible_managed
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
    # The same validation refuses a RuntimeClass with a misspelt field, and one without its handler.
    obj = load(rendered["file"])
    for bad in ({**obj, "handlers": "nvidia"}, {k: v for k, v in obj.items() if k != "handler"}):
        with pytest.raises(kubernetes_validate.utils.ValidationError):
            kubernetes_validate.validate(bad, K8S_VERSIONS[-1], strict=True)


def test_other_names(tmp_path):
    res = render(tmp_path, "-e", "rke2_nvidia_runtime_runtimeclass_name=gpu", "-e", "rke2_nvidia_runtime_name=nvidia-cdi")
    assert res.returncode == 0, res.stdout[-3000:]
    obj = load(tmp_path / "out" / "runtimeclass-gpu.yaml")
    assert obj["metadata"]["name"] == "gpu" and obj["handler"] == "nvidia-cdi"
    for version in K8S_VERSIONS:
        kubernetes_validate.validate(obj, version, strict=True)


def test_without_render_dir_it_talks_to_the_cluster(tmp_path):
    # No render dir: the role tries the (absent) API and fails there, which shows it really applies.
    play = tmp_path / "play.yml"
    play.write_text(PLAY)
    res = run_playbook(str(play), "-e", "rke2_nvidia_runtime_kubeconfig=/nonexistent/kubeconfig",
                       extra_env=NO_CLUSTER_ENV)
    assert res.returncode != 0
    assert "RuntimeClass | Apply it to the cluster" in res.stdout
    assert not (tmp_path / "out").exists()
