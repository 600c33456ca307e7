#!/usr/bin/env python
"""Keep role docs and argument specs in step with defaults, and the OS support matrix in one place.

    scripts/role-docs.py           rewrite the variables table in every roles/<role>/README.md, the one-line
                                   defaults argument_specs restates from defaults/main.yml, and the OS
                                   support matrix table in README.md
    scripts/role-docs.py --check   fail if any of those drifts (run by `make test`)

Checks per role (public roles; roles whose name starts with "_" are internal):
  - meta/argument_specs.yml exists with a `main` entry point;
  - every public variable starts with the role's prefix `<role>_`;
  - every option has a type and a description;
  - defaults/main.yml and argument_specs declare the same variables, and their
    defaults agree (an option with no default in defaults/main.yml must not
    declare one either);
  - README.md holds the generated table between the markers.
Checks per entry point (every one of meta/argument_specs.yml):
  - tasks/<entry point>.yml exists, and every option has a type, a description, and elements when a list;
  - an option that defaults/main.yml also sets has the same default there;
  - every include_role / import_role of a collection role with tasks_from (roles, playbooks, molecule) names an
    entry point of that role's argument_specs, so that ansible checks its inputs.

The OS support matrix: OS_MATRIX in plugins/module_utils/support.py is the only list
of supported operating systems. This script
  - writes the table of README.md between <!-- BEGIN OS MATRIX --> and <!-- END OS MATRIX --> from it;
  - writes meta/main.yml galaxy_info.platforms of every host role (HOST_ROLES) from OS_MATRIX
    (galaxy_platform, galaxy_version; with --check, fails where it differs);
  - checks that every role's meta/main.yml min_ansible_version is the floor of meta/runtime.yml
    requires_ansible (the roles said 2.17 while the collection requires 2.19).

The cluster components: CLUSTER_COMPONENTS in plugins/module_utils/support.py is the one ordered list;
this script writes the choices of cluster_addons' _cluster_addons_role and README.md's table between
<!-- BEGIN CLUSTER COMPONENTS --> and <!-- END CLUSTER COMPONENTS --> from it (with --check, fails where they differ).

The chart pins (version pins appear in prose only through generated tables): the table of
docs/charts.md between <!-- BEGIN CHART PINS --> and <!-- END CHART PINS --> is written from where each pin lives
(chart_roles(): the role's defaults, or for dcgm-exporter DCGM_EXPORTER in plugins/module_utils/support.py); the
prose names "the pinned chart" and links that table.
"""
import glob
import importlib.util
import os
import re
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN = "<!-- BEGIN VARIABLES -->"
END = "<!-- END VARIABLES -->"
MATRIX_BEGIN = "<!-- BEGIN OS MATRIX -->"
MATRIX_END = "<!-- END OS MATRIX -->"
COMPONENTS_BEGIN = "<!-- BEGIN CLUSTER COMPONENTS -->"
COMPONENTS_END = "<!-- END CLUSTER COMPONENTS -->"
SWITCHES_BEGIN = "      # BEGIN COMPONENT SWITCHES (scripts/role-docs.py writes them from the support data's CLUSTER_COMPONENTS)"
SWITCHES_END = "      # END COMPONENT SWITCHES"
PINS_BEGIN = "<!-- BEGIN CHART PINS -->"
PINS_END = "<!-- END CHART PINS -->"
# The cluster roles that install a chart, in cluster_addons.yml's order (the support data's CLUSTER_COMPONENTS).
# Roles that run on the GPU nodes and so support exactly the OS matrix.
HOST_ROLES = ("nvidia_driver", "container_toolkit", "rke2_nvidia_runtime", "preflight", "upgrade", "node_maintenance",
              "uninstall", "gpu_health", "host_common")


