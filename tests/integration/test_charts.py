"""The cluster layer through the REAL upstream charts: helm template of what the roles render.

The chart tarballs come from BAREMETAL_GPU_CHART_DIR (scripts/test-all.sh sets it to ../shared/charts
when that directory exists). Without it, or without one of the pinned charts in it, every test here is
SKIPPED with the reason (the summary of `make test` says NOT RUN), never passed.

One ansible-playbook run renders the cluster layer (runtime_class, kube_prometheus, device_plugin,
dcgm_exporter) for every variant, each variant a host of its own with cluster_addons_chart_dir set, so
each role's release.yaml names the pinned tarball it would install. Then, per variant, role and
Kubernetes version (1.29 and 1.33), `helm template` runs with the role's values.yaml and the API versions
the role decided (release.yaml), and EVERY object the chart renders (CRDs included) plus the objects the
role applies beside the chart is validated: built-in kinds against the Kubernetes schemas
(kubernetes-validate, strict), Prometheus Operator and NFD kinds against their CRDs (tests/fixtures/crds).
The assertions below read the chart's output, not the role's values.

Variants: datacenter, GeForce, time-slicing, MIG, each with the device-plugin pin and 0.18.2
(the previous one, still supported); kube-prometheus-stack and dcgm-exporter do not depend on the
device-plugin pin and are templated with the pinned variants.
"""
import base64
import functools
import importlib.util
import json
import os
import re
import shutil
import subprocess
import tarfile

import pytest
import yaml

from conftest import ROOT, ansible_env, support
from k8s_objects import Validator, crd_files, crd_fixture, crd_schemas, load_docs, namespace_labels, selector_matches

CHART_DIR = os.environ.get("BAREMETAL_GPU_CHART_DIR", "").strip()
KUBE_VERSIONS = ["1.29.0", "1.33.0"]
PASSWORD = "Charts-Test-Passw0rd-5d1e"
EXISTING_SECRET = "site-grafana-admin"
PREVIOUS_DEVICE_PLUGIN = "0.18.2"
NO_CLUSTER_ENV = {
    "K8S_AUTH_HOST": "https://127.0.0.1:9",
    "K8S_AUTH_KUBECONFIG": "/nonexistent/kubeconfig",
    "KUBECONFIG": "/nonexistent/kubeconfig",
    "HELM_DRIVER": "none-such",
}
METRICS_FIXTURES = os.path.join(ROOT, "tests", "fixtures", "dcgm-metrics")
SITE_REGISTRY = "registry.site:5000/mirror"
SITE_PULL_SECRET = "site-pull"
# Per source: NVIDIA's and quay.io's images to paths of their own, the other public ones to SITE_REGISTRY.
SITE_MAP = {"nvcr.io": "registry.site:5000/nvcr", "quay.io": "quay-mirror.site/quay"}


