"""Render mode of the cluster layer (every cluster component of the support data), validated.

There is no Kubernetes cluster and no chart repository here, so every role runs in render mode
(cluster_addons_render_dir) against localhost (connection local), with the Kubernetes API and the helm
binary pointed at nothing: a role that tried to contact a cluster would fail. What they write is then
checked:

  - every manifest against the Kubernetes JSON schemas (kubernetes-validate, strict) for each
    supported Kubernetes version, and Prometheus Operator objects against the CRDs in tests/fixtures/crds;
  - the values.yaml content of each chart and release.yaml (what `helm template` needs);
  - the dashboard JSON parses and uses only metrics the rendered counters list provides, and only
    labels the exporter emits (tests/fixtures/dcgm-metrics); the alerts query only exported metrics;
  - the PrometheusRule passes `promtool check rules`, and `promtool test rules` runs
    tests/promtool/*.yml against it;
  - the Grafana password never appears in the output (also at -vvv), nor in clear in any rendered file;
  - a second run changes nothing, check mode writes nothing, stale manifests are removed;
  - the local chart source (cluster_addons_chart_dir, <role>_chart_path) with small charts built here,
    the ServiceMonitor/CRD gate, the device list strategy, -e strings.

The same output through the real charts: tests/integration/test_charts.py.
"""
import base64
import glob
import io
import json
import os
import re
import shutil
import stat
import subprocess
import tarfile

import kubernetes_validate
import pytest
import yaml

from conftest import ROOT, ansible_env, chart_pin, run_playbook
from conftest import support as conftest_support
from k8s_objects import Validator, crd_files, crd_schemas, load_docs

K8S_VERSIONS = ["1.29.0", "1.30.0", "1.31.0", "1.32.0", "1.33.0"]
PASSWORD = "Render-Test-Passw0rd-7f3a"
PROMTOOL_TESTS = sorted(glob.glob(os.path.join(ROOT, "tests", "promtool", "*.yml")))
METRICS_FIXTURES = sorted(glob.glob(os.path.join(ROOT, "tests", "fixtures", "dcgm-metrics", "*.txt")))
# The cluster layer's components in install order: the support data's list (plugins/module_utils/support.py).
ROLES = [row["role"] for row in conftest_support().CLUSTER_COMPONENTS]
HEALTH_ALERTS = {"GPUXidCritical", "GPUECCUncorrectableAggregate", "GPURetiredPagesPending", "GPURowRemapPending",
                 "GPURowRemapFailure", "GPUHardwareSlowdown", "GPUPCIeReplays", "GPUNVLinkErrors", "GPUNVLinkCRCErrors"}
ALL_ALERTS = {"GPUXidError", "GPUTemperatureHigh", "GPUDoubleBitECCError", "DCGMExporterDown", "DCGMExporterAbsent",
              "GPUNodeMetricsMissing"} | HEALTH_ALERTS
# GeForce cards have no ECC, page retirement, pending row remapping or NVLink: the GeForce list lacks those fields,
# so the alerts on them are left out. (Row remap failure is in NVIDIA's list for every class: a GeForce card
# reports DCGM's blank value there, which the exporter drops, so that series is absent and its alert stays silent.)
GEFORCE_LEFT_OUT = {"GPUDoubleBitECCError", "GPUECCUncorrectableAggregate", "GPURetiredPagesPending", "GPURowRemapPending",
                    "GPUNVLinkErrors", "GPUNVLinkCRCErrors"}
RUNBOOKS = os.path.join(ROOT, "docs", "runbooks.md")

# Nothing to talk to: any attempt to reach a cluster or run helm fails loudly.
NO_CLUSTER_ENV = {
    "K8S_AUTH_HOST": "https://127.0.0.1:9",
    "K8S_AUTH_KUBECONFIG": "/nonexistent/kubeconfig",
    "KUBECONFIG": "/nonexistent/kubeconfig",
    "HELM_DRIVER": "none-such",
}

PLAY = """---
- name: Render the cluster roles
  hosts: localhost
  gather_facts: false
  roles:
%s
"""

SCENARIOS = {
    "datacenter": {
        "kube_prometheus_grafana_admin_password": PASSWORD,
        "dcgm_exporter_gpu_class": "datacenter",
        "dcgm_exporter_custom_metrics": [{"name": "DCGM_FI_DEV_FAN_SPEED", "type": "gauge", "help": "Fan speed (in %)."}],
        "device_plugin_mig_strategy": "single",
    },
    "geforce": {
        "kube_prometheus_grafana_admin_password": PASSWORD,
        "kube_prometheus_grafana_service_type": "NodePort",
        "kube_prometheus_grafana_node_port": 32032,
        "dcgm_exporter_gpu_class": "geforce",
        "dcgm_exporter_custom_metrics": [{"name": "DCGM_FI_DEV_FAN_SPEED"}],
        "dcgm_exporter_arguments": ["--kubernetes-gpu-id-type", "device-name"],
        "device_plugin_time_slicing_enabled": True,
        "device_plugin_time_slicing_replicas": 4,
        "device_plugin_nfd": "external",
        "device_plugin_chart_version": "0.18.2",
        "device_plugin_device_list_strategy": "envvar",
        "device_plugin_extra_values": {"gfd": {"noTimestamp": True}},
    },
}


def render(tmp, roles, extra_vars, *args, inventory=None, playbook=None):
    """Apply `roles` in render mode (cluster_addons_render_dir=tmp/render); return (result, {role: dir})."""
    os.makedirs(tmp, exist_ok=True)
    base = os.path.join(tmp, "render")
    dirs = {role: os.path.join(base, role) for role in roles}
    vars_ = dict(extra_vars)
    vars_.setdefault("cluster_addons_render_dir", base)
    with open(os.path.join(tmp, "vars.yml"), "w", encoding="utf-8") as fh:
        yaml.safe_dump(vars_, fh)
    play = playbook
    if not play:
        play = os.path.join(tmp, "play.yml")
        with open(play, "w", encoding="utf-8") as fh:
            fh.write(PLAY % "\n".join("    - role: baremetal.gpu.%s" % r for r in roles))
    cmd_args = ["-e", "@" + os.path.join(tmp, "vars.yml")] + list(args)
    if inventory:
        inv = os.path.join(tmp, "inventory.yml")
        with open(inv, "w", encoding="utf-8") as fh:
            yaml.safe_dump(inventory, fh)
        res = subprocess.run(["ansible-playbook", "-i", inv, play] + cmd_args, capture_output=True, text=True,
                             env=ansible_env(NO_CLUSTER_ENV), timeout=600, check=False)
    else:
        res = run_playbook(play, *cmd_args, extra_env=NO_CLUSTER_ENV)
    return res, dirs