def load_support():
    """plugins/module_utils/support.py, imported by path (it needs nothing of Ansible)."""
    path = os.path.join(ROOT, "plugins", "module_utils", "support.py")
    spec = importlib.util.spec_from_file_location("baremetal_gpu_support", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def node_scenarios(node):
    """The molecule scenarios with a platform of test node ``node``: its image (localhost/baremetal-gpu-<node>) or a
    converged node of it that make test committed (BAREMETAL_CONVERGED_<NODE>[_...])."""
    image = re.compile(r"baremetal-gpu-%s:|BAREMETAL_CONVERGED_%s(_[A-Z0-9]+)*[:}]" % (re.escape(node), re.escape(node.upper())))
    found = []
    for path in sorted(glob.glob(os.path.join(ROOT, "molecule", "*", "molecule.yml"))):
        with open(path, encoding="utf-8") as handle:
            if image.search(handle.read()):
                found.append(os.path.basename(os.path.dirname(path)))
    return found


def matrix_table(matrix):
    lines = ["| OS | key (`distribution-major`) | Galaxy platform | tested here |", "|---|---|---|---|"]
    for row in matrix:
        name = row["name"] + (" (%s)" % row["codename"] if row["codename"] else "")
        if row["tested"]:
            scenarios = node_scenarios(row["test_node"])
            if not scenarios:
                raise SystemExit("role-docs: %s is tested in the OS matrix, but no molecule scenario has a platform of "
                                 "its test node %s" % (row["key"], row["test_node"]))
            tested = ("yes: the test node `%s` (podman, systemd) in %s" % (
                row["test_node"], ", ".join("`%s`" % s for s in scenarios)))
        else:
            tested = "no: implemented from the vendors' documentation, no mirror reachable here"
        lines.append("| %s | `%s` | %s %s | %s |" % (name, row["key"], row["galaxy_platform"], row["galaxy_version"],
                                                     tested))
    return "\n".join(lines)


def platforms_block(matrix):
    """The galaxy_info.platforms block of a host role's meta/main.yml, written from the OS matrix (platforms and
    versions in matrix order; a version that is a number is quoted, as Galaxy wants a string)."""
    order, versions = [], {}
    for row in matrix:
        name = row["galaxy_platform"]
        if name not in versions:
            order.append(name)
            versions[name] = []
        version = str(row["galaxy_version"])
        if version not in versions[name]:
            versions[name].append(version)
    lines = ["  platforms:"]
    for name in order:
        shown = ['"%s"' % v if v.isdigit() else v for v in versions[name]]
        lines += ["    - name: %s" % name, "      versions: [%s]" % ", ".join(shown)]
    return "\n".join(lines) + "\n"


def check_platforms(role_dir, matrix, write):
    """meta/main.yml galaxy_info.platforms of a host role is the block platforms_block() writes from the OS matrix:
    rewritten in place (write), else an error when it differs."""
    role = os.path.basename(role_dir)
    path = os.path.join(role_dir, "meta", "main.yml")
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    match = re.search(r"^  platforms:\n(?:    .*\n)*", text, re.M)
    if not match:
        return ["%s: meta/main.yml has no galaxy_info.platforms block" % role]
    want = platforms_block(matrix)
    if match.group(0) == want:
        return []
    if write:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text[:match.start()] + want + text[match.end():])
        return []
    return ["%s: meta/main.yml galaxy_info.platforms differs from the OS matrix (plugins/module_utils/support.py "
            "OS_MATRIX); run scripts/role-docs.py" % role]


def check_component_choices(components, write):
    """The choices of the option _cluster_addons_role in roles/cluster_addons/meta/argument_specs.yml (one per entry
    point) are the cluster components of the support data (CLUSTER_COMPONENTS), in order: rewritten in place (write),
    else an error when they differ."""
    path = os.path.join(ROOT, "roles", "cluster_addons", "meta", "argument_specs.yml")
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    want = "choices: [%s]" % ", ".join(row["role"] for row in components)
    pattern = re.compile(r"(^ +_cluster_addons_role:\n(?: +(?!choices:)\w+:.*\n)*? +)(choices: \[.*\])$", re.M)
    found = pattern.findall(text)
    if not found:
        return ["cluster_addons: meta/argument_specs.yml has no choices for _cluster_addons_role"]
    if all(choices == want for _head, choices in found):
        return []
    if write:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(pattern.sub(lambda match: match.group(1) + want, text))
        return []
    return ["cluster_addons: meta/argument_specs.yml _cluster_addons_role choices differ from the cluster components "
            "(plugins/module_utils/support.py CLUSTER_COMPONENTS); run scripts/role-docs.py"]


def requires_ansible_floor():
    """The lowest ansible-core of meta/runtime.yml requires_ansible (">=2.19.0,<2.20.0" -> "2.19")."""
    spec = (load(os.path.join(ROOT, "meta", "runtime.yml")) or {}).get("requires_ansible", "")
    match = re.search(r">=\s*(\d+)\.(\d+)", spec)
    return "%s.%s" % match.groups() if match else None


def check_min_ansible(role_dir, floor):
    """Every role's min_ansible_version is the collection's requires_ansible floor (one fact, one value)."""
    meta = load(os.path.join(role_dir, "meta", "main.yml")) or {}
    have = str((meta.get("galaxy_info") or {}).get("min_ansible_version", ""))
    if floor and have != floor:
        return ["%s: meta/main.yml min_ansible_version is %r, meta/runtime.yml requires_ansible starts at %r"
                % (os.path.basename(role_dir), have, floor)]
    return []


