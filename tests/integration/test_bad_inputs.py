"""Bad inputs are refused before anything changes.

Each file tests/integration/bad_inputs/<role>.yml is a YAML list of cases:

    - name: branch is not a number          # test id
      role: nvidia_driver                    # role under test (defaults to the file name)
      vars: {nvidia_driver_branch: "abc"}   # role variables
      facts: {distribution: Gentoo}          # optional: overrides merged into ansible_facts
      expect: "nvidia_driver_branch"         # substring the failure output must contain
      tags: [nvidia_driver_preflight]        # optional: only run these tags
      cli: {nvidia_driver_branch: "abc"}     # optional: also passed as -e name=value (strings, as users type them)
      e_strings: true                        # optional: also run the case with every var passed as
                                             # -e key=value, i.e. as a string (scalar vars only)

The runner applies the role to localhost (connection local) in **check mode**, with
facts gathered from this machine (once per test session: gathering them again in each of the
two hundred runs took half of each run's CPU) and then the case's overrides merged in, and asserts:
  - the play failed (rc != 0),
  - the failure output contains `expect`,
  - the recap shows changed=0, so nothing was (or would have been) changed before the refusal,
  - the failing task is the argument-spec validation or a task tagged as preflight
    (its name contains "Preflight" or "Validating arguments").
"""
import glob
import os
import re

import pytest
import yaml

from conftest import run_playbook

CASES = []
for path in sorted(glob.glob(os.path.join(os.path.dirname(__file__), "bad_inputs", "*.yml"))):
    default_role = os.path.splitext(os.path.basename(path))[0]
    with open(path, encoding="utf-8") as fh:
        for case in yaml.safe_load(fh) or []:
            case.setdefault("role", default_role)
            CASES.append(pytest.param(case, id="%s: %s" % (case["role"], case["name"])))
            if case.get("e_strings"):
                CASES.append(pytest.param(dict(case, as_extra_vars=True),
                                          id="%s: %s (-e strings)" % (case["role"], case["name"])))

PLAY = """---
- name: Bad input case
  hosts: localhost
  gather_facts: false
  vars_files:
    - case_vars.yml
  pre_tasks:
    - name: This machine's facts (gathered once per session), with the case's overrides merged in
      ansible.builtin.set_fact:
        ansible_facts: "{{ lookup('ansible.builtin.file', __machine_facts) | from_json | combine(__case_facts, recursive=true) }}"
  roles:
    - role: baremetal.gpu.%s
"""

GATHER = """---
- name: Gather this machine's facts once for every case
  hosts: localhost
  gather_facts: true
  tasks:
    - name: Write them
      ansible.builtin.copy:
        content: "{{ ansible_facts | to_json }}"
        dest: "{{ out }}"
        mode: "0600"
"""


@pytest.fixture(scope="session")
def machine_facts(tmp_path_factory):
    """This machine's facts as a play gathers them (ansible_facts), in a JSON file."""
    tmp = tmp_path_factory.mktemp("facts")
    (tmp / "gather.yml").write_text(GATHER)
    out = tmp / "facts.json"
    res = run_playbook(str(tmp / "gather.yml"), "-e", "out=%s" % out, timeout=300)
    assert res.returncode == 0 and out.exists(), res.stdout + res.stderr
    return str(out)


FAILED_TASK = re.compile(r"^TASK \[(?P<name>[^\]]*)\]", re.M)


@pytest.mark.parametrize("case", CASES)
def test_bad_input_refused(case, tmp_path, machine_facts):
    vars_ = dict(case.get("vars") or {})
    extra = []
    if case.get("as_extra_vars"):
        # As `-e key=value` on the command line: every value arrives as a string.
        for key, value in sorted(vars_.items()):
            assert not isinstance(value, (dict, list)), "e_strings cases take scalar vars only"
            extra += ["-e", "%s=%s" % (key, str(value).lower() if isinstance(value, bool) else value)]
        vars_ = {}
    vars_["__case_facts"] = case.get("facts") or {}
    vars_["__machine_facts"] = machine_facts
    (tmp_path / "case_vars.yml").write_text(yaml.safe_dump(vars_))
    (tmp_path / "play.yml").write_text(PLAY % case["role"])
    args = ["--check"] + extra
    for name, value in (case.get("cli") or {}).items():
        args += ["-e", "%s=%s" % (name, value)]
    if case.get("tags"):
        args += ["--tags", ",".join(case["tags"])]
    res = run_playbook(str(tmp_path / "play.yml"), *args, timeout=300)
    out = res.stdout + res.stderr
    assert res.returncode != 0, "case %r was accepted:\n%s" % (case["name"], out[-3000:])
    assert case["expect"] in out, "expected %r in the failure output:\n%s" % (case["expect"], out[-3000:])
    recap = re.search(r"localhost\s*:\s*ok=\d+\s+changed=(\d+)", out)
    assert recap and recap.group(1) == "0", "something changed before the refusal:\n%s" % out[-3000:]
    # The last task started before the failure is where the input was refused.
    head = out.split("fatal:")[0] if "fatal:" in out else out.split("failed:")[0]
    tasks = FAILED_TASK.findall(head)
    assert tasks, out[-3000:]
    last = tasks[-1]
    assert ("Validating arguments" in last or "reflight" in last), (
        "refused too late, in task %r (should be argument_specs or preflight)" % last)