def _module_utils(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "plugins", "module_utils", name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SUPPORT = _module_utils("support")


def _default(role, name):
    with open(os.path.join(ROOT, "roles", role, "defaults", "main.yml"), encoding="utf-8") as fh:
        return str(yaml.safe_load(fh)[name])


PINS = {
    "kube-prometheus-stack": _default("kube_prometheus", "kube_prometheus_chart_version"),
    "dcgm-exporter": SUPPORT.DCGM_EXPORTER["chart_version"],
    "nvidia-device-plugin": _default("device_plugin", "device_plugin_chart_version"),
}
DEVICE_PLUGIN_PINS = [PINS["nvidia-device-plugin"], PREVIOUS_DEVICE_PLUGIN]
NEEDED = ["%s-%s.tgz" % item for item in PINS.items()] + ["nvidia-device-plugin-%s.tgz" % PREVIOUS_DEVICE_PLUGIN]


def _not_run_reason():
    if not CHART_DIR:
        return "BAREMETAL_GPU_CHART_DIR is not set (a directory of the pinned chart tarballs, e.g. ../shared/charts)"
    if not os.path.isdir(CHART_DIR):
        return "BAREMETAL_GPU_CHART_DIR=%s is not a directory" % CHART_DIR
    missing = [n for n in NEEDED if not os.path.isfile(os.path.join(CHART_DIR, n))]
    if missing:
        return "BAREMETAL_GPU_CHART_DIR=%s lacks the pinned chart(s) %s" % (CHART_DIR, ", ".join(missing))
    return ""


pytestmark = pytest.mark.skipif(bool(_not_run_reason()), reason="NOT RUN: " + (_not_run_reason() or "-"))

# ---------------------------------------------------------------- variants

GPU_NODES = {
    # Group -> hosts with the facts the roles read (nvidia_smi for the GPU class, container_toolkit_cdi).
    "gpu_nodes_datacenter": {"dc-gpu-01": {"nvidia_smi": {"gpus": [{"name": "NVIDIA H100 80GB HBM3"}]},
                                           "container_toolkit_cdi": {"enabled": True}}},
    "gpu_nodes_geforce": {"gf-gpu-01": {"nvidia_smi": {"gpus": [{"name": "NVIDIA GeForce RTX 3090"}]},
                                        "container_toolkit_cdi": {"enabled": False}}},
    # Four pools: training keeps whole GPUs (the default), inference shares by MPS or by MIG instances, development
    # by time-slicing.
    "gpu_nodes_pools": {"train-01": {}, "infer-01": {"baremetal_gpu_sharing_profile": "mps2"},
                        "dev-01": {"baremetal_gpu_sharing_profile": "ts4"},
                        "mig-01": {"baremetal_gpu_sharing_profile": "mig7"}},
}
POOLS = {"whole": {"sharing": "none"}, "ts4": {"sharing": "time-slicing", "replicas": 4},
         "mps2": {"sharing": "mps", "replicas": 2}, "mig7": {"sharing": "mig", "mig_layout": "all-1g.10gb"},
         "migmix": {"sharing": "mig", "mig_layout": "balanced", "mig_strategy": "mixed"}}
# The site's MIG layouts (mig-parted's mig-configs) the MIG pools name.
MIG_LAYOUTS = {"all-1g.10gb": [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": 7}}],
               "balanced": [{"devices": "all", "mig-enabled": True,
                             "mig-devices": {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}}]}
COMMON = {"kube_prometheus_grafana_admin_password": PASSWORD}
VARIANTS = {
    # GPU class from the nodes' nvidia_smi facts (auto), NFD auto (render: installed), CDI on: cdi-cri.
    "datacenter": dict(COMMON, cluster_addons_gpu_nodes_group="gpu_nodes_datacenter",
                       dcgm_exporter_custom_metrics=[{"name": "DCGM_FI_DEV_FAN_SPEED", "type": "gauge", "help": "Fan speed."}]),
    # GeForce from the facts, CDI off on the node (envvar), an external NFD that serves the NodeFeature API.
    "geforce": dict(COMMON, cluster_addons_gpu_nodes_group="gpu_nodes_geforce",
                    cluster_addons_render_api_versions=["monitoring.coreos.com/v1", "nfd.k8s-sigs.io/v1alpha1"],
                    device_plugin_nfd="external",
                    kube_prometheus_grafana_service_type="NodePort", kube_prometheus_grafana_node_port="32032"),
    # Time-slicing with the values as -e gives them (strings), explicit class.
    "time-slicing": dict(COMMON, dcgm_exporter_gpu_class="datacenter", device_plugin_nfd="install",
                         device_plugin_time_slicing_enabled="true", device_plugin_time_slicing_replicas="8",
                         device_plugin_time_slicing_rename_by_default="true"),
    # Sharing per node pool (device_plugin_sharing_profiles): one named config per profile, whole GPUs by default.
    "pools": dict(COMMON, dcgm_exporter_gpu_class="datacenter", cluster_addons_gpu_nodes_group="gpu_nodes_pools",
                  device_plugin_nfd="install", device_plugin_sharing_profiles=POOLS, baremetal_gpu_mig_layouts=MIG_LAYOUTS),
    # Air-gapped: every image from the site's registry, its pull secret on every pod (cluster_addons_image_*).
    "airgap": dict(COMMON, cluster_addons_gpu_nodes_group="gpu_nodes_datacenter",
                   cluster_addons_image_registry=SITE_REGISTRY, cluster_addons_image_pull_secrets=[SITE_PULL_SECRET]),
    # The same with a per-source mapping (cluster_addons_image_registry_map), given as -e gives it (JSON text).
    "airgap-map": dict(COMMON, cluster_addons_gpu_nodes_group="gpu_nodes_datacenter",
                       cluster_addons_image_registry=SITE_REGISTRY, cluster_addons_image_registry_map=json.dumps(SITE_MAP),
                       cluster_addons_image_pull_secrets=SITE_PULL_SECRET),
    # MIG single, CDI through annotations, a Grafana admin Secret the site manages.
    "mig": {"dcgm_exporter_gpu_class": "datacenter", "device_plugin_mig_strategy": "single",
            "device_plugin_device_list_strategy": "cdi-annotations",
            "kube_prometheus_grafana_admin_existing_secret": EXISTING_SECRET},
}
EXPECT = {
    "datacenter": {"class": "datacenter", "nfd": True, "strategy": "cdi-cri", "mig": "none", "replicas": None},
    "geforce": {"class": "geforce", "nfd": False, "strategy": "envvar", "mig": "none", "replicas": None},
    "time-slicing": {"class": "datacenter", "nfd": True, "strategy": "cdi-cri", "mig": "none", "replicas": 8},
    "mig": {"class": "datacenter", "nfd": True, "strategy": "cdi-annotations", "mig": "single", "replicas": None},
    "airgap": {"class": "datacenter", "nfd": True, "strategy": "cdi-cri", "mig": "none", "replicas": None},
    "airgap-map": {"class": "datacenter", "nfd": True, "strategy": "cdi-cri", "mig": "none", "replicas": None},
    "pools": {"class": "datacenter", "nfd": True, "strategy": "cdi-cri", "mig": "none", "replicas": None,
              "pools": {"default": "whole", "configs": {"whole": None, "ts4": ("timeSlicing", 4), "mps2": ("mps", 2),
                                                        "mig7": ("mig", "single"), "migmix": ("mig", "mixed")}}},
}
# The mapping variant with the pinned device plugin only (the registry alone is templated with both pins).
HOSTS = ["%s-dp%s" % (v, p) for p in DEVICE_PLUGIN_PINS for v in VARIANTS if v != "airgap-map" or p == DEVICE_PLUGIN_PINS[0]]
FULL_HOSTS = [h for h in HOSTS if h.endswith("-dp" + PINS["nvidia-device-plugin"])]

PLAY = """---
- name: Render the cluster layer of every variant
  hosts: variants
  gather_facts: false
  tasks:
    - name: RuntimeClass
      ansible.builtin.include_role:
        name: baremetal.gpu.runtime_class
    - name: Kube-prometheus-stack
      ansible.builtin.include_role:
        name: baremetal.gpu.kube_prometheus
      when: "'kube_prometheus' in render_roles"
    - name: Device plugin
      ansible.builtin.include_role:
        name: baremetal.gpu.device_plugin
    - name: DCGM exporter
      ansible.builtin.include_role:
        name: baremetal.gpu.dcgm_exporter
      when: "'dcgm_exporter' in render_roles"
"""


def variant_of(host):
    return host.rsplit("-dp", 1)[0]


def pin_of(host):
    return host.rsplit("-dp", 1)[1]


# ---------------------------------------------------------------- rendering and templating

@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("charts")
    hosts = {}
    for host in HOSTS:
        hvars = dict(VARIANTS[variant_of(host)])
        hvars.update({
            "ansible_connection": "local",
            "cluster_addons_render_dir": str(tmp / host),
            "cluster_addons_chart_dir": CHART_DIR,
            "device_plugin_chart_version": pin_of(host),
            "render_roles": ["kube_prometheus", "dcgm_exporter"] if host in FULL_HOSTS else [],
        })
        hosts[host] = hvars
    inventory = {"all": {"children": {"variants": {"hosts": hosts}},
                         "hosts": {}}}
    for group, members in GPU_NODES.items():
        inventory["all"]["children"][group] = {"hosts": members}
    (tmp / "inventory.yml").write_text(yaml.safe_dump(inventory))
    (tmp / "play.yml").write_text(PLAY)
    res = subprocess.run(["ansible-playbook", "-i", str(tmp / "inventory.yml"), "-f", "8", str(tmp / "play.yml")],
                         capture_output=True, text=True, env=ansible_env(NO_CLUSTER_ENV), timeout=900, check=False)
    assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-3000:]
    return {"tmp": tmp, "result": res}


def helm_binary():
    helm = os.path.join(ROOT, ".bin", "helm")
    if not os.path.exists(helm):
        helm = shutil.which("helm")
    # A missing helm fails rather than skips: scripts/setup.sh installs it into .bin/.
    assert helm, "helm not found: run scripts/setup.sh"
    return helm


def release_of(rendered, host, role):
    directory = rendered["tmp"] / host / role
    with open(directory / "release.yaml", encoding="utf-8") as fh:
        return yaml.safe_load(fh), directory


@functools.lru_cache(maxsize=None)
def _helm_template(release_name, chart_file, namespace, values, api_versions, kube_version):
    cmd = [helm_binary(), "template", release_name, chart_file, "--namespace", namespace, "-f", values,
           "--kube-version", kube_version, "--include-crds"]
    for api in api_versions:
        cmd += ["--api-versions", api]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=300)
    assert res.returncode == 0, "%s\n%s" % (" ".join(cmd), res.stderr)
    return tuple(json.dumps(d) for d in load_docs(res.stdout))


