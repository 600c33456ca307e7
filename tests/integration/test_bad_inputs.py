"""Bad inputs are refused before anything changes.

Each file tests/integration/bad_inputs/<role>.yml is a YAML list of cases:

    - name: branch is not a number          # test id
      role: nvidia_driver                    # role under test (defaults to the file name)
      vars: {nvidia_driver_branch: "abc"}   # role variables
      facts: {distribution: Gentoo}          # optional: overrides merged into ansible_facts
      expect: "nvidia_driver_branch"         # substring the failure must contain ({host}: the case's host;
                                             # {supported_os}: the OS matrix's keys, as the refusals list them)
      tags: [nvidia_driver_preflight]        # optional: only run these tags
      cli: {nvidia_driver_branch: "abc"}     # optional: also passed as -e name=value (strings, as users type them)
      e_strings: true                        # optional: also run the case with every var passed as
                                             # -e key=value, i.e. as a string (scalar vars only)

The runner applies the role in **check mode** with connection local, with facts gathered from this
machine (once per test session: gathering them again in each run took half of each run's CPU) and then
the case's overrides merged in, and asserts for the case:
  - it failed,
  - its failure contains `expect`,
  - nothing changed for it (changed=0), so nothing was (or would have been) changed before the refusal,
  - the failing task is the argument-spec validation or a task tagged as preflight
    (its name contains "Preflight" or "Validating arguments").
Cases given as plain variables run together, one run per role: each case is a host of its own in that
run's inventory (connection local, its variables as host variables), so each fails or passes on its own, as
the nodes of a fleet do; the results are read per host from the JSON callback (ansible.posix.json). A case
with `cli` or `e_strings` has its own run, since `-e` applies to every host of a run. One run per case cost
about two CPU-seconds of ansible-playbook start-up each, two hundred times (docs/benchmarks.md).
"""
import glob
import json
import os
import subprocess

import pytest
import yaml

from conftest import ansible_env, run_playbook, supported_os

CASES = []
for path in sorted(glob.glob(os.path.join(os.path.dirname(__file__), "bad_inputs", "*.yml"))):
    default_role = os.path.splitext(os.path.basename(path))[0]
    with open(path, encoding="utf-8") as fh:
        for case in yaml.safe_load(fh) or []:
            case.setdefault("role", default_role)
            case["expect"] = case["expect"].replace("{supported_os}", supported_os())
            CASES.append(pytest.param(case, id="%s: %s" % (case["role"], case["name"])))
            if case.get("e_strings"):
                CASES.append(pytest.param(dict(case, as_extra_vars=True),
                                          id="%s: %s (-e strings)" % (case["role"], case["name"])))

PLAY = """---
- name: Bad input case
  hosts: all
  gather_facts: false
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


def run_key(case):
    """Cases with the same key run together; a case passed on the command line runs alone."""
    if case.get("as_extra_vars") or case.get("cli"):
        return (case["role"], case["name"], bool(case.get("as_extra_vars")))
    return (case["role"],)


def case_argv(case):
    """The case's -e arguments: its vars as strings (e_strings), then its cli values."""
    argv = []
    if case.get("as_extra_vars"):
        # As `-e key=value` on the command line: every value arrives as a string.
        for key, value in sorted((case.get("vars") or {}).items()):
            assert not isinstance(value, (dict, list)), "e_strings cases take scalar vars only"
            argv += ["-e", "%s=%s" % (key, str(value).lower() if isinstance(value, bool) else value)]
    for name, value in (case.get("cli") or {}).items():
        argv += ["-e", "%s=%s" % (name, value)]
    return argv


def run_cases(cases, tmp, machine_facts):
    """One check-mode run of the role with each case as a host; {host: (failed task, result, changed)}."""
    hosts = {}
    for index, case in enumerate(cases):
        host_vars = {} if case.get("as_extra_vars") else dict(case.get("vars") or {})
        host_vars.update({"ansible_connection": "local", "__case_facts": case.get("facts") or {},
                          "__machine_facts": machine_facts})
        hosts["case%03d" % index] = host_vars
    (tmp / "hosts.yml").write_text(yaml.safe_dump({"all": {"hosts": hosts}}))
    (tmp / "play.yml").write_text(PLAY % cases[0]["role"])
    cmd = ["ansible-playbook", "-i", str(tmp / "hosts.yml"), str(tmp / "play.yml"), "--check",
           "--forks", "10"] + case_argv(cases[0])
    env = ansible_env({"ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json", "ANSIBLE_CALLBACK_RESULT_FORMAT": "json"})
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, check=False)
    try:
        report = json.loads(res.stdout)
    except ValueError:
        pytest.fail("ansible-playbook gave no JSON report (rc=%s):\n%s" % (res.returncode, (res.stdout + res.stderr)[-3000:]))
    results = {}
    for host in hosts:
        failed = None
        for play in report["plays"]:
            for task in play["tasks"]:
                result = task["hosts"].get(host)
                if result and result.get("failed") and not result.get("ignore_errors"):
                    failed = failed or (task["task"]["name"], result)
        stats = report["stats"].get(host, {})
        results[host] = (host, failed, stats.get("changed", 0),
                         stats.get("failures", 0) + stats.get("unreachable", 0), res.stderr)
    return hosts, results


@pytest.fixture(scope="session")
def refusals(tmp_path_factory, machine_facts):
    """The results of every case, run lazily by run_key: refusals(case) -> (host, (failed task, result), changed,
    failures, stderr)."""
    done = {}

    def result_of(case):
        key = run_key(case)
        if key not in done:
            group = [c.values[0] for c in CASES if run_key(c.values[0]) == key
                     and bool(c.values[0].get("as_extra_vars")) == bool(case.get("as_extra_vars"))]
            hosts, results = run_cases(group, tmp_path_factory.mktemp("cases"), machine_facts)
            done[key] = dict((id(c), results[h]) for c, h in zip(group, hosts))
        return done[key][id(case)]
    return result_of


@pytest.mark.parametrize("case", CASES)
def test_bad_input_refused(case, refusals):
    host, failed, changed, failures, stderr = refusals(case)
    assert failures and failed, "case %r was accepted:\n%s" % (case["name"], stderr[-3000:])
    task, result = failed
    out = json.dumps(result, sort_keys=True)
    if os.environ.get("BAREMETAL_REFUSALS_FILE"):
        # Each case's refusal, one line, to compare two trees after a refactoring (docs/DEVELOPING.md).
        with open(os.environ["BAREMETAL_REFUSALS_FILE"], "a", encoding="utf-8") as dump:
            dump.write("%s: %s\t%s\n" % (case["role"], case["name"], str(result.get("msg", "")).replace("\n", "\\n")))
    # A message may hold quotes and backslashes; compare with the text, not its JSON escaping.
    text = "\n".join([out, str(result.get("msg", ""))] + [str(v) for v in (result.get("results") or [])])
    expect = case["expect"].replace("{host}", host)
    assert expect in text, "expected %r in the failure of %r:\n%s" % (expect, task, out[-3000:])
    assert changed == 0, "something changed before the refusal (changed=%s)" % changed
    # The task the case failed in is where the input was refused.
    assert ("Validating arguments" in task or "reflight" in task), (
        "refused too late, in task %r (should be argument_specs or preflight)" % task)