def check_block(path, begin, end, content, write, what):
    """The text between the markers begin and end of the file at path (relative to ROOT) is content: rewritten in
    place (write), else an error when it differs."""
    full = os.path.join(ROOT, path)
    text = open(full, encoding="utf-8").read()
    if begin not in text or end not in text:
        return ["%s lacks the %s / %s markers" % (path, begin, end)]
    head, rest = text.split(begin, 1)
    tail = rest.split(end, 1)[1]
    new = head + begin + "\n" + content + "\n" + end + tail
    if new != text:
        if write:
            with open(full, "w", encoding="utf-8") as fh:
                fh.write(new)
        else:
            return ["%s %s is stale; run scripts/role-docs.py" % (path, what)]
    return []


def check_readme_matrix(matrix, write):
    return check_block("README.md", MATRIX_BEGIN, MATRIX_END, matrix_table(matrix), write, "OS support matrix")


def chart_pin(role):
    """The chart version a cluster role installs by default: the role's defaults, or for dcgm_exporter the support
    data (its default is a lookup of it). The one reader of the pins: tests/integration/conftest.py's chart_pin()
    calls this one."""
    if role == "dcgm_exporter":
        return load_support().DCGM_EXPORTER["chart_version"]
    return str(load(os.path.join(ROOT, "roles", role, "defaults", "main.yml"))["%s_chart_version" % role])


def component_switches(components):
    """The switch of every cluster component, as options of cluster_addons' api_host entry point (argument_specs
    YAML, between the COMPONENT SWITCHES markers): typed bool, so that a switch that is no boolean is refused at the
    include, naming it."""
    lines = []
    for row in components:
        lines += ["      %s:" % row["switch"], "        type: bool",
                  "        description: Install %s (%s); true unless set. False leaves it alone, the uninstall too."
                  % (row["title"], row["role"])]
    return "\n".join(lines)


def components_table(components):
    """README.md's table of the cluster components, in install order."""
    lines = ["| order | component | role | switch (default `true`) | Helm chart |", "|---|---|---|---|---|"]
    for number, row in enumerate(components, 1):
        lines.append("| %d | %s | [`%s`](roles/%s/README.md) | `%s` | %s |" % (
            number, row["title"], row["role"], row["role"], row["switch"],
            "yes (pinned: [docs/charts.md](docs/charts.md))" if row["chart"] else "no (manifests only)"))
    return "\n".join(lines)


def chart_roles():
    """The cluster roles that install a chart, in install order (the support data's CLUSTER_COMPONENTS)."""
    return [row["role"] for row in load_support().CLUSTER_COMPONENTS if row["chart"]]


def chart_pins():
    """(role, chart, version, where the pin lives) of every chart a cluster role installs."""
    pins = []
    for role in chart_roles():
        name = load(os.path.join(ROOT, "roles", role, "defaults", "main.yml"))["%s_chart_name" % role]
        if role == "dcgm_exporter":
            where = ("`DCGM_EXPORTER` in `plugins/module_utils/support.py`, with the dashboard revision, the alert "
                     "fields and the node label written for it; any other version is refused")
        else:
            where = "`%s_chart_version` in `roles/%s/defaults/main.yml`" % (role, role)
        pins.append((role, name, chart_pin(role), where))
    return pins


def pins_table(pins):
    lines = ["| chart | pinned | the pin lives in | tarball (`cluster_addons_chart_dir`) |", "|---|---|---|---|"]
    for role, name, version, where in pins:
        lines.append("| %s ([%s](../roles/%s/README.md)) | %s | %s | `%s-%s.tgz` |"
                     % (name, role, role, version, where, name, version))
    return "\n".join(lines)


def load(path):
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def flow_yaml(value):
    """``value`` as one line of YAML in flow style, without the document end marker a scalar gets."""
    text = yaml.safe_dump(value, default_flow_style=True, width=10000).strip()
    return text[:-4].strip() if text.endswith("\n...") else text


def fmt_default(value):
    if value is None:
        return ""
    text = flow_yaml(value).replace("\n...", "").replace("|", "\\|")
    if len(text) > 80:
        text = text[:77] + "..."
    return "`%s`" % text


def describe(desc):
    if isinstance(desc, list):
        desc = " ".join(desc)
    return (desc or "").replace("\n", " ").replace("|", "\\|").strip()