def chart_objects(rendered, host, role, kube_version):
    """What `helm template` renders for the role's release, from the role's own release.yaml and values.yaml."""
    rel, directory = release_of(rendered, host, role)
    assert rel["chart_file"] == os.path.join(CHART_DIR, "%s-%s.tgz" % (rel["chart"], rel["version"]))
    docs = _helm_template(rel["release"], rel["chart_file"], rel["namespace"], str(directory / "values.yaml"),
                          tuple(rel["api_versions"]), kube_version)
    return [json.loads(d) for d in docs]


def role_manifests(rendered, host, role):
    out = []
    for path in sorted((rendered["tmp"] / host / role / "manifests").glob("*.yaml")):
        out.extend(load_docs(str(path)))
    return out


def objects(rendered, host, role, kube_version=KUBE_VERSIONS[-1]):
    return chart_objects(rendered, host, role, kube_version) + role_manifests(rendered, host, role)


def by_kind(objs, kind):
    return [o for o in objs if o["kind"] == kind]


def nfd_version(chart_version):
    with tarfile.open(os.path.join(CHART_DIR, "nvidia-device-plugin-%s.tgz" % chart_version)) as tar:
        meta = yaml.safe_load(tar.extractfile("nvidia-device-plugin/charts/node-feature-discovery/Chart.yaml"))
    return meta["version"]


@functools.lru_cache(maxsize=None)
def schemas_for(pin):
    return crd_schemas(crd_files(nfd_version(pin)))


def exporter_labels():
    labels = {SUPPORT.DCGM_EXPORTER["node_label"]}
    for name in os.listdir(METRICS_FIXTURES):
        if name.endswith(".txt"):
            with open(os.path.join(METRICS_FIXTURES, name), encoding="utf-8") as fh:
                for line in fh:
                    if line.startswith("DCGM_"):
                        labels.update(re.findall(r"[{,]([A-Za-z_][A-Za-z0-9_]*)=", line))
    return labels


def csv_fields(text):
    return [line.split(",")[0].strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]


def collectors_file(objs):
    """The counters list the dcgm-exporter container really reads, traced through the chart's output:
    its -f/--collectors argument, else DCGM_EXPORTER_COLLECTORS, else the image default path; then the
    volume mounted there, and the ConfigMap key behind it."""
    ds, = [d for d in by_kind(objs, "DaemonSet") if d["metadata"]["name"].endswith("dcgm-exporter")]
    pod = ds["spec"]["template"]["spec"]
    ctr, = [c for c in pod["containers"] if c["name"] == "exporter"]
    args = [str(a) for a in ctr.get("args") or []]
    env = {e["name"]: e.get("value") for e in ctr.get("env") or []}
    path = None
    for i, arg in enumerate(args):
        if arg in ("-f", "--collectors") and i + 1 < len(args):
            path = args[i + 1]
        elif arg.startswith(("-f=", "--collectors=")):
            path = arg.split("=", 1)[1]
    path = path or env.get("DCGM_EXPORTER_COLLECTORS") or "/etc/dcgm-exporter/default-counters.csv"
    mount = [m for m in ctr.get("volumeMounts") or []
             if m["mountPath"] == path or (not m.get("subPath") and path.startswith(m["mountPath"].rstrip("/") + "/"))]
    assert len(mount) == 1, "the exporter reads %s, which no volume of the pod provides (the image's own file)" % path
    mount = mount[0]
    volume, = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    assert "configMap" in volume, volume
    key = mount.get("subPath") or path[len(mount["mountPath"].rstrip("/")) + 1:]
    items = {i["path"]: i["key"] for i in volume["configMap"].get("items") or []}
    key = items.get(key, key)
    cm, = [c for c in by_kind(objs, "ConfigMap") if c["metadata"]["name"] == volume["configMap"]["name"]]
    return path, cm, cm["data"][key]


# ---------------------------------------------------------------- tests

def test_render_run_hides_the_password(rendered):
    out = rendered["result"].stdout + rendered["result"].stderr
    assert PASSWORD not in out
    assert base64.b64encode(PASSWORD.encode()).decode() not in out


@pytest.mark.parametrize("kube_version", KUBE_VERSIONS)
@pytest.mark.parametrize("host", HOSTS)
def test_every_object_is_valid(rendered, host, kube_version):
    validator = Validator(kube_version, schemas_for(pin_of(host)))
    roles = ["runtime_class", "device_plugin"] + (["kube_prometheus", "dcgm_exporter"] if host in FULL_HOSTS else [])
    counts = {}
    for role in roles:
        objs = (chart_objects(rendered, host, role, kube_version) if role != "runtime_class" else []) \
            + role_manifests(rendered, host, role)
        for obj in objs:
            try:
                kind = validator.validate(obj)
                counts[kind] = counts.get(kind, 0) + 1
            except Exception as exc:  # name the object
                raise AssertionError("%s %s/%s (%s, Kubernetes %s): %s" % (
                    obj.get("apiVersion"), obj.get("kind"), obj["metadata"].get("name"), role, kube_version, exc))
    assert counts.get("builtin", 0) >= (90 if host in FULL_HOSTS else 5), counts
    if host in FULL_HOSTS:
        assert counts.get("crd", 0) >= 30, counts  # Prometheus, Alertmanager, rules, ServiceMonitors


