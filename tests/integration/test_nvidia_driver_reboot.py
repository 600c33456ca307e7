"""nvidia_driver's reboot step (tasks/reboot.yml) on this machine, in check mode, with the node facts of a GPU
node whose module does not load: a node that would reboot on every run, and -e strings.

The step runs through include_role tasks_from: reboot.yml. Nothing can reboot here: the play runs in check
mode with a local connection and nvidia_driver_reboot_allow_local false, so the furthest a run can get is the
refusal to reboot the machine running Ansible. The facts are given twice: as gpu_node_facts' fact (this
release) and as the probe fact releases before 0.2.0 read, so the same test runs against both.
"""
import re

import yaml

from conftest import run_playbook

GPU = {"address": "0000:00:06.0", "device_id": "0x2330", "name": "H100 SXM5 80GB", "family": "Hopper",
       "generation": "turing-to-ada"}
REASON = "an NVIDIA GPU is present but no nvidia module is loaded"

PLAY = """---
- name: The reboot step of nvidia_driver on a GPU node whose module does not load
  hosts: localhost
  gather_facts: true
  vars_files:
    - case_vars.yml
  pre_tasks:
    - name: The node facts of a GPU node (a GPU, no module loaded, not a container)
      ansible.builtin.set_fact:
        ansible_facts: "{{ ansible_facts | combine({'gpu_node': __gpu_node}) }}"
        # As this release's decide step registers gpu_node_facts' result.
        __nvidia_driver_gpu_node_facts: {ansible_facts: {gpu_node: "{{ __gpu_node }}"}}
  tasks:
    - name: Run the reboot step
      ansible.builtin.include_role:
        name: baremetal.gpu.nvidia_driver
        tasks_from: reboot.yml
"""


def run(tmp_path, state, extra=(), more=None):
    case = {
        "__gpu_node": {"gpus": [GPU], "nvidia_loaded_version": "", "nvidia_loaded_flavour": "", "nouveau_loaded": False,
                       "container": False, "secure_boot": "disabled"},
        "__nvidia_driver_state": state,
        # What releases before 0.2.0 read instead (files/node_probe.py's output); unused by this release.
        "__nvidia_driver_probe": {"nvidia_pci_devices": [GPU["address"]], "loaded_nvidia_version": "",
                                  "nouveau_loaded": False, "secure_boot": "disabled"},
    }
    case.update(more or {})
    (tmp_path / "case_vars.yml").write_text(yaml.safe_dump(case))
    (tmp_path / "play.yml").write_text(PLAY)
    # Releases before 0.2.0 decided "container" from the virtualization facts in a role variable (this machine is
    # a container): only an extra var overrides that. This release reads the node facts' "container".
    res = run_playbook(str(tmp_path / "play.yml"), "--check", "-e", '{"__nvidia_driver_in_container": false}',
                       *extra, timeout=300)
    return res.returncode, res.stdout + res.stderr


def test_same_reason_after_a_reboot_fails_instead_of_rebooting_again(tmp_path):
    state = {"reboot": {"boot_id": "0f0f0f0f-an-earlier-boot", "reasons": [REASON], "time": "2026-11-22T10:00:00Z"}}
    rc, out = run(tmp_path, state)
    assert rc != 0, out[-3000:]
    assert "Refuse to reboot again for a reason the last reboot did not clear" in out, out[-3000:]
    assert "after that reboot the same still holds: %s" % REASON in out, out[-3000:]
    assert "/var/lib/baremetal-gpu/nvidia_driver/reboot.json" in out
    assert not re.search(r"TASK \[[^\]]*Reboot to load the NVIDIA driver\]", out)


def test_first_reboot_for_a_reason_is_not_refused_as_a_loop(tmp_path):
    # Recorded in this very boot (no reboot happened since): this is the first reboot for it. It stops at the
    # refusal to reboot the machine running Ansible, which is the furthest a run can get here.
    boot_id = open("/proc/sys/kernel/random/boot_id").read().strip()
    rc, out = run(tmp_path, {"reboot": {"boot_id": boot_id, "reasons": [REASON]}})
    assert rc != 0
    assert "the play runs on it with a local connection" in out, out[-3000:]
    assert "still holds" not in out


def test_reboot_disabled_as_an_e_string_only_reports(tmp_path):
    # `-e nvidia_driver_reboot_enabled=false` arrives as the string "false".
    rc, out = run(tmp_path, {}, ["-e", "nvidia_driver_reboot_enabled=false"])
    assert rc == 0, out[-3000:]
    assert "but nvidia_driver_reboot_enabled is false: reboot it yourself (%s)" % REASON in out, out[-3000:]


def test_a_second_driver_change_reboots_despite_the_first_changes_record(tmp_path):
    # The record of the first change (written before its reboot, in another boot) was never removed on
    # the upgrade path; the second change then saw "the same reason again" and failed after apt had installed the
    # new branch. A module installed by this run is a new change: the role goes on to reboot (here it stops at the
    # refusal to reboot the machine running Ansible, the furthest a run can get on this machine).
    state = {"reboot": {"boot_id": "0f0f0f0f-the-first-changes-boot", "time": "2026-11-22T10:00:00Z",
                        "reasons": ["a new driver module was installed",
                                    "the loaded nvidia module is not the installed driver (loaded 570.211.01, "
                                    "installed 580.178.04)"]}}
    more = {"__gpu_node": {"gpus": [GPU], "nvidia_loaded_version": "580.178.04", "nvidia_loaded_flavour": "open",
                           "nouveau_loaded": False, "container": False, "secure_boot": "disabled"},
            "__nvidia_driver_install": {"changed": True}, "nvidia_driver_installed_version": "595.45.04"}
    rc, out = run(tmp_path, state, more=more)
    assert rc != 0
    assert "still holds" not in out, out[-3000:]
    assert "the play runs on it with a local connection" in out, out[-3000:]
    assert "a new driver module was installed; the loaded nvidia module is not the installed driver (loaded " \
           "580.178.04, installed 595.45.04)" in out, out[-3000:]