def table(options):
    lines = ["| Variable | Type | Default | Required | Description |",
             "|---|---|---|---|---|"]
    for name in sorted(options):
        opt = options[name] or {}
        typ = opt.get("type", "str")
        if typ == "list" and opt.get("elements"):
            typ = "list of %s" % opt["elements"]
        if opt.get("choices"):
            typ += " (%s)" % ", ".join(str(c) for c in opt["choices"])
        lines.append("| `%s` | %s | %s | %s | %s |" % (
            name, typ, fmt_default(opt.get("default")), "yes" if opt.get("required") else "no",
            describe(opt.get("description"))))
    return "\n".join(lines)


def option_errors(where, name, opt):
    """An argument_specs option needs a type, a description, and elements when it is a list."""
    errors = []
    if "type" not in opt:
        errors.append("%s: option %s has no type" % (where, name))
    if not opt.get("description"):
        errors.append("%s: option %s has no description" % (where, name))
    if opt.get("type") == "list" and "elements" not in opt:
        errors.append("%s: list option %s has no elements" % (where, name))
    return errors


SCALAR = (str, int, float, bool)


def sync_spec_defaults(role_dir):
    """Write mode: every `default:` of meta/argument_specs.yml (any entry point) that restates a one-line scalar of
    defaults/main.yml takes that value, so that a default (a chart pin among them) is edited in one place. Anything
    else that differs (lists, dicts, block scalars) is left for the check to report."""
    path = os.path.join(role_dir, "meta", "argument_specs.yml")
    defaults = load(os.path.join(role_dir, "defaults", "main.yml")) or {}
    if not defaults or not os.path.exists(path):
        return
    with open(path, encoding="utf-8") as fh:
        lines = fh.read().split("\n")
    option, indent, changed = None, 0, False
    for i, line in enumerate(lines):
        here = len(line) - len(line.lstrip(" "))
        if option is not None and line.strip() and here <= indent:
            option = None
        key = re.match(r"^( +)([a-z0-9_]+):\s*$", line)
        if key and key.group(2) in defaults:
            option, indent = key.group(2), len(key.group(1))
            continue
        found = re.match(r"^ {%d}default: (\S.*)$" % (indent + 2), line) if option is not None else None
        if not found or found.group(1)[:1] in "|>[{&*!":
            continue
        want = defaults[option]
        have = yaml.safe_load(found.group(1))
        if have != want and isinstance(want, SCALAR) and isinstance(have, SCALAR):
            lines[i] = "%sdefault: %s" % (" " * (indent + 2), flow_yaml(want))
            changed = True
    if changed:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write("\n".join(lines))


def check_role(role_dir, write):
    role = os.path.basename(role_dir)
    errors = []
    specs = load(os.path.join(role_dir, "meta", "argument_specs.yml"))
    if not specs or "main" not in (specs.get("argument_specs") or {}):
        return ["%s: meta/argument_specs.yml with a `main` entry point is missing" % role]
    options = specs["argument_specs"]["main"].get("options") or {}
    defaults = load(os.path.join(role_dir, "defaults", "main.yml")) or {}
    internal = role.startswith("_")
    for name, opt in options.items():
        opt = opt or {}
        if not internal and not name.startswith(role + "_"):
            errors.append("%s: option %s lacks the prefix %s_" % (role, name, role))
        errors.extend(option_errors(role, name, opt))
        if name in defaults:
            if "default" not in opt:
                errors.append("%s: %s is in defaults/main.yml but argument_specs gives no default" % (role, name))
            elif opt["default"] != defaults[name]:
                errors.append("%s: default of %s differs: argument_specs %r, defaults/main.yml %r"
                              % (role, name, opt["default"], defaults[name]))
        elif "default" in opt:
            errors.append("%s: %s has a default in argument_specs but not in defaults/main.yml" % (role, name))
    for name in defaults:
        if name not in options:
            errors.append("%s: defaults/main.yml variable %s is not in argument_specs" % (role, name))
    if internal:
        return errors
    readme = os.path.join(role_dir, "README.md")
    text = open(readme, encoding="utf-8").read() if os.path.exists(readme) else ""
    if BEGIN not in text or END not in text:
        errors.append("%s: README.md lacks the %s / %s markers" % (role, BEGIN, END))
        return errors
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    new = head + BEGIN + "\n" + table(options) + "\n" + END + tail
    if new != text:
        if write:
            with open(readme, "w", encoding="utf-8") as fh:
                fh.write(new)
        else:
            errors.append("%s: README.md variables table is stale; run scripts/role-docs.py" % role)
    return errors