def test_validation_is_real(rendered):
    # The same validators refuse a misspelt DaemonSet field and a PrometheusRule without groups.
    host = FULL_HOSTS[0]
    validator = Validator(KUBE_VERSIONS[0], schemas_for(pin_of(host)))
    ds, = [d for d in by_kind(chart_objects(rendered, host, "device_plugin", KUBE_VERSIONS[0]), "DaemonSet")
           if d["metadata"]["name"] == "nvdp-nvidia-device-plugin"]
    bad = json.loads(json.dumps(ds))
    bad["spec"]["template"]["spec"]["runtimeClass"] = bad["spec"]["template"]["spec"].pop("runtimeClassName")
    with pytest.raises(Exception):
        validator.validate(bad)
    rule = by_kind(role_manifests(rendered, host, "kube_prometheus"), "PrometheusRule")[0]
    bad = dict(rule, spec={"groups": "gpu.rules"})
    with pytest.raises(Exception):
        validator.validate(bad)
    with pytest.raises(AssertionError):
        validator.validate({"apiVersion": "monitoring.coreos.com/v1", "kind": "ThanosRuler", "metadata": {"name": "x"}})


@pytest.mark.parametrize("host", HOSTS)
def test_gpu_daemonsets_run_under_the_runtime_class_the_layer_creates(rendered, host):
    rc, = role_manifests(rendered, host, "runtime_class")
    assert rc["kind"] == "RuntimeClass"
    assert rc["metadata"]["name"] == SUPPORT.RUNTIME_CLASS_NAME and rc["handler"] == SUPPORT.RUNTIME_HANDLER
    gpu_daemonsets = []
    for role in ["device_plugin"] + (["dcgm_exporter"] if host in FULL_HOSTS else []):
        for ds in by_kind(chart_objects(rendered, host, role, KUBE_VERSIONS[-1]), "DaemonSet"):
            if ds["metadata"].get("labels", {}).get("app.kubernetes.io/name") == "node-feature-discovery":
                continue  # NFD's worker reads /sys and /etc; it needs no GPU runtime
            gpu_daemonsets.append(ds)
    names = {d["metadata"]["name"] for d in gpu_daemonsets}
    assert {"nvdp-nvidia-device-plugin", "nvdp-nvidia-device-plugin-gpu-feature-discovery"} <= names, names
    if host in FULL_HOSTS:
        assert "dcgm-exporter" in names
    for ds in gpu_daemonsets:
        assert ds["spec"]["template"]["spec"].get("runtimeClassName") == rc["metadata"]["name"], ds["metadata"]["name"]


@pytest.mark.parametrize("host", HOSTS)
def test_gfd_is_deployed_and_nfd_as_the_role_decides(rendered, host):
    objs = chart_objects(rendered, host, "device_plugin", KUBE_VERSIONS[-1])
    expect = EXPECT[variant_of(host)]
    gfd = [d for d in by_kind(objs, "DaemonSet") if d["metadata"]["name"].endswith("gpu-feature-discovery")]
    assert len(gfd) == 1
    nfd = [o for o in objs if o["metadata"].get("labels", {}).get("app.kubernetes.io/name") == "node-feature-discovery"]
    workers = [o for o in nfd if o["kind"] == "DaemonSet" and o["metadata"]["name"].endswith("worker")]
    masters = [o for o in nfd if o["kind"] == "Deployment" and o["metadata"]["name"].endswith("master")]
    crds = {o["metadata"]["name"] for o in by_kind(objs, "CustomResourceDefinition")}
    if expect["nfd"]:
        assert len(workers) == 1 and len(masters) == 1
        assert "nodefeatures.nfd.k8s-sigs.io" in crds
    else:
        assert not nfd and not crds, [o["metadata"]["name"] for o in nfd]
    env = {e["name"]: e.get("value") for c in gfd[0]["spec"]["template"]["spec"]["containers"]
           if c["name"] == "gpu-feature-discovery-ctr" for e in c.get("env", [])}
    if pin_of(host) == PREVIOUS_DEVICE_PLUGIN:
        # 0.18: GFD writes a feature file that the NFD worker reads from the host.
        assert env.get("GFD_USE_NODE_FEATURE_API") == "false"
    else:
        # 0.19+: GFD publishes NodeFeature objects (no switch left); the role made sure an NFD serves them.
        assert "GFD_USE_NODE_FEATURE_API" not in env
        rel, _dir = release_of(rendered, host, "device_plugin")
        assert expect["nfd"] or "nfd.k8s-sigs.io/v1alpha1" in rel["api_versions"]


