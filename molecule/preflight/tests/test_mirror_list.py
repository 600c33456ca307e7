"""playbooks/mirror_list.yml on the five fresh nodes: the host packages each operating system needs, read, not changed.

The chart components are switched off here (the chart side is tested against the real charts in
tests/integration/test_charts.py); what runs for real is the host side: nvidia_driver's decision with apt's answers
from the real archives (a private probe: the nodes' own sources lack the components the driver comes from) and
container_toolkit's pinned packages. Each list is checked against the node read independently (its release, its
kernel), and each node's apt and dpkg state must be the same after the run as before it.
"""
import json
import os
import subprocess

import pytest
import testinfra
import testinfra.utils.ansible_runner
import yaml

INVENTORY = os.environ["MOLECULE_INVENTORY_FILE"]
PROJECT = os.environ.get("MOLECULE_PROJECT_DIRECTORY", os.path.join(os.path.dirname(__file__), "..", "..", ".."))
HOSTS = testinfra.utils.ansible_runner.AnsibleRunner(INVENTORY).get_hosts("all")
# What must not change on a node: apt's sources, keys and settings, the package database and the role's records.
STATE = ("find /etc/apt /var/lib/dpkg/status /var/lib/baremetal-gpu -type f 2>/dev/null | sort | xargs md5sum; "
         "dpkg --get-selections | md5sum")
with open(os.path.join(PROJECT, "roles", "container_toolkit", "defaults", "main.yml"), encoding="utf-8") as _fh:
    TOOLKIT = yaml.safe_load(_fh)


# Every node in a MIG pool whose nvidia-mig-manager comes from a site's mirror (the file is never fetched here).
MIG_DEB = "https://mirror.site/mig-parted/nvidia-mig-manager_0.15.0-1_amd64.deb"
MIG_CHECKSUM = "sha256:" + "ab" * 32
MIG = {"device_plugin_sharing_profiles": {"mig7": {"sharing": "mig", "mig_layout": "all-1g.10gb"}},
       "baremetal_gpu_sharing_profile": "mig7",
       "baremetal_gpu_mig_layouts": {"all-1g.10gb": [{"devices": "all", "mig-enabled": True,
                                                      "mig-devices": {"1g.10gb": 7}}]},
       "mig_manager_package": MIG_DEB, "mig_manager_package_checksum": MIG_CHECKSUM}


def node(name):
    return testinfra.get_host("podman://" + name)


@pytest.fixture(scope="module")
def listed(tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("mirror-list")
    before = {name: node(name).check_output(STATE) for name in HOSTS}
    res = subprocess.run(
        ["ansible-playbook", "-i", INVENTORY, os.path.join(PROJECT, "playbooks", "mirror_list.yml"),
         "-e", "mirror_list_dir=%s" % out_dir, "-e", "mirror_list_hosts=all",
         "-e", "cluster_addons_kube_prometheus_enabled=false", "-e", "cluster_addons_device_plugin_enabled=false",
         "-e", "cluster_addons_dcgm_exporter_enabled=false", "-e", json.dumps(MIG)],
        capture_output=True, text=True, timeout=900, check=False,
        env=dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0"))
    assert res.returncode == 0, res.stdout[-5000:] + res.stderr[-2000:]
    with open(out_dir / "mirror-list.json", encoding="utf-8") as fh:
        data = json.load(fh)
    return {"data": data, "text": (out_dir / "mirror-list.txt").read_text(), "output": res.stdout,
            "before": before}


def test_nothing_on_the_nodes_changed(listed):
    for name in HOSTS:
        assert "%s " % name in listed["output"]
        recap = [line for line in listed["output"].splitlines() if line.startswith(name + " ")][-1]
        assert "changed=0" in recap and "failed=0" in recap, recap
        assert node(name).check_output(STATE) == listed["before"][name], name


def test_one_entry_per_operating_system_named_as_the_node_says(listed):
    groups = listed["data"]["host_packages"]
    assert sorted(h for g in groups for h in g["hosts"]) == sorted(HOSTS)
    for group in groups:
        assert len(group["hosts"]) == 1 and not group["errors"], group
        osr = dict(line.split("=", 1) for line in node(group["hosts"][0]).file("/etc/os-release").content_string
                   .splitlines() if "=" in line)
        name, version_id, codename = (osr[k].strip('"') for k in ("NAME", "VERSION_ID", "VERSION_CODENAME"))
        assert group["os"].startswith("%s %s" % (name.split()[0], version_id)), (group["os"], osr)
        assert "(%s)" % codename in group["os"] and group["archive"]["suites"][0] == codename


def test_the_driver_packages_name_the_nodes_kernel_and_apt_versions(listed):
    for group in listed["data"]["host_packages"]:
        host = node(group["hosts"][0])
        kernels = host.check_output("ls /boot | sed -n 's/^vmlinuz-//p'").split()
        assert len(kernels) == 1, kernels
        packages = group["archive"]["packages"]
        names = [p.split("=")[0] for p in packages]
        if group["os"].startswith("Ubuntu"):
            # Canonical's prebuilt module of the node's own kernel, at the kernel's version; every package pinned to
            # the version apt's probe of the real archive named.
            module = [p for p in packages if p.startswith("linux-modules-nvidia-") and p.split("=")[0].endswith(kernels[0])]
            assert len(module) == 1 and module[0].split("=")[1].startswith(kernels[0].rsplit("-", 1)[0]), packages
            assert all("=" in p for p in packages), packages
            assert group["archive"]["components"] == ["main", "restricted", "universe", "multiverse"]
        else:
            # Debian builds the module (DKMS): the kernel's headers and the DKMS package.
            assert "linux-headers-%s" % kernels[0] in names and "nvidia-kernel-dkms" in names, packages
            assert "non-free" in group["archive"]["components"]
        assert "initramfs-tools" in names


def test_the_toolkit_packages_are_pinned_to_the_roles_version(listed):
    for group in listed["data"]["host_packages"]:
        assert group["toolkit"]["repository"] == TOOLKIT["container_toolkit_repo_base_url"] + "/stable"
        assert sorted(p.split("=")[1] for p in group["toolkit"]["packages"]) == [
            TOOLKIT["container_toolkit_version"] + "-1"] * 4


def test_the_text_lists_each_package_once_under_its_os(listed):
    lines = listed["text"].splitlines()
    groups = listed["data"]["host_packages"]
    for group in groups:
        header = [i for i, line in enumerate(lines) if line.startswith("# host packages of %s " % group["os"])]
        assert len(header) == 1, group["os"]
        body = lines[header[0] + 1:header[0] + 1 + len(group["archive"]["packages"]) + len(group["toolkit"]["packages"])]
        assert body == (["%s archive" % p for p in group["archive"]["packages"]]
                        + ["%s %s" % (p, group["toolkit"]["repository"]) for p in group["toolkit"]["packages"]])


def test_the_nodes_with_a_mig_layout_list_nvidia_mig_managers_file(listed):
    """Every node is in the MIG pool here (MIG): each operating system lists mig_manager_package's file, once."""
    lines = listed["text"].splitlines()
    for group in listed["data"]["host_packages"]:
        assert group["mig_manager"] == {"hosts": group["hosts"], "unnamed": [],
                                        "files": [{"file": MIG_DEB, "checksum": MIG_CHECKSUM}]}, group
        header = lines.index("# nvidia-mig-manager for the MIG layouts of %s: 1 file(s) of NVIDIA's mig-parted releases "
                             "(https://github.com/NVIDIA/mig-parted/releases)" % group["hosts"][0])
        assert lines[header + 1] == "%s %s" % (MIG_DEB, MIG_CHECKSUM)