def check_entry_points(role_dir):
    """Every entry point of the role's argument_specs besides main: its tasks file and its options."""
    role = os.path.basename(role_dir)
    errors = []
    specs = (load(os.path.join(role_dir, "meta", "argument_specs.yml")) or {}).get("argument_specs") or {}
    defaults = load(os.path.join(role_dir, "defaults", "main.yml")) or {}
    for entry, spec in sorted(specs.items()):
        where = "%s: entry point %s" % (role, entry)
        if not os.path.exists(os.path.join(role_dir, "tasks", entry + ".yml")):
            errors.append("%s has no tasks/%s.yml" % (where, entry))
        for name, opt in sorted(((spec or {}).get("options") or {}).items()):
            opt = opt or {}
            errors.extend(option_errors(where, name, opt))
            if name in defaults and "default" in opt and opt["default"] != defaults[name]:
                errors.append("%s: default of %s differs: argument_specs %r, defaults/main.yml %r"
                              % (where, name, opt["default"], defaults[name]))
    return errors


def role_includes(tasks, where):
    """(where, role, tasks_from) of every include_role / import_role of a baremetal.gpu role with tasks_from."""
    found = []
    for task in tasks if isinstance(tasks, list) else []:
        if not isinstance(task, dict):
            continue
        for key in ("block", "rescue", "always", "tasks", "pre_tasks", "post_tasks", "handlers"):
            found += role_includes(task.get(key), where)
        for action in ("ansible.builtin.include_role", "ansible.builtin.import_role", "include_role", "import_role"):
            args = task.get(action)
            if isinstance(args, dict) and args.get("tasks_from") and "{{" not in str(args.get("name", "")) + str(args["tasks_from"]):
                name = str(args.get("name", ""))
                if name.startswith("baremetal.gpu."):
                    found.append((where, name.split(".", 2)[2], str(args["tasks_from"])))
    return found


def check_tasks_from():
    """Every tasks_from names an entry point of the role's argument_specs."""
    errors = []
    paths = (glob.glob(os.path.join(ROOT, "roles", "*", "tasks", "*.yml")) + glob.glob(os.path.join(ROOT, "playbooks", "*.yml"))
             + glob.glob(os.path.join(ROOT, "molecule", "*", "*.yml")) + glob.glob(os.path.join(ROOT, ".config", "molecule", "*.yml")))
    for path in sorted(paths):
        for where, role, entry in role_includes(load(path), os.path.relpath(path, ROOT)):
            specs = (load(os.path.join(ROOT, "roles", role, "meta", "argument_specs.yml")) or {}).get("argument_specs") or {}
            if entry not in specs:
                errors.append("%s: tasks_from %s of %s is no entry point of its meta/argument_specs.yml" % (where, entry, role))
    return errors


def main(argv):
    write = "--check" not in argv
    errors = []
    roles = sorted(d for d in glob.glob(os.path.join(ROOT, "roles", "*")) if os.path.isdir(d))
    for role_dir in roles:
        if write:
            sync_spec_defaults(role_dir)
        errors.extend(check_role(role_dir, write))
        errors.extend(check_entry_points(role_dir))
    errors.extend(check_tasks_from())
    floor = requires_ansible_floor()
    for role_dir in roles:
        errors.extend(check_min_ansible(role_dir, floor))
    matrix = load_support().OS_MATRIX
    for role in HOST_ROLES:
        errors.extend(check_platforms(os.path.join(ROOT, "roles", role), matrix, write))
    errors.extend(check_readme_matrix(matrix, write))
    errors.extend(check_component_choices(load_support().CLUSTER_COMPONENTS, write))
    errors.extend(check_block("roles/cluster_addons/meta/argument_specs.yml", SWITCHES_BEGIN, SWITCHES_END,
                              component_switches(load_support().CLUSTER_COMPONENTS), write, "component switches"))
    errors.extend(check_block("README.md", COMPONENTS_BEGIN, COMPONENTS_END,
                              components_table(load_support().CLUSTER_COMPONENTS), write, "cluster components table"))
    errors.extend(check_block("docs/charts.md", PINS_BEGIN, PINS_END, pins_table(chart_pins()), write,
                              "chart pins table"))
    for err in errors:
        print("role-docs: " + err)
    if errors:
        return 1
    print("role-docs: %d roles in step (argument_specs, defaults, README); %d host roles' platforms and the README "
          "agree with the OS matrix (%d OSes); docs/charts.md's pins agree with the roles (%d charts); cluster_addons' "
          "role choices agree with the cluster components" % (len(roles), len(HOST_ROLES), len(matrix), len(chart_roles())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