def test_gfd_node_feature_object_matches_the_nfd_that_the_chart_brings():
    # The object GFD 0.19+ writes (k8s-device-plugin internal/lm: "nvidia-features-for-<node>", label
    # nfd.node.kubernetes.io/node-name, spec.features empty, spec.labels the GPU labels) against the CRD of
    # the NFD the 0.20 chart vendors: NFD serves exactly what GFD writes.
    obj = {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeature",
           "metadata": {"name": "nvidia-features-for-gpu-01", "namespace": "nvidia-device-plugin",
                        "labels": {"nfd.node.kubernetes.io/node-name": "gpu-01"}},
           "spec": {"features": {"flags": {}, "attributes": {}, "instances": {}},
                    "labels": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.count": "8"}}}
    validator = Validator(KUBE_VERSIONS[-1], schemas_for(PINS["nvidia-device-plugin"]))
    assert validator.validate(obj) == "crd"
    with pytest.raises(Exception):
        validator.validate(dict(obj, spec={"labels": "nvidia.com/gpu.count=8"}))


@pytest.mark.parametrize("host", HOSTS)
def test_device_plugin_settings_reach_the_pods(rendered, host):
    objs = chart_objects(rendered, host, "device_plugin", KUBE_VERSIONS[-1])
    expect = EXPECT[variant_of(host)]
    plugin, = [d for d in by_kind(objs, "DaemonSet") if d["metadata"]["name"] == "nvdp-nvidia-device-plugin"]
    ctr, = [c for c in plugin["spec"]["template"]["spec"]["containers"] if c["name"] == "nvidia-device-plugin-ctr"]
    env = {e["name"]: e.get("value") for e in ctr.get("env", [])}
    assert env["DEVICE_LIST_STRATEGY"] == expect["strategy"]
    assert env["MIG_STRATEGY"] == expect["mig"]
    if expect["strategy"].startswith("cdi"):
        assert any(m["mountPath"] == "/var/run/cdi" for m in ctr.get("volumeMounts", []))
    configs = [c for c in by_kind(objs, "ConfigMap") if c["metadata"]["name"].endswith("-configs")]
    if expect.get("pools"):
        # One named config per profile in the chart's ConfigMap, the default one named, the config-manager sidecar
        # switching by the Node label, and the MPS control daemon with the host's PID namespace (a pool uses MPS).
        cm, = configs
        assert sorted(cm["data"]) == sorted(expect["pools"]["configs"])
        for name, kind in expect["pools"]["configs"].items():
            config = yaml.safe_load(cm["data"][name])
            # A MIG pool's config carries its own strategy; the others keep the cluster's (none).
            assert config["version"] == "v1" and config["flags"]["migStrategy"] == (
                kind[1] if kind and kind[0] == "mig" else "none"), config
            if kind is None or kind[0] == "mig":
                assert "sharing" not in config, config
            else:
                res, = config["sharing"][kind[0]]["resources"]
                assert res == {"name": "nvidia.com/gpu", "replicas": kind[1]}
        pod = plugin["spec"]["template"]["spec"]
        managers = [c for c in pod.get("initContainers", []) + pod["containers"] if c.get("command") == ["config-manager"]]
        assert managers and all({e["name"]: e.get("value") for e in m["env"]}["DEFAULT_CONFIG"] == "whole" for m in managers)
        assert all({e["name"]: e.get("value") for e in m["env"]}["NODE_LABEL"]
                   == "nvidia.com/device-plugin.config" for m in managers)
        mps = [d for d in by_kind(objs, "DaemonSet") if "mps-control-daemon" in d["metadata"]["name"]]
        assert mps and mps[0]["spec"]["template"]["spec"].get("hostPID") is True, [d["metadata"]["name"] for d in mps]
    elif expect["replicas"]:
        cm, = configs
        sharing = yaml.safe_load(cm["data"]["time-slicing"])
        res, = sharing["sharing"]["timeSlicing"]["resources"]
        assert res == {"name": "nvidia.com/gpu", "replicas": expect["replicas"]}
        assert sharing["sharing"]["timeSlicing"]["renameByDefault"] is True
        assert env.get("CONFIG_FILE") == "/config/config.yaml"
    else:
        assert not configs


@pytest.mark.parametrize("host", FULL_HOSTS)
def test_exporter_reads_the_list_of_its_gpu_class(rendered, host):
    objs = objects(rendered, host, "dcgm_exporter")
    path, cm, text = collectors_file(objs)
    fields = csv_fields(text)
    assert "DCGM_FI_DEV_GPU_TEMP" in fields and len(fields) == len(set(fields))
    prof = [f for f in fields if f.startswith("DCGM_FI_PROF_")]
    if EXPECT[variant_of(host)]["class"] == "datacenter":
        assert len(prof) >= 5, fields
        assert "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL" in fields
    else:
        assert prof == [], prof
    # The chart's own ConfigMap carries the list: no unused ConfigMap with other counters is left.
    assert cm["metadata"]["name"] == "exporter-metrics-config-map"
    others = [c for c in by_kind(objs, "ConfigMap") if c is not cm and "DCGM_FI_" in json.dumps(c.get("data", {}))]
    assert others == []
    if variant_of(host) == "datacenter":
        assert "DCGM_FI_DEV_FAN_SPEED" in fields  # the custom metric


def test_the_exporter_keeps_off_a_node_labelled_for_a_gpu_reset(rendered):
    # gpu_health's GPU reset labels the Node (support.EXPORTER_PAUSE) and waits for the pods of its selector to leave:
    # the real chart's DaemonSet must carry the node affinity that keeps off that label, and its pods that selector.
    pause = support().EXPORTER_PAUSE
    ds, = [d for d in by_kind(objects(rendered, FULL_HOSTS[0], "dcgm_exporter"), "DaemonSet")
           if d["metadata"]["name"].endswith("dcgm-exporter")]
    template = ds["spec"]["template"]
    terms = template["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": pause["label"], "operator": "NotIn", "values": [pause["value"]]}]}]
    key, value = pause["selector"].split("=", 1)
    assert template["metadata"]["labels"][key] == value


@pytest.mark.parametrize("pin", DEVICE_PLUGIN_PINS)
def test_the_role_carries_the_charts_own_default_affinity(pin):
    # roles/device_plugin gives the chart its default affinity again (with the pause label's NotIn): the copy must be
    # the real chart's values.yaml default, for each pin.
    with tarfile.open(os.path.join(CHART_DIR, "nvidia-device-plugin-%s.tgz" % pin)) as tar:
        chart = yaml.safe_load(tar.extractfile("nvidia-device-plugin/values.yaml"))["affinity"]
    with open(os.path.join(ROOT, "roles", "device_plugin", "vars", "main.yml"), encoding="utf-8") as handle:
        ours = yaml.safe_load(handle)["__device_plugin_chart_affinity"]
    assert ours == chart


