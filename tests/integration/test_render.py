"""Render mode of the chart roles (device_plugin, kube_prometheus, dcgm_exporter), validated.

There is no Kubernetes cluster and no chart repository here, so every role runs in render mode
(`<role>_render_dir`) against localhost (connection local), with the Kubernetes API and the helm
binary pointed at nothing: a role that tried to contact a cluster would fail. What they write is
then checked:

  - every manifest against the Kubernetes JSON schemas (kubernetes-validate, strict) for each
    supported Kubernetes version, and Prometheus Operator objects against the openAPIV3Schema of
    the CRDs in tests/fixtures/crds (jsonschema);
  - the values.yaml content of each chart (runtimeClassName, gfd/nfd, the four selectors,
    arguments null and no DCGM_FI_PROF_ for GeForce, ...);
  - the dashboard JSON parses and uses only metrics the rendered counters list provides, and only
    labels the exporter emits (tests/fixtures/dcgm-metrics);
  - the PrometheusRule passes `promtool check rules`, and `promtool test rules` runs
    tests/promtool/*.yml against it;
  - the Grafana password never appears in the output, nor in clear in any rendered file;
  - a second run changes nothing, check mode writes nothing, stale manifests are removed.

Both GPU classes are rendered: "datacenter" and "geforce".
"""
import base64
import glob
import json
import os
import re
import shutil
import stat
import subprocess

import jsonschema
import kubernetes_validate
import pytest
import yaml

from conftest import ROOT, run_playbook

K8S_VERSIONS = ["1.29.0", "1.30.0", "1.31.0", "1.32.0", "1.33.0"]
PASSWORD = "Render-Test-Passw0rd-7f3a"
CRD_DIR = os.path.join(ROOT, "tests", "fixtures", "crds")
PROMTOOL_TESTS = sorted(glob.glob(os.path.join(ROOT, "tests", "promtool", "*.yml")))
METRICS_FIXTURES = sorted(glob.glob(os.path.join(ROOT, "tests", "fixtures", "dcgm-metrics", "*.txt")))
ROLES = ["kube_prometheus", "device_plugin", "dcgm_exporter"]

# Nothing to talk to: any attempt to reach a cluster or run helm fails loudly.
NO_CLUSTER_ENV = {
    "K8S_AUTH_HOST": "https://127.0.0.1:9",
    "K8S_AUTH_KUBECONFIG": "/nonexistent/kubeconfig",
    "KUBECONFIG": "/nonexistent/kubeconfig",
    "HELM_DRIVER": "none-such",
}