def recap(res):
    match = re.search(r"localhost\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", res.stdout)
    assert match, res.stdout[-3000:] + res.stderr[-3000:]
    return {"ok": int(match.group(1)), "changed": int(match.group(2)), "failed": int(match.group(4))}


def load_values(directory):
    with open(os.path.join(directory, "values.yaml"), encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def load_release(directory):
    with open(os.path.join(directory, "release.yaml"), encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def manifests(directory):
    out = {}
    for path in sorted(glob.glob(os.path.join(directory, "manifests", "*.yaml"))):
        docs = load_docs(path)
        assert len(docs) == 1, path
        out[os.path.basename(path)] = docs[0]
    return out


def by_kind(directory, kind):
    return [m for m in manifests(directory).values() if m["kind"] == kind]


def csv_fields(text):
    return [line.split(",")[0].strip() for line in text.splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def counters(dirs):
    """The counters list dcgm_exporter hands the chart (customMetrics: the chart's own ConfigMap)."""
    return load_values(dirs["dcgm_exporter"])["customMetrics"]


def dashboard(dirs):
    cms = [m for m in by_kind(dirs["kube_prometheus"], "ConfigMap")
           if m["metadata"].get("labels", {}).get("grafana_dashboard") == "1"]
    assert len(cms) == 1, "one ConfigMap labelled grafana_dashboard: \"1\""
    (name, text), = cms[0]["data"].items()
    assert name.endswith(".json")
    return json.loads(text)


def alerts_of(directory):
    rule, = by_kind(directory, "PrometheusRule")
    return {r["alert"]: r for g in rule["spec"]["groups"] for r in g["rules"]}


def exporter_labels():
    labels = set()
    for path in METRICS_FIXTURES:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("DCGM_"):
                    labels.update(re.findall(r"[{,]([A-Za-z_][A-Za-z0-9_]*)=", line))
    return labels


def fake_chart(directory, name, version):
    """A packaged chart as `helm package` writes it (<name>-<version>.tgz, <name>/Chart.yaml inside)."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "%s-%s.tgz" % (name, version))
    data = yaml.safe_dump({"apiVersion": "v2", "name": name, "version": version}).encode()
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo("%s/Chart.yaml" % name)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return path


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """Render both scenarios with all four roles, twice (the second run must change nothing)."""
    out = {}
    for name, vars_ in SCENARIOS.items():
        tmp = str(tmp_path_factory.mktemp("render-%s" % name))
        first, dirs = render(tmp, ROLES, vars_)
        second, _dirs = render(tmp, ROLES, vars_)
        out[name] = {"first": first, "second": second, "dirs": dirs, "vars": vars_}
    return out


@pytest.fixture(scope="module", params=sorted(SCENARIOS))
def scenario(request, rendered):
    return request.param, rendered[request.param]


# ---------------------------------------------------------------- runs

def test_render_succeeds_without_a_cluster(scenario):
    name, sc = scenario
    res = sc["first"]
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-4000:]
    assert recap(res)["changed"] > 0
    # The cluster tasks were skipped, never attempted.
    # (The Install | tasks are in a file whose include is skipped: they never even start.)
    assert "Install | " not in res.stdout
    for task in ("Install the release", "Preflight | Look up the RuntimeClass",
                 "Preflight | Wait for the Kubernetes API to answer", "Preflight | Read the RuntimeClass if it exists",
                 "Preflight | Read the GPU products from the GFD node labels"):
        blocks = re.findall(r"TASK \[[^\]]*%s[^\]]*\] \*+\n(.*?)(?=\nTASK |\nPLAY RECAP)" % re.escape(task), res.stdout, re.S)
        assert blocks, task
        for block in blocks:
            assert "skipping" in block and "ok:" not in block and "changed:" not in block, block


def test_second_render_changes_nothing(scenario):
    name, sc = scenario
    assert sc["second"].returncode == 0, sc["second"].stdout[-3000:]
    assert recap(sc["second"])["changed"] == 0, sc["second"].stdout[-4000:]


def test_rendered_files_and_modes(scenario):
    name, sc = scenario
    expected = {
        "runtime_class": ["01-runtimeclass-nvidia.yaml"],
        "device_plugin": ["01-namespace-nvidia-device-plugin.yaml"],
        "kube_prometheus": ["01-namespace-monitoring.yaml", "02-secret-kube-prometheus-stack-grafana-admin.yaml",
                            "03-configmap-nvidia-dcgm-exporter-dashboard.yaml", "04-prometheusrule-gpu-alerts.yaml"],
        "dcgm_exporter": ["01-namespace-nvidia-dcgm.yaml"],
    }
    for role, directory in sc["dirs"].items():
        files = sorted(os.listdir(os.path.join(directory, "manifests")))
        assert files == expected[role], (role, files)
        tops = sorted(f for f in os.listdir(directory) if f != "manifests")
        assert tops == ([] if role == "runtime_class" else ["release.yaml", "values.yaml"]), (role, tops)
        assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700
        for path in glob.glob(os.path.join(directory, "*.yaml")) + glob.glob(os.path.join(directory, "manifests", "*")):
            assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, path


def test_release_yaml_says_what_helm_template_needs(scenario):
    name, sc = scenario
    # The pins the roles carry (a chart bump does not touch this test); the geforce settings ask for 0.18.2.
    pins = {"kube_prometheus": ("kube-prometheus-stack", "kube-prometheus-stack", "monitoring",
                                chart_pin("kube_prometheus")),
            "device_plugin": ("nvdp", "nvidia-device-plugin", "nvidia-device-plugin",
                              "0.18.2" if name == "geforce" else chart_pin("device_plugin")),
            "dcgm_exporter": ("dcgm-exporter", "dcgm-exporter", "nvidia-dcgm", chart_pin("dcgm_exporter"))}
    for role, (release, chart, namespace, version) in pins.items():
        rel = load_release(sc["dirs"][role])
        assert (rel["release"], rel["chart"], rel["namespace"], rel["version"]) == (release, chart, namespace, version)
        assert rel["chart_file"] is None and rel["repository"].startswith("https://") and rel["chart_ref"] == chart
        assert rel["api_versions"] == ["monitoring.coreos.com/v1"]  # cluster_addons_render_api_versions
        with open(os.path.join(sc["dirs"][role], "values.yaml"), encoding="utf-8") as fh:
            assert "--version %s" % version in fh.read()


def test_grafana_password_never_in_clear(scenario):
    name, sc = scenario
    for res in (sc["first"], sc["second"]):
        assert PASSWORD not in res.stdout + res.stderr
        assert base64.b64encode(PASSWORD.encode()).decode() not in res.stdout + res.stderr
    for directory in sc["dirs"].values():
        for path in glob.glob(os.path.join(directory, "**", "*.yaml"), recursive=True):
            with open(path, encoding="utf-8") as fh:
                assert PASSWORD not in fh.read(), path
    values = load_values(sc["dirs"]["kube_prometheus"])
    assert "adminPassword" not in values["grafana"]
    secret, = by_kind(sc["dirs"]["kube_prometheus"], "Secret")
    assert values["grafana"]["admin"] == {
        "existingSecret": secret["metadata"]["name"],
        "userKey": "admin-user",
        "passwordKey": "admin-password",
    }
    assert base64.b64decode(secret["data"]["admin-password"]).decode() == PASSWORD
    assert base64.b64decode(secret["data"]["admin-user"]).decode() == "admin"
    assert secret["metadata"]["namespace"] == "monitoring"


# Jinja's delimiters, a percent sign and both quotes: given `!unsafe`, as docs/troubleshooting.md says a secret with
# `{{` or `{#` must be (Ansible templates every other variable: `{#...#}` would be cut out, `{{x}}` fail and be echoed).
TRICKY = "Graf-{{pw}}-{#c#}-%-'q'-\"d\"-91"


def test_cluster_layer_at_vvv_never_prints_the_password(tmp_path):
    """Defect 14.2: the whole cluster layer (playbooks/cluster_addons.yml) in render mode at -vvv."""
    secret_file = tmp_path / "secret.yml"
    secret_file.write_text("kube_prometheus_grafana_admin_password: !unsafe %s\n" % json.dumps(TRICKY))
    res, dirs = render(str(tmp_path), ROLES, {"dcgm_exporter_gpu_class": "datacenter"}, "-e", "@%s" % secret_file,
                       "-vvv", playbook=os.path.join(ROOT, "playbooks", "cluster_addons.yml"))
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-3000:]
    out = res.stdout + res.stderr
    assert "Grafana admin" in out or "grafana-admin" in out  # the Secret's task ran at -vvv
    for shown in (TRICKY, "Graf-", base64.b64encode(TRICKY.encode()).decode()):
        assert shown not in out
    # The password reached the Secret exactly: nothing cut out, nothing templated.
    assert base64.b64decode(by_kind(dirs["kube_prometheus"], "Secret")[0]["data"]["admin-password"]).decode() == TRICKY


# ---------------------------------------------------------------- schemas

@pytest.mark.parametrize("k8s_version", K8S_VERSIONS)
def test_manifests_match_kubernetes_schemas(scenario, k8s_version):
    name, sc = scenario
    validator = Validator(k8s_version, crd_schemas(crd_files()))
    seen = {}
    for directory in sc["dirs"].values():
        for obj in manifests(directory).values():
            kind = validator.validate(obj)
            seen[kind] = seen.get(kind, 0) + 1
    assert seen == {"builtin": 6, "crd": 1}, seen  # RuntimeClass, 3 namespaces, Secret, dashboard; the PrometheusRule


def test_schema_check_is_real(rendered):
    obj, = by_kind(rendered["datacenter"]["dirs"]["runtime_class"], "RuntimeClass")
    for bad in ({**obj, "handlers": "nvidia"}, {k: v for k, v in obj.items() if k != "handler"}):
        with pytest.raises(kubernetes_validate.utils.ValidationError):
            kubernetes_validate.validate(bad, K8S_VERSIONS[-1], strict=True)


# ---------------------------------------------------------------- runtime_class

def test_runtime_class(scenario):
    name, sc = scenario
    rc, = by_kind(sc["dirs"]["runtime_class"], "RuntimeClass")
    assert rc == {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
                  "metadata": {"name": "nvidia", "labels": {"app.kubernetes.io/managed-by": "baremetal.gpu",
                                                            "app.kubernetes.io/part-of": "baremetal.gpu"}},
                  "handler": "nvidia"}


def test_one_runtime_class_name_for_every_role(tmp_path):
    res, dirs = render(str(tmp_path), ROLES, dict(SCENARIOS["datacenter"]), "-e", "baremetal_gpu_runtime_class_name=gpu-runtime")
    assert res.returncode == 0, res.stdout[-3000:]
    rc, = by_kind(dirs["runtime_class"], "RuntimeClass")
    assert rc["metadata"]["name"] == "gpu-runtime" and rc["handler"] == "nvidia"
    assert load_values(dirs["device_plugin"])["runtimeClassName"] == "gpu-runtime"
    assert load_values(dirs["dcgm_exporter"])["runtimeClassName"] == "gpu-runtime"


# ---------------------------------------------------------------- device_plugin

def test_device_plugin_values(scenario):
    name, sc = scenario
    values = load_values(sc["dirs"]["device_plugin"])
    assert values["runtimeClassName"] == "nvidia"
    assert values["gfd"]["enabled"] is True
    assert values["tolerations"] == [{"key": "CriticalAddonsOnly", "operator": "Exists"},
                                     {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert values["nodeSelector"] == {}
    # The chart's own NFD/GFD affinity terms, each also off a Node paused for a MIG change (test_charts.py compares
    # the terms with the real chart's).
    pause = conftest_support().DEVICE_PLUGIN_PAUSE
    terms = values["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert [t["matchExpressions"][0]["key"] for t in terms] == [
        "feature.node.kubernetes.io/pci-10de.present", "feature.node.kubernetes.io/cpu-model.vendor_id",
        "nvidia.com/gpu.present"]
    assert all(t["matchExpressions"][1:] == [{"key": pause["label"], "operator": "NotIn", "values": [pause["value"]]}]
               for t in terms), terms
    if name == "datacenter":
        # device_plugin_nfd=auto renders "install" (no cluster to look at); CDI: auto without facts is cdi-cri.
        assert values["nfd"]["enabled"] is True
        assert values["nfd"]["worker"]["tolerations"] == values["tolerations"]
        assert values["migStrategy"] == "single"
        assert values["deviceListStrategy"] == "cdi-cri"
        assert "config" not in values
    else:
        assert values["nfd"] == {"enabled": False}
        assert values["migStrategy"] == "none"
        assert values["deviceListStrategy"] == "envvar"
        assert values["gfd"] == {"enabled": True, "noTimestamp": True}  # extra values merged, not replaced
        assert values["config"]["default"] == "time-slicing"
        sharing = yaml.safe_load(values["config"]["map"]["time-slicing"])
        assert sharing == {"version": "v1", "flags": {"migStrategy": "none"},
                           "sharing": {"timeSlicing": {"renameByDefault": False, "failRequestsGreaterThanOne": False,
                                                       "resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}}}


def test_cli_strings_work(tmp_path):
    """-e key=value gives strings: booleans and numbers are read with | bool / | int."""
    res, dirs = render(str(tmp_path), ["device_plugin", "kube_prometheus"], {},
                       "-e", "device_plugin_time_slicing_enabled=true", "-e", "device_plugin_time_slicing_replicas=8",
                       "-e", "device_plugin_gfd_enabled=false", "-e", "kube_prometheus_grafana_admin_password=" + PASSWORD,
                       "-e", "kube_prometheus_grafana_service_type=NodePort", "-e", "kube_prometheus_grafana_node_port=32000",
                       "-e", "kube_prometheus_dcgm_dashboard_enabled=false", "-e", "cluster_addons_wait_timeout=60",
                       "-e", "device_plugin_device_list_strategy=envvar,volume-mounts")
    assert res.returncode == 0, res.stdout[-3000:]
    values = load_values(dirs["device_plugin"])
    assert yaml.safe_load(values["config"]["map"]["time-slicing"])["sharing"]["timeSlicing"]["resources"][0]["replicas"] == 8
    assert values["gfd"]["enabled"] is False
    assert values["deviceListStrategy"] == "envvar,volume-mounts"
    assert load_values(dirs["kube_prometheus"])["grafana"]["service"] == {"type": "NodePort", "nodePort": 32000}
    assert not by_kind(dirs["kube_prometheus"], "ConfigMap")


def test_device_list_strategy_follows_the_gpu_nodes_cdi_fact(tmp_path):
    inventory = {"all": {"hosts": {"localhost": {"ansible_connection": "local"}},
                         "children": {"gpu_nodes": {"hosts": {
                             "gpu-01": {"container_toolkit_cdi": {"enabled": True}},
                             "gpu-02": {"container_toolkit_cdi": {"enabled": False}}}}}}}
    res, dirs = render(str(tmp_path), ["device_plugin"], {}, inventory=inventory)
    assert res.returncode == 0, res.stdout[-3000:]
    assert load_values(dirs["device_plugin"])["deviceListStrategy"] == "envvar"
    assert "CDI is off on gpu-02" in res.stdout
    inventory["all"]["children"]["gpu_nodes"]["hosts"]["gpu-02"]["container_toolkit_cdi"]["enabled"] = "true"
    res, dirs = render(str(tmp_path), ["device_plugin"], {}, inventory=inventory)
    assert res.returncode == 0, res.stdout[-3000:]
    assert load_values(dirs["device_plugin"])["deviceListStrategy"] == "cdi-cri"


def test_device_list_strategy_follows_the_runtime_that_runs_the_gpu_pods(tmp_path):
    """A GPU node whose RKE2 runs containerd 1.7 without enable_cdi (the fact rke2_nvidia_runtime publishes, as
    containerd.reads_cdi reads RKE2's generated config): auto takes envvar and names it; cdi-cri, given with -e as a
    user types it, is refused before anything is written."""
    old = {"reads_cdi": False, "version": "1.7.27-k3s1",
           "reason": "containerd 1.7.27-k3s1 reads CDI specs only with enable_cdi = true in its CRI plugin: not set"}
    inventory = {"all": {"hosts": {"localhost": {"ansible_connection": "local"}},
                         "children": {"gpu_nodes": {"hosts": {
                             "gpu-01": {"rke2_nvidia_runtime_cdi": {"reads_cdi": True, "version": "2.2.2", "reason": "on"}},
                             "gpu-02": {"rke2_nvidia_runtime_cdi": old}}}}}}
    res, dirs = render(str(tmp_path / "auto"), ["device_plugin"], {}, inventory=inventory)
    assert res.returncode == 0, res.stdout[-3000:]
    assert load_values(dirs["device_plugin"])["deviceListStrategy"] == "envvar"
    assert "the container runtime reads no CDI specs on gpu-02 (containerd 1.7.27-k3s1" in res.stdout, res.stdout[-3000:]
    res, dirs = render(str(tmp_path / "asked"), ["device_plugin"], {}, "-e", "device_plugin_device_list_strategy=cdi-cri",
                       inventory=inventory)
    assert res.returncode != 0
    assert "cdi-cri, but the container runtime of these GPU nodes reads no CDI specs" in res.stdout, res.stdout[-3000:]
    assert not os.path.exists(dirs["device_plugin"]), os.listdir(os.path.dirname(dirs["device_plugin"]))


def test_external_nfd_for_gfd_node_feature_api(tmp_path):
    # 0.20 with an external NFD: accepted once the cluster is declared to serve the NodeFeature API.
    vars_ = {"device_plugin_nfd": "external",
             "cluster_addons_render_api_versions": ["monitoring.coreos.com/v1", "nfd.k8s-sigs.io/v1alpha1"]}
    res, dirs = render(str(tmp_path), ["device_plugin"], vars_)
    assert res.returncode == 0, res.stdout[-3000:]
    assert load_values(dirs["device_plugin"])["nfd"] == {"enabled": False}
    assert load_release(dirs["device_plugin"])["api_versions"] == vars_["cluster_addons_render_api_versions"]


# ---------------------------------------------------------------- kube_prometheus

def test_kube_prometheus_values(scenario):
    name, sc = scenario
    values = load_values(sc["dirs"]["kube_prometheus"])
    spec = values["prometheus"]["prometheusSpec"]
    for key in ("serviceMonitorSelectorNilUsesHelmValues", "podMonitorSelectorNilUsesHelmValues",
                "ruleSelectorNilUsesHelmValues", "probeSelectorNilUsesHelmValues"):
        assert spec[key] is False, key
    assert values["grafana"]["sidecar"]["dashboards"] == {
        "enabled": True, "label": "grafana_dashboard", "labelValue": "1", "searchNamespace": "ALL"}
    if name == "geforce":
        assert values["grafana"]["service"] == {"type": "NodePort", "nodePort": 32032}
    else:
        assert values["grafana"]["service"] == {"type": "ClusterIP"}


def test_dashboard_datasource_and_labels(scenario):
    name, sc = scenario
    dash = dashboard(sc["dirs"])
    variables = {v["name"]: v for v in dash["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    assert "${DS_PROMETHEUS}" not in json.dumps(dash)
    labels = exporter_labels()
    assert {"Hostname", "gpu", "UUID", "modelName"} <= labels
    for panel in dash["panels"]:
        assert panel["datasource"] == "$datasource", panel["title"]
        for target in panel.get("targets", []):
            for label in re.findall(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}", target.get("legendFormat", "")):
                assert label in labels, (panel["title"], label)
            for label in re.findall(r"([A-Za-z_][A-Za-z0-9_]*)=~", target["expr"]):
                assert label in labels, (panel["title"], label)
    for var in dash["templating"]["list"]:
        if var["type"] == "query":
            assert var["datasource"] == "$datasource"
            label = re.search(r"label_values\([^,]+,\s*([A-Za-z_]+)\)", var["query"]).group(1)
            assert label in labels, var["name"]


def test_dashboard_and_alerts_use_only_listed_metrics(scenario):
    name, sc = scenario
    listed = set(csv_fields(counters(sc["dirs"])))
    used = set(re.findall(r"\bDCGM_[A-Z0-9_]+\b", json.dumps(dashboard(sc["dirs"]))))
    assert used, "the dashboard queries DCGM metrics"
    assert used <= listed, "dashboard metrics missing from the %s counters: %s" % (name, sorted(used - listed))
    alerts = alerts_of(sc["dirs"]["kube_prometheus"])
    in_alerts = set(re.findall(r"\bDCGM_[A-Z0-9_]+\b", json.dumps(alerts)))
    assert in_alerts <= listed, sorted(in_alerts - listed)
    if name == "datacenter":
        assert "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE" in used
        assert set(alerts) == ALL_ALERTS
    else:
        # GeForce: no profiling panel (kube_prometheus_dcgm_dashboard_profiling_panels auto), no ECC alert.
        assert not any(m.startswith("DCGM_FI_PROF_") for m in used)
        assert set(alerts) == ALL_ALERTS - GEFORCE_LEFT_OUT


def test_dashboard_profiling_panels_setting(tmp_path):
    vars_ = dict(SCENARIOS["datacenter"])
    for setting, expect_prof in (("false", False), ("auto", True)):
        vars_["kube_prometheus_dcgm_dashboard_profiling_panels"] = setting
        res, dirs = render(str(tmp_path), ["kube_prometheus"], vars_)
        assert res.returncode == 0, res.stdout[-3000:]
        assert ("DCGM_FI_PROF_" in json.dumps(dashboard(dirs))) == expect_prof, setting
    # geforce with true: kept on request.
    vars_.update({"dcgm_exporter_gpu_class": "geforce", "kube_prometheus_dcgm_dashboard_profiling_panels": True})
    res, dirs = render(str(tmp_path), ["kube_prometheus"], vars_)
    assert res.returncode == 0, res.stdout[-3000:]
    assert "DCGM_FI_PROF_" in json.dumps(dashboard(dirs))


def test_kube_prometheus_alone_without_gpu_facts_keeps_everything(tmp_path):
    res, dirs = render(str(tmp_path), ["kube_prometheus"], {"kube_prometheus_grafana_admin_password": PASSWORD})
    assert res.returncode == 0, res.stdout[-3000:]
    assert "dcgm-exporter GPU class unknown" in res.stdout
    assert set(alerts_of(dirs["kube_prometheus"])) == ALL_ALERTS
    assert "DCGM_FI_PROF_" in json.dumps(dashboard(dirs))


def test_alert_rules_pass_promtool(scenario, tmp_path):
    # A missing promtool fails rather than skips: scripts/setup.sh installs it (Debian's prometheus).
    assert shutil.which("promtool"), "promtool not found: run scripts/setup.sh (Debian package prometheus)"
    name, sc = scenario
    rule, = by_kind(sc["dirs"]["kube_prometheus"], "PrometheusRule")
    with open(os.path.join(tmp_path, "gpu-alerts.rules.yml"), "w", encoding="utf-8") as fh:
        yaml.safe_dump(rule["spec"], fh)
    alerts = alerts_of(sc["dirs"]["kube_prometheus"])
    labels = exporter_labels()
    for alert in alerts.values():
        assert alert["annotations"]["runbook_url"].endswith("#" + alert["alert"].lower()), alert["alert"]
        assert alert["labels"]["severity"] in ("warning", "critical")
        if alert["alert"] in HEALTH_ALERTS:
            # Only labels the exporter emits, and those the rule itself adds.
            used = set(re.findall(r"\$labels\.([A-Za-z_]+)", alert["annotations"]["description"]))
            assert used <= labels | {"reason", "counter"}, (alert["alert"], used - labels)
            assert "absent" not in alert["expr"], alert["alert"]
    assert 'kube_node_status_capacity{resource="nvidia_com_gpu"}' in alerts["GPUNodeMetricsMissing"]["expr"]
    check = subprocess.run(["promtool", "check", "rules", "gpu-alerts.rules.yml"], cwd=tmp_path,
                           capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "SUCCESS: %d rules found" % len(alerts) in check.stdout
    assert PROMTOOL_TESTS
    dropped_all, tested_all = set(), set()
    for test_file in PROMTOOL_TESTS:
        # The unit tests of alerts this render leaves out (GeForce: no ECC alert) are dropped, and only those.
        with open(test_file, encoding="utf-8") as fh:
            suite = yaml.safe_load(fh)
        for case in suite["tests"]:
            tested = {t["alertname"] for t in case.get("alert_rule_test", [])}
            dropped_all.update(tested - set(alerts))
            tested_all.update(tested & set(alerts))
            case["alert_rule_test"] = [t for t in case.get("alert_rule_test", []) if t["alertname"] in alerts]
        with open(os.path.join(tmp_path, os.path.basename(test_file)), "w", encoding="utf-8") as fh:
            yaml.safe_dump(suite, fh)
        unit = subprocess.run(["promtool", "test", "rules", os.path.basename(test_file)], cwd=tmp_path,
                              capture_output=True, text=True, check=False)
        assert unit.returncode == 0, unit.stdout + unit.stderr
        assert "SUCCESS" in unit.stdout
    # Every alert of the render has promtool cases; only the alerts this render leaves out were dropped.
    assert tested_all == set(alerts), sorted(set(alerts) - tested_all)
    assert dropped_all == (set() if name == "datacenter" else GEFORCE_LEFT_OUT), dropped_all


def github_anchors(markdown):
    """The anchors GitHub gives the headings of a Markdown text: the rule of the link test of the project's Markdown
    (tests/unit/test_doc_links.py, imported by path), so that both read a heading the same way."""
    import importlib.util  # pylint: disable=import-outside-toplevel
    spec = importlib.util.spec_from_file_location("baremetal_gpu_doc_links",
                                                  os.path.join(ROOT, "tests", "unit", "test_doc_links.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.anchors(markdown)


def test_alert_runbooks_are_sections_of_the_runbooks_page(rendered):
    """Each GPU alert, health alerts included, links to a section of the collection's docs/runbooks.md, at the
    repository galaxy.yml names."""
    with open(os.path.join(ROOT, "galaxy.yml"), encoding="utf-8") as fh:
        repository = yaml.safe_load(fh)["repository"]
    with open(os.path.join(ROOT, "roles", "kube_prometheus", "defaults", "main.yml"), encoding="utf-8") as fh:
        defaults = yaml.safe_load(fh)
    base = defaults["kube_prometheus_gpu_health_runbook_base_url"]
    assert base == defaults["kube_prometheus_runbook_base_url"] == repository + "/blob/main/docs/runbooks.md"
    with open(RUNBOOKS, encoding="utf-8") as fh:
        anchors = github_anchors(fh.read())
    alerts = alerts_of(rendered["datacenter"]["dirs"]["kube_prometheus"])
    assert set(HEALTH_ALERTS) < set(alerts)
    for name, alert in alerts.items():
        url = alert["annotations"]["runbook_url"]
        assert url.startswith(base + "#"), url
        assert url.split("#", 1)[1] in anchors, url


def test_health_alerts_switch_and_exporter_list(tmp_path):
    # Without the health group: the other GPU alerts stay.
    vars_ = dict(SCENARIOS["datacenter"], kube_prometheus_gpu_health_alerts_enabled=False)
    res, dirs = render(str(tmp_path / "off"), ["kube_prometheus"], vars_)
    assert res.returncode == 0, res.stdout[-3000:]
    rule, = by_kind(dirs["kube_prometheus"], "PrometheusRule")
    assert [g["name"] for g in rule["spec"]["groups"]] == ["gpu.rules"]
    assert set(alerts_of(dirs["kube_prometheus"])) == ALL_ALERTS - HEALTH_ALERTS
    # Without the exporter's health fields: only the alerts on fields NVIDIA's list has anyway.
    vars_ = dict(SCENARIOS["datacenter"], dcgm_exporter_health_metrics_enabled=False)
    res, dirs = render(str(tmp_path / "nofields"), ["kube_prometheus", "dcgm_exporter"], vars_)
    assert res.returncode == 0, res.stdout[-3000:]
    kept = {"GPUXidCritical", "GPURowRemapFailure", "GPUPCIeReplays"}
    assert set(alerts_of(dirs["kube_prometheus"])) & HEALTH_ALERTS == kept
    fields = set(csv_fields(counters(dirs)))
    assert "DCGM_FI_DEV_ROW_REMAP_PENDING" not in fields and "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS" not in fields


# ---------------------------------------------------------------- dcgm_exporter

def test_dcgm_exporter_values(scenario):
    name, sc = scenario
    values = load_values(sc["dirs"]["dcgm_exporter"])
    csv = counters(sc["dirs"])
    fields = csv_fields(csv)
    assert values["runtimeClassName"] == "nvidia"
    assert values["serviceMonitor"]["enabled"] is True  # monitoring.coreos.com/v1 is declared (default)
    assert values["serviceMonitor"]["honorLabels"] is True
    assert values["kubeletPath"] == "/var/lib/kubelet/pod-resources"
    assert values["nodeSelector"] == {"feature.node.kubernetes.io/pci-10de.present": "true"}
    # The list is the chart's own ConfigMap (customMetrics), mounted where -f points.
    mount, = values["extraVolumeMounts"]
    volume, = values["extraConfigMapVolumes"]
    assert values["arguments"][:2] == ["-f", mount["mountPath"]]
    assert volume["name"] == mount["name"]
    assert volume["configMap"]["name"] == "exporter-metrics-config-map"
    assert volume["configMap"]["items"] == [{"key": "metrics", "path": mount["subPath"]}]
    assert "extraEnv" not in values  # DCGM_EXPORTER_KUBERNETES comes from the chart; a duplicate breaks SMP upgrades
    assert len(values["podAnnotations"]["baremetal.gpu/counters-sha256"]) == 64
    assert "DCGM_FI_DEV_FAN_SPEED" in fields and fields.count("DCGM_FI_DEV_FAN_SPEED") == 1
    assert len(fields) == len(set(fields))
    for metric in ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED"):
        assert metric in fields
    # The GPU health alerts' fields (dcgm_exporter_health_metrics_enabled, default true).
    assert "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS" in fields
    health_datacenter = {"DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", "DCGM_FI_DEV_RETIRED_PENDING", "DCGM_FI_DEV_ROW_REMAP_PENDING",
                         "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
                         "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL"}
    if name == "geforce":
        assert values["arguments"][2:] == ["--kubernetes-gpu-id-type", "device-name"]  # dcgm_exporter_arguments
        assert "DCGM_FI_PROF_" not in csv
        assert "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL" not in fields
        assert not health_datacenter & set(fields)
    else:
        assert values["arguments"] == ["-f", mount["mountPath"]]
        assert {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"} <= set(fields)
        assert "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL" in fields
        assert health_datacenter <= set(fields)


def test_known_field_names_cover_the_counters_lists():
    files = os.path.join(ROOT, "roles", "dcgm_exporter", "files")
    with open(os.path.join(files, "dcgm-field-names.txt"), encoding="utf-8") as fh:
        known = {line.strip() for line in fh if line.strip() and not line.startswith("#")}
    for name in ("dcp-metrics-included.csv", "geforce-counters.csv"):
        with open(os.path.join(files, name), encoding="utf-8") as fh:
            assert set(csv_fields(fh.read())) <= known, name
    assert "DCGM_FI_DEV_FAN_SPEED" in known


@pytest.mark.parametrize("products,expected", [
    (["NVIDIA GeForce RTX 3090"], "geforce"),
    (["NVIDIA A100-SXM4-80GB", "Tesla T4"], "datacenter"),
    (["NVIDIA RTX A5000"], "geforce"),
    (["Quadro P2000"], "geforce"),
    (["NVIDIA H100 80GB HBM3", "NVIDIA GeForce GTX 1070 Ti"], "geforce"),
])
def test_auto_class_from_products(tmp_path, products, expected):
    res, dirs = render(str(tmp_path), ["dcgm_exporter"], {"dcgm_exporter_gpu_products": products})
    assert res.returncode == 0, res.stdout[-3000:]
    assert ("DCGM_FI_PROF_" in counters(dirs)) == (expected == "datacenter")
    assert 'GPU class "%s"' % expected in counters(dirs)


def test_auto_class_from_nvidia_smi_facts_of_gpu_nodes(tmp_path):
    """auto reads gpus[].name from the nvidia_smi result of the hosts of cluster_addons_gpu_nodes_group."""
    inventory = {"all": {"hosts": {"localhost": {"ansible_connection": "local"}},
                         "children": {"gpu_nodes": {"hosts": {
                             "gpu-01": {"nvidia_smi": {"gpus": [{"name": "NVIDIA A10G"}]}},
                             "gpu-02": {"nvidia_smi": {"gpus": [{"name": "NVIDIA GeForce RTX 3090"},
                                                                {"name": "NVIDIA GeForce RTX 3090"}]}}}}}}}
    res, dirs = render(str(tmp_path), ["kube_prometheus", "dcgm_exporter"],
                       {"kube_prometheus_grafana_admin_password": PASSWORD}, inventory=inventory)
    assert res.returncode == 0, res.stdout[-3000:]
    assert "auto -> geforce (products: NVIDIA A10G, NVIDIA GeForce RTX 3090)" in res.stdout
    assert "DCGM_FI_PROF_" not in counters(dirs)
    # kube_prometheus follows the same decision: no profiling panel, no ECC alert.
    assert "DCGM_FI_PROF_" not in json.dumps(dashboard(dirs))
    assert "GPUDoubleBitECCError" not in alerts_of(dirs["kube_prometheus"])


def test_service_monitor_gate_in_render_mode(tmp_path):
    base = {"dcgm_exporter_gpu_class": "datacenter"}
    res, dirs = render(str(tmp_path), ["dcgm_exporter"], dict(base, dcgm_exporter_service_monitor_enabled=False))
    assert res.returncode == 0, res.stdout[-3000:]
    assert load_values(dirs["dcgm_exporter"])["serviceMonitor"]["enabled"] is False
    # A cluster declared without the monitoring.coreos.com CRDs: refused, or left out on request.
    no_crds = dict(base, cluster_addons_render_api_versions=[])
    res, dirs = render(str(tmp_path), ["dcgm_exporter"], no_crds)
    assert res.returncode != 0
    assert "servicemonitors.monitoring.coreos.com is not declared in cluster_addons_render_api_versions" in res.stdout
    res, dirs = render(str(tmp_path), ["dcgm_exporter"], dict(no_crds, dcgm_exporter_service_monitor_skip_if_crd_missing=True))
    assert res.returncode == 0, res.stdout[-3000:]
    assert load_values(dirs["dcgm_exporter"])["serviceMonitor"]["enabled"] is False
    assert "installing without a ServiceMonitor" in res.stdout


# ---------------------------------------------------------------- chart source

def test_local_chart_directory(tmp_path):
    charts = str(tmp_path / "charts")
    pin = chart_pin("device_plugin")
    fake_chart(charts, "nvidia-device-plugin", pin)
    res, dirs = render(str(tmp_path), ["device_plugin"], {"cluster_addons_chart_dir": charts + "/"})
    assert res.returncode == 0, res.stdout[-3000:]
    assert load_release(dirs["device_plugin"])["chart_file"] == "%s/nvidia-device-plugin-%s.tgz" % (charts, pin)
    with open(os.path.join(dirs["device_plugin"], "values.yaml"), encoding="utf-8") as fh:
        assert "helm upgrade --install nvdp %s/nvidia-device-plugin-%s.tgz" % (charts, pin) in fh.read()
    # The pinned version is missing: refused before anything is written, naming the variable and the file.
    res, dirs = render(str(tmp_path / "b"), ["device_plugin"], {"cluster_addons_chart_dir": charts,
                                                                "device_plugin_chart_version": "0.18.2"})
    assert res.returncode != 0
    assert "cluster_addons_chart_dir: %s/nvidia-device-plugin-0.18.2.tgz does not exist" % charts in res.stdout
    assert not os.path.exists(dirs["device_plugin"])


def test_local_chart_must_be_the_pinned_one(tmp_path):
    wrong = fake_chart(str(tmp_path / "charts"), "nvidia-device-plugin", "0.17.1")
    res, dirs = render(str(tmp_path), ["device_plugin"], {"device_plugin_chart_path": wrong})
    assert res.returncode != 0
    assert "device_plugin_chart_path: %s" % wrong in res.stdout
    pin = chart_pin("device_plugin")
    assert "is chart nvidia-device-plugin 0.17.1, not nvidia-device-plugin %s" % pin in res.stdout.replace("\n", " ")
    directory = tmp_path / "chartdir" / "nvidia-device-plugin"
    directory.mkdir(parents=True)
    (directory / "Chart.yaml").write_text("apiVersion: v2\nname: nvidia-device-plugin\nversion: %s\n" % pin)
    res, dirs = render(str(tmp_path), ["device_plugin"], {"device_plugin_chart_path": str(directory)})
    assert res.returncode == 0, res.stdout[-3000:]
    assert load_release(dirs["device_plugin"])["chart_file"] == str(directory)


# ---------------------------------------------------------------- modes

def test_check_mode_writes_nothing(tmp_path):
    res, dirs = render(str(tmp_path), ROLES, SCENARIOS["datacenter"], "--check", "--diff")
    assert res.returncode == 0, res.stdout[-3000:]
    assert recap(res)["changed"] > 0
    for directory in dirs.values():
        assert not os.path.exists(directory), directory
    assert PASSWORD not in res.stdout + res.stderr
    assert base64.b64encode(PASSWORD.encode()).decode() not in res.stdout + res.stderr


def test_stale_manifests_are_removed(tmp_path):
    vars_ = dict(SCENARIOS["datacenter"])
    res, dirs = render(str(tmp_path), ["kube_prometheus"], vars_)
    assert res.returncode == 0
    assert len(os.listdir(os.path.join(dirs["kube_prometheus"], "manifests"))) == 4
    vars_.update({"kube_prometheus_gpu_alerts_enabled": False, "kube_prometheus_dcgm_dashboard_enabled": False})
    res, dirs = render(str(tmp_path), ["kube_prometheus"], vars_)
    assert res.returncode == 0, res.stdout[-3000:]
    assert sorted(os.listdir(os.path.join(dirs["kube_prometheus"], "manifests"))) == [
        "01-namespace-monitoring.yaml", "02-secret-kube-prometheus-stack-grafana-admin.yaml"]


def test_existing_secret_needs_no_password(tmp_path):
    res, dirs = render(str(tmp_path), ["kube_prometheus"], {"kube_prometheus_grafana_admin_existing_secret": "my-grafana-admin"})
    assert res.returncode == 0, res.stdout[-3000:]
    assert load_values(dirs["kube_prometheus"])["grafana"]["admin"]["existingSecret"] == "my-grafana-admin"
    assert by_kind(dirs["kube_prometheus"], "Secret") == []


def test_cluster_addons_refuses_to_run_alone(tmp_path):
    play = os.path.join(str(tmp_path), "play.yml")
    with open(play, "w", encoding="utf-8") as fh:
        fh.write(PLAY % "    - role: baremetal.gpu.cluster_addons")
    res = run_playbook(play, extra_env=NO_CLUSTER_ENV)
    assert res.returncode != 0
    assert "internal to the cluster roles" in res.stdout


# Slices of the cluster layer by tag and switch (docs/install.md, "Run everything, or one layer"): each component's tasks carry
# its role name. Before --tags device_plugin ran nothing at all (the API-host pick was untagged).
@pytest.mark.parametrize("args, expected", [
    (["--tags", "device_plugin"], ["device_plugin"]),
    (["--skip-tags", "kube_prometheus"], [role for role in ROLES if role != "kube_prometheus"]),
    (["-e", "cluster_addons_dcgm_exporter_enabled=false"], [role for role in ROLES if role != "dcgm_exporter"]),
])
def test_cluster_layer_slices_by_tag_and_switch(tmp_path, args, expected):
    res, dirs = render(str(tmp_path), ROLES, {"dcgm_exporter_gpu_class": "datacenter",
                                              "kube_prometheus_grafana_admin_password": PASSWORD}, *args,
                       playbook=os.path.join(ROOT, "playbooks", "cluster_addons.yml"))
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-3000:]
    rendered = [role for role in ROLES if os.path.isdir(os.path.join(dirs[role], "manifests"))]
    assert rendered == expected, res.stdout[-3000:]


# The cluster contract's settings are typed by cluster_addons' api_host entry point (its argument_specs; the
# component switches written there from the support data): a bad one is refused at the first play, naming it, before
# anything is rendered or contacted.
@pytest.mark.parametrize("args, named", [
    (["-e", "cluster_addons_dcgm_exporter_enabled=maybe"], "cluster_addons_dcgm_exporter_enabled"),
    (["-e", "cluster_kubeconfig=rke2.yaml"], "cluster_kubeconfig must be an absolute path"),
])
def test_cluster_contract_refuses_bad_settings_before_anything(tmp_path, args, named):
    res, dirs = render(str(tmp_path), ROLES, {"dcgm_exporter_gpu_class": "datacenter",
                                              "kube_prometheus_grafana_admin_password": PASSWORD}, *args,
                       playbook=os.path.join(ROOT, "playbooks", "cluster_addons.yml"))
    out = res.stdout + res.stderr
    assert res.returncode != 0, out[-3000:]
    assert named in out, out[-3000:]
    assert "api_host" in out.lower().replace(" ", "_")     # refused by the api_host entry point
    assert not any(os.path.isdir(path) for path in dirs.values())
