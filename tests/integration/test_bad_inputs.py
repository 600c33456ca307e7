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
Every case of a role runs in one run: each case is a host of its own in that run's inventory (connection
local, its variables as host variables), so each fails or passes on its own, as the nodes of a fleet do; the
results are read per host from the JSON callback (ansible.posix.json). A case costs its host's tasks, about the
same alone or in a run of sixty; batching saves the runs' starts, mostly wall time (docs/benchmarks.md).

The values of `cli` and `e_strings` cases are what `-e key=value` gives a play: strings. `-e` applies to every
host of a run, so in the role's run such a case's values are its host's variables, as strings. One case per
role (its first `cli` or `e_strings` case, the "witness") also runs alone with the real `-e` arguments, so the
command line's own path is run for every role that has such cases. The two differ only in precedence (extra
vars win over everything); test_string_cases_are_not_shadowed checks that no role sets these variables itself
(vars/, set_fact, include_vars), where only `-e` would win.
"""
import glob
import json
import os
import subprocess
import sys

import pytest
import yaml

from conftest import ROOT, ansible_env, run_playbook, supported_os

sys.path.insert(0, os.path.join(ROOT, "tests", "unit"))
# pylint: disable=wrong-import-position
from test_role_structure import role_task_files, tasks_in  # noqa: E402

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


def is_string_case(case):
    """A case whose values arrive as `-e key=value` gives them: its cli values, or all its vars (e_strings)."""
    return bool(case.get("as_extra_vars") or case.get("cli"))


def _witness_ids():
    """The name of each role's first string case, in file order: run alone with the real -e arguments too."""
    witnesses = {}
    for param in CASES:
        case = param.values[0]
        if is_string_case(case):
            witnesses.setdefault(case["role"], case["name"])
    return witnesses


WITNESSES = _witness_ids()


def is_witness(case):
    """The role's witness: its first string case (for an e_strings case, the variant with strings)."""
    return is_string_case(case) and WITNESSES.get(case["role"]) == case["name"]


def _as_cli_string(value):
    """What `-e key=value` makes of a value as YAML writes it: a string (booleans as YAML spells them)."""
    assert not isinstance(value, (dict, list)), "e_strings cases take scalar vars only"
    return str(value).lower() if isinstance(value, bool) else str(value)


def string_values(case):
    """The case's values that the command line gives: its vars as strings (e_strings), then its cli values."""
    values = {}
    if case.get("as_extra_vars"):
        values.update((key, _as_cli_string(value)) for key, value in (case.get("vars") or {}).items())
    values.update((key, _as_cli_string(value)) for key, value in (case.get("cli") or {}).items())
    return values


def case_argv(case):
    """The case's -e arguments, as a user types them."""
    return [arg for key, value in sorted(string_values(case).items()) for arg in ("-e", "%s=%s" % (key, value))]


def run_cases(cases, tmp, machine_facts, witness=False):
    """One check-mode run of the role with each case as a host; {host: (failed task, result, changed)}.
    witness: the run's one case gives its string values as real -e arguments instead of host variables."""
    assert not witness or len(cases) == 1
    hosts = {}
    for index, case in enumerate(cases):
        host_vars = {} if case.get("as_extra_vars") else dict(case.get("vars") or {})
        if not witness:
            host_vars.update(string_values(case))
        host_vars.update({"ansible_connection": "local", "__case_facts": case.get("facts") or {},
                          "__machine_facts": machine_facts})
        hosts["case%03d" % index] = host_vars
    (tmp / "hosts.yml").write_text(yaml.safe_dump({"all": {"hosts": hosts}}))
    (tmp / "play.yml").write_text(PLAY % cases[0]["role"])
    cmd = ["ansible-playbook", "-i", str(tmp / "hosts.yml"), str(tmp / "play.yml"), "--check",
           "--forks", "10"] + (case_argv(cases[0]) if witness else [])
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
    """The results of every case, run lazily, one run per role (every case a host) and one per witness:
    refusals(case, command_line=None) -> (host, (failed task, result), changed, failures, stderr). A witness's
    result is that of its run with the real -e arguments unless command_line=False."""
    done = {}

    def result_of(case, command_line=None):
        alone = is_witness(case) and command_line is not False
        key = (case["role"], case["name"]) if alone else (case["role"],)
        if key not in done:
            group = [case] if alone else [c.values[0] for c in CASES if c.values[0]["role"] == case["role"]]
            hosts, results = run_cases(group, tmp_path_factory.mktemp("cases"), machine_facts, witness=alone)
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


WITNESS_CASES = [pytest.param(c.values[0], id="%s: %s" % (c.values[0]["role"], c.values[0]["name"]))
                 for c in CASES if is_witness(c.values[0])]


@pytest.mark.parametrize("case", WITNESS_CASES)
def test_command_line_and_string_host_vars_refuse_alike(case, refusals):
    """The witness's refusal with the real -e arguments is the one its string host variables gave in the role's run
    (the failing task and its message, with the host's name set aside)."""
    def refusal(result):
        host, failed, _changed, _failures, stderr = result
        assert failed, stderr[-3000:]
        task, res = failed
        return task, str(res.get("msg", "")).replace(host, "<host>")
    assert refusal(refusals(case)) == refusal(refusals(case, command_line=False))


def _names_set_by_roles():
    """Every variable a role sets above host variables: keys of vars/ files (include_vars loads those too) and
    set_fact targets."""
    names = set()
    for path in glob.glob(os.path.join(ROOT, "roles", "*", "vars", "*.yml")):
        with open(path, encoding="utf-8") as fh:
            names.update((yaml.safe_load(fh) or {}).keys())
    for _where, tasks in role_task_files():
        for task in tasks_in(tasks):
            for action in ("ansible.builtin.set_fact", "set_fact"):
                if isinstance(task.get(action), dict):
                    names.update(task[action].keys())
    return names


def test_string_cases_are_not_shadowed():
    """A string case runs as host variables in its role's run; that is the command line only where no role sets the
    same variable above host variables (where only -e would win)."""
    shadowed = _names_set_by_roles()
    for param in CASES:
        case = param.values[0]
        if is_string_case(case):
            clash = sorted(set(string_values(case)) & shadowed)
            assert not clash, "%s: %s sets %s itself; run it with -e" % (case["role"], case["name"], clash)