PLAY = """---
- name: Render the chart roles
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
        "kube_prometheus_dcgm_dashboard_profiling_panels": False,
        "dcgm_exporter_gpu_class": "geforce",
        "dcgm_exporter_custom_metrics": [{"name": "DCGM_FI_DEV_FAN_SPEED"}],
        "device_plugin_time_slicing_enabled": True,
        "device_plugin_time_slicing_replicas": 4,
        "device_plugin_nfd": "external",
        "device_plugin_extra_values": {"gfd": {"noTimestamp": True}},
    },
}


def render(tmp, roles, extra_vars, *args, inventory=None):
    """Write a play applying `roles` in render mode under tmp/<role>; return (result, dirs)."""
    os.makedirs(tmp, exist_ok=True)
    dirs = {role: os.path.join(tmp, "render", role) for role in roles}
    vars_ = dict(extra_vars)
    for role in roles:
        vars_.setdefault("%s_render_dir" % role, dirs[role])
    with open(os.path.join(tmp, "vars.yml"), "w", encoding="utf-8") as fh:
        yaml.safe_dump(vars_, fh)
    play = os.path.join(tmp, "play.yml")
    with open(play, "w", encoding="utf-8") as fh:
        fh.write(PLAY % "\n".join("    - role: baremetal.gpu.%s" % r for r in roles))
    cmd_args = ["-e", "@" + os.path.join(tmp, "vars.yml")] + list(args)
    if inventory:
        inv = os.path.join(tmp, "inventory.yml")
        with open(inv, "w", encoding="utf-8") as fh:
            yaml.safe_dump(inventory, fh)
        cmd = ["ansible-playbook", "-i", inv, play] + cmd_args
        from conftest import ansible_env  # noqa: E402 (same helper module)
        res = subprocess.run(cmd, capture_output=True, text=True, env=ansible_env(NO_CLUSTER_ENV),
                             timeout=600, check=False)
    else:
        res = run_playbook(play, *cmd_args, extra_env=NO_CLUSTER_ENV)
    return res, dirs


def recap(res):
    match = re.search(r"localhost\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", res.stdout)
    assert match, res.stdout[-3000:] + res.stderr[-3000:]
    return {"ok": int(match.group(1)), "changed": int(match.group(2)), "failed": int(match.group(4))}


def load_docs(path):
    with open(path, encoding="utf-8") as fh:
        return [d for d in yaml.safe_load_all(fh) if d is not None]


def load_values(directory):
    with open(os.path.join(directory, "values.yaml"), encoding="utf-8") as fh:
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
    cm = [m for m in by_kind(dirs["dcgm_exporter"], "ConfigMap") if m["metadata"]["name"].endswith("-metrics")]
    assert len(cm) == 1
    return cm[0]["data"]["counters.csv"]


def dashboard(dirs):
    cms = [m for m in by_kind(dirs["kube_prometheus"], "ConfigMap")
           if m["metadata"].get("labels", {}).get("grafana_dashboard") == "1"]
    assert len(cms) == 1, "one ConfigMap labelled grafana_dashboard: \"1\""
    (name, text), = cms[0]["data"].items()
    assert name.endswith(".json")
    return json.loads(text)


def crd_schemas():
    schemas = {}
    for path in glob.glob(os.path.join(CRD_DIR, "*.yaml")):
        crd = load_docs(path)[0]
        for version in crd["spec"]["versions"]:
            key = ("%s/%s" % (crd["spec"]["group"], version["name"]), crd["spec"]["names"]["kind"])
            schemas[key] = version["schema"]["openAPIV3Schema"]
    return schemas


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """Render both scenarios with all three roles, twice (the second run must change nothing)."""
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
    for task in ("Install | Install or upgrade the pinned chart", "Preflight | Look up the RuntimeClass",
                 "Preflight | Read the GPU products from the GFD node labels"):
        for block in re.findall(r"TASK \[[^\]]*%s[^\]]*\] \*+\n(.*?)(?=\nTASK |\nPLAY RECAP)" % re.escape(task),
                                res.stdout, re.S):
            assert "skipping" in block and "ok:" not in block and "changed:" not in block, block


def test_second_render_changes_nothing(scenario):
    name, sc = scenario
    assert sc["second"].returncode == 0, sc["second"].stdout[-3000:]
    assert recap(sc["second"])["changed"] == 0, sc["second"].stdout[-4000:]


def test_rendered_files_and_modes(scenario):
    name, sc = scenario
    expected = {
        "device_plugin": ["01-namespace-nvidia-device-plugin.yaml"],
        "kube_prometheus": ["01-namespace-monitoring.yaml", "02-secret-kube-prometheus-stack-grafana-admin.yaml",
                            "03-configmap-nvidia-dcgm-exporter-dashboard.yaml", "04-prometheusrule-gpu-alerts.yaml"],
        "dcgm_exporter": ["01-namespace-nvidia-dcgm.yaml", "02-configmap-dcgm-exporter-metrics.yaml"],
    }
    for role, directory in sc["dirs"].items():
        files = sorted(os.listdir(os.path.join(directory, "manifests")))
        assert files == expected[role], (role, files)
        for path in [os.path.join(directory, "values.yaml")] + glob.glob(os.path.join(directory, "manifests", "*")):
            assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, path


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


# ---------------------------------------------------------------- schemas

@pytest.mark.parametrize("k8s_version", K8S_VERSIONS)
def test_manifests_match_kubernetes_schemas(scenario, k8s_version):
    name, sc = scenario
    custom = crd_schemas()
    seen = 0
    for role, directory in sc["dirs"].items():
        for fname, obj in manifests(directory).items():
            if (obj["apiVersion"], obj["kind"]) in custom:
                continue
            kubernetes_validate.validate(obj, k8s_version, strict=True)
            seen += 1
    assert seen >= 5


def test_prometheus_operator_objects_match_crd_schemas(scenario):
    name, sc = scenario
    custom = crd_schemas()
    assert ("monitoring.coreos.com/v1", "PrometheusRule") in custom
    checked = 0
    for directory in sc["dirs"].values():
        for obj in manifests(directory).values():
            key = (obj["apiVersion"], obj["kind"])
            if key in custom:
                # Validator class directly: the CRD patterns use Go regex syntax ((?i) mid-pattern) that
                # the metaschema check rejects; no rendered field uses those patterns.
                jsonschema.Draft7Validator(custom[key]).validate(obj)
                checked += 1
    assert checked == 1  # the GPU PrometheusRule (the ServiceMonitor is the chart's own)


# ---------------------------------------------------------------- device_plugin

def test_device_plugin_values(scenario):
    name, sc = scenario
    values = load_values(sc["dirs"]["device_plugin"])
    assert values["runtimeClassName"] == "nvidia"
    assert values["gfd"]["enabled"] is True
    assert values["tolerations"] == [{"key": "CriticalAddonsOnly", "operator": "Exists"},
                                     {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert values["nodeSelector"] == {}
    assert "affinity" not in values  # the chart's NFD/GFD affinity stays
    if name == "datacenter":
        # device_plugin_nfd=auto renders "install" (no cluster to look at).
        assert values["nfd"]["enabled"] is True
        assert values["nfd"]["worker"]["tolerations"] == values["tolerations"]
        assert values["migStrategy"] == "single"
        assert "config" not in values
    else:
        assert values["nfd"] == {"enabled": False}
        assert values["migStrategy"] == "none"
        assert values["gfd"] == {"enabled": True, "noTimestamp": True}  # extra values merged, not replaced
        assert values["config"]["default"] == "time-slicing"
        sharing = yaml.safe_load(values["config"]["map"]["time-slicing"])
        assert sharing == {"version": "v1", "flags": {"migStrategy": "none"},
                           "sharing": {"timeSlicing": {"renameByDefault": False, "failRequestsGreaterThanOne": False,
                                                       "resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}}}


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
    exporter_labels = set()
    for path in METRICS_FIXTURES:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("DCGM_"):
                    exporter_labels.update(re.findall(r"[{,]([A-Za-z_][A-Za-z0-9_]*)=", line))
    assert {"Hostname", "gpu", "UUID", "modelName"} <= exporter_labels
    for panel in dash["panels"]:
        assert panel["datasource"] == "$datasource", panel["title"]
        for target in panel.get("targets", []):
            for label in re.findall(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}", target.get("legendFormat", "")):
                assert label in exporter_labels, (panel["title"], label)
            for label in re.findall(r"([A-Za-z_][A-Za-z0-9_]*)=~", target["expr"]):
                assert label in exporter_labels, (panel["title"], label)
    for var in dash["templating"]["list"]:
        if var["type"] == "query":
            assert var["datasource"] == "$datasource"
            label = re.search(r"label_values\([^,]+,\s*([A-Za-z_]+)\)", var["query"]).group(1)
            assert label in exporter_labels, var["name"]


def test_dashboard_uses_only_listed_metrics(scenario):
    name, sc = scenario
    listed = set(csv_fields(counters(sc["dirs"])))
    used = set(re.findall(r"\bDCGM_[A-Z0-9_]+\b", json.dumps(dashboard(sc["dirs"]))))
    assert used, "the dashboard queries DCGM metrics"
    assert used <= listed, "dashboard metrics missing from the %s counters: %s" % (name, sorted(used - listed))
    if name == "datacenter":
        assert "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE" in used
    else:
        assert not any(m.startswith("DCGM_FI_PROF_") for m in used)


def _rules_dir(sc, tmp_path):
    rule, = by_kind(sc["dirs"]["kube_prometheus"], "PrometheusRule")
    with open(os.path.join(tmp_path, "gpu-alerts.rules.yml"), "w", encoding="utf-8") as fh:
        yaml.safe_dump(rule["spec"], fh)
    return rule


def test_alert_rules_pass_promtool(scenario, tmp_path):
    # A missing promtool fails rather than skips: scripts/setup.sh installs it (Debian's prometheus).
    assert shutil.which("promtool"), "promtool not found: run scripts/setup.sh (Debian package prometheus)"
    name, sc = scenario
    rule = _rules_dir(sc, tmp_path)
    alerts = [r for g in rule["spec"]["groups"] for r in g["rules"]]
    assert {a["alert"] for a in alerts} == {"GPUXidError", "GPUTemperatureHigh", "GPUDoubleBitECCError",
                                            "DCGMExporterDown", "DCGMExporterAbsent", "GPUNodeMetricsMissing"}
    for alert in alerts:
        assert alert["annotations"]["runbook_url"].endswith("#" + alert["alert"].lower()), alert["alert"]
        assert alert["labels"]["severity"] in ("warning", "critical")
    assert 'kube_node_status_capacity{resource="nvidia_com_gpu"}' in next(
        a["expr"] for a in alerts if a["alert"] == "GPUNodeMetricsMissing")
    check = subprocess.run(["promtool", "check", "rules", "gpu-alerts.rules.yml"], cwd=tmp_path,
                           capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "SUCCESS: 6 rules found" in check.stdout
    assert PROMTOOL_TESTS
    for test_file in PROMTOOL_TESTS:
        shutil.copy(test_file, tmp_path)
        unit = subprocess.run(["promtool", "test", "rules", os.path.basename(test_file)], cwd=tmp_path,
                              capture_output=True, text=True, check=False)
        assert unit.returncode == 0, unit.stdout + unit.stderr
        assert "SUCCESS" in unit.stdout


def test_alert_metrics_are_collected_for_datacenter(rendered):
    sc = rendered["datacenter"]
    rule, = by_kind(sc["dirs"]["kube_prometheus"], "PrometheusRule")
    used = set(re.findall(r"\bDCGM_[A-Z0-9_]+\b", json.dumps(rule["spec"])))
    listed = set(csv_fields(counters(sc["dirs"])))
    assert used <= listed, sorted(used - listed)


# ---------------------------------------------------------------- dcgm_exporter

def test_dcgm_exporter_values(scenario):
    name, sc = scenario
    values = load_values(sc["dirs"]["dcgm_exporter"])
    csv = counters(sc["dirs"])
    fields = csv_fields(csv)
    assert values["runtimeClassName"] == "nvidia"
    assert values["serviceMonitor"]["enabled"] is True  # render mode: on unless turned off
    assert values["serviceMonitor"]["honorLabels"] is True
    assert values["kubeletPath"] == "/var/lib/kubelet/pod-resources"
    assert values["nodeSelector"] == {"feature.node.kubernetes.io/pci-10de.present": "true"}
    env = {e["name"]: e["value"] for e in values["extraEnv"]}
    mount, = values["extraVolumeMounts"]
    volume, = values["extraConfigMapVolumes"]
    assert env["DCGM_EXPORTER_COLLECTORS"] == mount["mountPath"] + "/counters.csv"
    assert volume["name"] == mount["name"]
    assert volume["configMap"]["name"] == "dcgm-exporter-metrics"
    assert "DCGM_EXPORTER_KUBERNETES" not in env  # the chart sets it; a duplicate breaks SMP upgrades
    assert len(values["podAnnotations"]["baremetal.gpu/counters-sha256"]) == 64
    assert "DCGM_FI_DEV_FAN_SPEED" in fields and fields.count("DCGM_FI_DEV_FAN_SPEED") == 1
    assert len(fields) == len(set(fields))
    for metric in ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED"):
        assert metric in fields
    if name == "geforce":
        assert "arguments" in values and values["arguments"] is None
        assert "DCGM_FI_PROF_" not in csv
        assert "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL" not in fields
    else:
        assert values["arguments"] == ["-f", env["DCGM_EXPORTER_COLLECTORS"]]
        assert {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"} <= set(fields)
        assert "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL" in fields


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
    values = load_values(dirs["dcgm_exporter"])
    assert ("arguments" in values and values["arguments"] is None) == (expected == "geforce")
    cm, = list(by_kind(dirs["dcgm_exporter"], "ConfigMap"))
    assert cm["metadata"]["labels"]["baremetal.gpu/gpu-class"] == expected


def test_auto_class_from_nvidia_smi_facts_of_gpu_nodes(tmp_path):
    """auto reads gpus[].name from the nvidia_smi result of the hosts of group gpu_nodes."""
    inventory = {"all": {"hosts": {"localhost": {"ansible_connection": "local"}},
                         "children": {"gpu_nodes": {"hosts": {
                             "gpu-01": {"nvidia_smi": {"gpus": [{"name": "NVIDIA A10G"}]}},
                             "gpu-02": {"nvidia_smi": {"gpus": [{"name": "NVIDIA GeForce RTX 3090"},
                                                                {"name": "NVIDIA GeForce RTX 3090"}]}}}}}}}
    res, dirs = render(str(tmp_path), ["dcgm_exporter"], {}, inventory=inventory)
    assert res.returncode == 0, res.stdout[-3000:]
    assert "auto -> geforce (products: NVIDIA A10G, NVIDIA GeForce RTX 3090)" in res.stdout
    assert load_values(dirs["dcgm_exporter"])["arguments"] is None


def test_service_monitor_can_be_turned_off(tmp_path):
    res, dirs = render(str(tmp_path), ["dcgm_exporter"], {"dcgm_exporter_gpu_class": "datacenter",
                                                          "dcgm_exporter_service_monitor_enabled": False})
    assert res.returncode == 0, res.stdout[-3000:]
    assert load_values(dirs["dcgm_exporter"])["serviceMonitor"]["enabled"] is False


def test_check_mode_writes_nothing(tmp_path):
    res, dirs = render(str(tmp_path), ROLES, SCENARIOS["datacenter"], "--check", "--diff")
    assert res.returncode == 0, res.stdout[-3000:]
    assert recap(res)["changed"] > 0
    for directory in dirs.values():
        assert not os.path.exists(directory), directory
    assert PASSWORD not in res.stdout + res.stderr


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


def test_helm_release_refuses_to_run_alone(tmp_path):
    play = os.path.join(str(tmp_path), "play.yml")
    with open(play, "w", encoding="utf-8") as fh:
        fh.write(PLAY % "    - role: baremetal.gpu._helm_release")
    res = run_playbook(play, extra_env=NO_CLUSTER_ENV)
    assert res.returncode != 0
    assert "internal to the chart roles" in res.stdout