@pytest.mark.parametrize("host", HOSTS)
def test_the_device_plugin_gfd_and_mps_pods_keep_off_a_node_labelled_for_a_mig_change(rendered, host):
    # A MIG layout change (roles/mig_manager) labels the Node (support.DEVICE_PLUGIN_PAUSE) and waits for the pods of
    # its selector to leave: every GPU DaemonSet of the real chart (the plugin, GFD, the MPS control daemon where a
    # pool uses MPS) must carry the chart's default terms, each with the NotIn, and its pods that selector.
    pause = support().DEVICE_PLUGIN_PAUSE
    keep_off = {"key": pause["label"], "operator": "NotIn", "values": [pause["value"]]}
    with open(os.path.join(ROOT, "roles", "device_plugin", "vars", "main.yml"), encoding="utf-8") as handle:
        default = yaml.safe_load(handle)["__device_plugin_chart_affinity"]
    default_terms = default["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    key, value = pause["selector"].split("=", 1)
    daemonsets = [d for d in by_kind(chart_objects(rendered, host, "device_plugin", KUBE_VERSIONS[-1]), "DaemonSet")
                  if d["metadata"].get("labels", {}).get("app.kubernetes.io/name") != "node-feature-discovery"]
    names = sorted(d["metadata"]["name"] for d in daemonsets)
    assert {"nvdp-nvidia-device-plugin", "nvdp-nvidia-device-plugin-gpu-feature-discovery"} <= set(names), names
    if variant_of(host) == "pools":
        assert "nvdp-nvidia-device-plugin-mps-control-daemon" in names, names
    for ds in daemonsets:
        template = ds["spec"]["template"]
        terms = template["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"]
        assert terms == [dict(t, matchExpressions=t["matchExpressions"] + [keep_off]) for t in default_terms], \
            ds["metadata"]["name"]
        assert template["metadata"]["labels"][key] == value, ds["metadata"]["name"]
        assert selector_matches(ds["spec"]["selector"], template["metadata"]["labels"])


@pytest.mark.parametrize("host", FULL_HOSTS)
def test_dashboard_and_alerts_query_only_what_the_exporter_exports(rendered, host):
    _path, _cm, text = collectors_file(objects(rendered, host, "dcgm_exporter"))
    fields = set(csv_fields(text))
    labels = exporter_labels() | {f for f in fields if f.startswith("DCGM_FI_DRIVER")}
    kp = role_manifests(rendered, host, "kube_prometheus")
    dash_cm, = [c for c in by_kind(kp, "ConfigMap") if c["metadata"]["name"] == "nvidia-dcgm-exporter-dashboard"]
    (fname, dash_text), = dash_cm["data"].items()
    dashboard = json.loads(dash_text)
    used = set(re.findall(r"\bDCGM_[A-Z0-9_]+\b", dash_text))
    assert used and used <= fields, sorted(used - fields)
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            for label in re.findall(r"([A-Za-z_][A-Za-z0-9_]*)=~", target["expr"]):
                assert label in labels, (panel["title"], label)
            for label in re.findall(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}", target.get("legendFormat", "")):
                assert label in labels, (panel["title"], label)
    for var in dashboard["templating"]["list"]:
        if var["type"] == "query":
            assert re.search(r"label_values\([^,]+,\s*([A-Za-z_]+)\)", var["query"]).group(1) in labels
    rule, = by_kind(kp, "PrometheusRule")
    alerts = [r for g in rule["spec"]["groups"] for r in g["rules"]]
    for alert in alerts:
        metrics = set(re.findall(r"\bDCGM_[A-Z0-9_]+\b", alert["expr"]))
        assert metrics <= fields, (alert["alert"], metrics - fields)
        if metrics:
            for label in re.findall(r"\$labels\.([A-Za-z_]+)", json.dumps(alert["annotations"])):
                # node: kube-state-metrics; reason, counter: added by the GPU health rules (label_replace).
                assert label in labels | {"node", "reason", "counter"}, (alert["alert"], label)
    names = {a["alert"] for a in alerts}
    if EXPECT[variant_of(host)]["class"] == "geforce":
        assert not names & {"GPUDoubleBitECCError", "GPUECCUncorrectableAggregate", "GPURetiredPagesPending",
                            "GPURowRemapPending", "GPUNVLinkErrors", "GPUNVLinkCRCErrors"}, names
        assert {"GPUXidCritical", "GPUHardwareSlowdown", "GPUPCIeReplays"} <= names
        assert not any(p for p in dashboard["panels"] if "DCGM_FI_PROF_" in json.dumps(p))
    else:
        assert "GPUDoubleBitECCError" in names
        assert "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE" in used
    assert fname == SUPPORT.DCGM_EXPORTER["dashboard"]["file"]


@pytest.mark.parametrize("host", FULL_HOSTS)
def test_prometheus_selects_the_service_monitor_and_the_rule(rendered, host):
    kps = objects(rendered, host, "kube_prometheus")
    dcgm = objects(rendered, host, "dcgm_exporter")
    prometheus, = by_kind(kps, "Prometheus")
    spec = prometheus["spec"]
    namespaces = {n["metadata"]["name"]: namespace_labels(n) for n in by_kind(kps + dcgm, "Namespace")}

    def selected(obj, selector, ns_selector):
        ns = obj["metadata"]["namespace"]
        # A nil namespace selector means the Prometheus object's own namespace only.
        in_ns = (ns == prometheus["metadata"]["namespace"]) if ns_selector is None else \
            selector_matches(ns_selector, namespaces[ns])
        return in_ns and selector_matches(selector, obj["metadata"].get("labels"))

    monitors = [m for m in by_kind(dcgm, "ServiceMonitor") if m["metadata"]["name"] == "dcgm-exporter"]
    assert len(monitors) == 1
    assert selected(monitors[0], spec.get("serviceMonitorSelector"), spec.get("serviceMonitorNamespaceSelector"))
    # And the ServiceMonitor selects the exporter's Service, port "metrics".
    service, = [s for s in by_kind(dcgm, "Service") if s["metadata"]["name"] == "dcgm-exporter"]
    assert selector_matches(monitors[0]["spec"]["selector"], service["metadata"]["labels"])
    assert {e["port"] for e in monitors[0]["spec"]["endpoints"]} <= {p["name"] for p in service["spec"]["ports"]}
    rule, = [r for r in by_kind(kps, "PrometheusRule") if r["metadata"]["name"] == "gpu-alerts"]
    assert selected(rule, spec.get("ruleSelector"), spec.get("ruleNamespaceSelector"))


@pytest.mark.parametrize("host", FULL_HOSTS)
def test_grafana_admin_password_is_the_one_given(rendered, host):
    kps = objects(rendered, host, "kube_prometheus")
    grafana, = [d for d in by_kind(kps, "Deployment") if d["metadata"]["name"].endswith("-grafana")]
    ctr, = [c for c in grafana["spec"]["template"]["spec"]["containers"] if c["name"] == "grafana"]
    ref = {e["name"]: e.get("valueFrom", {}).get("secretKeyRef") for e in ctr["env"]}["GF_SECURITY_ADMIN_PASSWORD"]
    assert ref, "Grafana must read its admin password from a Secret"
    secrets = [s for s in by_kind(kps, "Secret") if s["metadata"]["name"] == ref["name"]]
    if "kube_prometheus_grafana_admin_existing_secret" in VARIANTS[variant_of(host)]:
        assert ref["name"] == EXISTING_SECRET and secrets == []  # the site's own Secret, nothing rendered
    else:
        secret, = secrets
        assert base64.b64decode(secret["data"][ref["key"]]).decode() == PASSWORD
    chart_only = chart_objects(rendered, host, "kube_prometheus", KUBE_VERSIONS[-1])
    assert "admin-password" not in json.dumps(by_kind(chart_only, "Secret"))  # the chart creates no password


@pytest.mark.parametrize("host", FULL_HOSTS)
def test_dashboard_configmap_carries_the_label_the_sidecar_watches(rendered, host):
    kps = objects(rendered, host, "kube_prometheus")
    grafana, = [d for d in by_kind(kps, "Deployment") if d["metadata"]["name"].endswith("-grafana")]
    sidecar, = [c for c in grafana["spec"]["template"]["spec"]["containers"] if c["name"] == "grafana-sc-dashboard"]
    env = {e["name"]: e.get("value") for e in sidecar["env"]}
    cm, = [c for c in by_kind(kps, "ConfigMap") if c["metadata"]["name"] == "nvidia-dcgm-exporter-dashboard"]
    assert cm["metadata"]["labels"][env["LABEL"]] == env["LABEL_VALUE"]
    assert env["NAMESPACE"] == "ALL" or cm["metadata"]["namespace"] in env["NAMESPACE"].split(",")
    for text in cm["data"].values():
        assert json.loads(text)["panels"]


@pytest.mark.parametrize("host", FULL_HOSTS)
def test_grafana_service_as_given(rendered, host):
    kps = chart_objects(rendered, host, "kube_prometheus", KUBE_VERSIONS[-1])
    svc, = [s for s in by_kind(kps, "Service") if s["metadata"]["name"].endswith("-grafana")]
    if variant_of(host) == "geforce":
        assert svc["spec"]["type"] == "NodePort" and svc["spec"]["ports"][0]["nodePort"] == 32032
    else:
        assert svc["spec"]["type"] == "ClusterIP"


@pytest.mark.parametrize("chart,member,fixture", [
    ("kube-prometheus-stack", "kube-prometheus-stack/charts/crds/crds/crd-%s.yaml", "monitoring.coreos.com_%s"),
])
@pytest.mark.parametrize("kind", ["prometheuses", "alertmanagers", "prometheusrules", "servicemonitors", "podmonitors"])
def test_crd_fixtures_are_those_of_the_pinned_chart(chart, member, fixture, kind):
    with tarfile.open(os.path.join(CHART_DIR, "%s-%s.tgz" % (chart, PINS[chart]))) as tar:
        shipped = load_docs(tar.extractfile(member % kind).read().decode())
    carried = load_docs(crd_fixture(fixture % kind))
    assert [d["spec"] for d in shipped] == [d["spec"] for d in carried]


@pytest.mark.parametrize("pin", DEVICE_PLUGIN_PINS)
def test_nfd_crd_fixtures_are_those_of_the_device_plugin_charts(pin):
    with tarfile.open(os.path.join(CHART_DIR, "nvidia-device-plugin-%s.tgz" % pin)) as tar:
        shipped = load_docs(tar.extractfile(
            "nvidia-device-plugin/charts/node-feature-discovery/crds/nfd-api-crds.yaml").read().decode())
    carried = load_docs(crd_files(nfd_version(pin))[-1])
    assert [d["spec"] for d in shipped] == [d["spec"] for d in carried]
    assert {d["spec"]["names"]["kind"] for d in carried} == {"NodeFeature", "NodeFeatureGroup", "NodeFeatureRule"}


# ---------------------------------------------------------------- air-gapped sites (cluster_addons_image_*)

MIRROR = _module_utils("mirror")
# A public registry's name anywhere in a string: an image field, an argument (--prometheus-config-reloader=...), an
# environment variable, a ConfigMap; an image without a registry host is Docker Hub's.
PUBLIC = re.compile(r"(?<![-A-Za-z0-9.])(%s)/" % "|".join(re.escape(r) for r in MIRROR.PUBLIC_REGISTRIES))
ROLES = ["device_plugin", "kube_prometheus", "dcgm_exporter"]
# Pods whose chart renders no imagePullSecrets whatever the values say, per device-plugin pin (their image still
# comes from the site's registry; the node's own registry credentials, RKE2's registries.yaml, must let them pull):
# the NFD subchart of device-plugin 0.18.2 leaves them out of its prune Job, a post-delete hook.
NO_PULL_SECRETS = {PREVIOUS_DEVICE_PLUGIN: ("-node-feature-discovery-prune",)}


def strings(node, path=""):
    if isinstance(node, dict):
        for key, value in node.items():
            yield from strings(value, "%s.%s" % (path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from strings(value, "%s[%d]" % (path, i))
    elif isinstance(node, str):
        yield path, node


def images(node, path=""):
    """Every image a pod or a Prometheus Operator resource names: (path, image)."""
    for where, value in strings(node, path):
        if re.search(r"\.(image|thanosImage|baseImage)$", where):
            yield where, value


def public_references(objs):
    found = []
    for obj in objs:
        name = "%s/%s" % (obj["kind"], obj["metadata"]["name"])
        found += ["%s%s: %s" % (name, where, value[:120]) for where, value in strings(obj) if PUBLIC.search(value)]
        found += ["%s%s: %s (Docker Hub)" % (name, where, value) for where, value in images(obj)
                  if MIRROR.is_public(value) and not PUBLIC.search(value)]
    return found


def pod_specs(objs):
    for obj in objs:
        spec = obj.get("spec") or {}
        if obj["kind"] in ("DaemonSet", "Deployment", "StatefulSet", "Job"):
            yield obj, spec["template"]["spec"]
        elif obj["kind"] == "Pod":
            yield obj, spec


@pytest.mark.parametrize("host", [h for h in HOSTS if variant_of(h).startswith("airgap")])
def test_air_gapped_site_renders_no_public_registry(rendered, host):
    roles = [r for r in ROLES if r == "device_plugin" or host in FULL_HOSTS]
    objs = [o for role in roles for o in objects(rendered, host, role)]
    assert public_references(objs) == []
    named = [value for obj in objs for _where, value in images(obj)]
    mapping = SITE_MAP if variant_of(host) == "airgap-map" else {}
    # Each image is where its source goes: the same objects rendered without a site registry (the datacenter
    # variant, same values otherwise), each image moved by the rule, are these.
    public = [value for obj in [o for role in roles for o in objects(rendered, "datacenter-dp" + pin_of(host), role)]
              for _where, value in images(obj)]
    assert sorted(named) == sorted(MIRROR.mirror_image(value, SITE_REGISTRY, mapping) for value in public)
    prefixes = tuple(t + "/" for t in [SITE_REGISTRY] + list(mapping.values()))
    assert named and all(value.startswith(prefixes) for value in named), named
    if mapping:
        assert any(v.startswith("registry.site:5000/nvcr/nvidia/") for v in named), named
        assert any(v.startswith("quay-mirror.site/quay/prometheus/") for v in named), named
        assert any(v.startswith(SITE_REGISTRY + "/kube-state-metrics/") for v in named), named
    for obj, spec in pod_specs(objs):
        if obj["metadata"]["name"].endswith(NO_PULL_SECRETS.get(pin_of(host), ())):
            assert not spec.get("imagePullSecrets"), "the chart now takes pull secrets here: drop it from NO_PULL_SECRETS"
            continue
        assert {"name": SITE_PULL_SECRET} in (spec.get("imagePullSecrets") or []), obj["metadata"]["name"]


def test_the_public_registry_scan_can_fail(rendered):
    # The same scan over the datacenter variant (no registry set) finds the charts' public images, including an
    # argument and an image without a registry host; the air-gapped test above is not empty by construction.
    host = FULL_HOSTS[0]
    found = public_references([o for role in ROLES for o in objects(rendered, host, role)])
    assert any("nvcr.io/nvidia/k8s-device-plugin" in f for f in found), found
    assert any("--prometheus-config-reloader=quay.io/" in f for f in found), found
    assert any("(Docker Hub)" in f or "docker.io/" in f for f in found), found


@pytest.mark.parametrize("chart,path,default", [
    (chart, path, default) for chart, table in sorted(MIRROR.CHART_IMAGES.items())
    for kind in ("repository", "registry") for path, default in sorted(table.get(kind, {}).items())])
def test_image_table_holds_the_pinned_charts_defaults(chart, path, default):
    # CHART_IMAGES restates where each pinned chart names its images and their default registry: the real chart's
    # values.yaml (the parent's own value first, else its subchart's, as Helm merges them) must agree.
    versions = DEVICE_PLUGIN_PINS if chart == "nvidia-device-plugin" else [PINS[chart]]
    aliases = {"nfd": "node-feature-discovery"}
    for version in versions:
        with tarfile.open(os.path.join(CHART_DIR, "%s-%s.tgz" % (chart, version))) as tar:
            def value(member, keys):
                node = yaml.safe_load(tar.extractfile(member))
                for key in keys:
                    if not isinstance(node, dict) or key not in node:
                        return None
                    node = node[key]
                return node
            keys = path.split(".")
            found = value("%s/values.yaml" % chart, keys)
            if found is None:
                found = value("%s/charts/%s/values.yaml" % (chart, aliases.get(keys[0], keys[0])), keys[1:])
        assert found == default, (chart, version, path, found)


def test_mirror_list_is_what_the_real_charts_render(rendered, tmp_path):
    # playbooks/mirror_list.yml with the datacenter variant's values and a site registry: its images are those the
    # real charts render for the same values (each image field and each argument naming an image, as the air-gapped
    # scan reads them), plus the verify smoke-test image; its charts are the pinned tarballs.
    host = "datacenter-dp" + PINS["nvidia-device-plugin"]
    hvars = dict(VARIANTS["datacenter"], ansible_connection="local", cluster_addons_chart_dir=CHART_DIR,
                 cluster_addons_image_registry=SITE_REGISTRY, mirror_list_dir=str(tmp_path / "list"),
                 cluster_addons_helm_binary_path=helm_binary())
    inventory = {"all": {"hosts": {"localhost": hvars},
                         "children": {group: {"hosts": members} for group, members in GPU_NODES.items()}}}
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump(inventory))
    res = subprocess.run(["ansible-playbook", "-i", str(tmp_path / "inventory.yml"),
                          os.path.join(ROOT, "playbooks", "mirror_list.yml")],
                         capture_output=True, text=True, timeout=900, check=False,
                         # helm template needs a storage driver it knows, even though it stores nothing.
                         env=ansible_env({k: v for k, v in NO_CLUSTER_ENV.items() if k != "HELM_DRIVER"}))
    assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-3000:]
    with open(tmp_path / "list" / "mirror-list.json", encoding="utf-8") as fh:
        listed = json.load(fh)
    expected = set(MIRROR.rendered_images([o for role in ROLES for o in chart_objects(rendered, host, role, KUBE_VERSIONS[-1])]))
    expected.add(_default("verify", "verify_smoke_test_image"))
    assert {i["image"] for i in listed["images"]} == expected
    assert len(expected) >= 12, expected  # kube-prometheus-stack alone names a dozen
    for item in listed["images"]:
        assert item["mirror"] == MIRROR.mirror_image(item["image"], SITE_REGISTRY)
        assert item["mirror"].startswith(SITE_REGISTRY + "/"), item
    assert sorted((c["chart"], c["version"]) for c in listed["charts"]) == sorted(PINS.items())
    text = (tmp_path / "list" / "mirror-list.txt").read_text()
    assert text.count("\n") == len(expected) + len(PINS) + 2
