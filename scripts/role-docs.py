#!/usr/bin/env python
"""Keep role docs and argument specs in step with defaults.

    scripts/role-docs.py           rewrite the variables table in every roles/<role>/README.md
    scripts/role-docs.py --check   fail if any role drifts (run by `make test`)

Checks per role (public roles; roles whose name starts with "_" are internal):
  - meta/argument_specs.yml exists with a `main` entry point;
  - every public variable starts with the role's prefix `<role>_`;
  - every option has a type and a description;
  - defaults/main.yml and argument_specs declare the same variables, and their
    defaults agree (an option with no default in defaults/main.yml must not
    declare one either);
  - README.md holds the generated table between the markers.
"""
import glob
import os
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN = "<!-- BEGIN VARIABLES -->"
END = "<!-- END VARIABLES -->"


def load(path):
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def fmt_default(value):
    if value is None:
        return ""
    text = yaml.safe_dump(value, default_flow_style=True, width=10000).strip()
    if text.endswith("\n..."):
        text = text[:-4]
    text = text.replace("\n...", "").replace("|", "\\|")
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
        if "type" not in opt:
            errors.append("%s: option %s has no type" % (role, name))
        if not opt.get("description"):
            errors.append("%s: option %s has no description" % (role, name))
        if opt.get("type") == "list" and "elements" not in opt:
            errors.append("%s: list option %s has no elements" % (role, name))
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


def main(argv):
    write = "--check" not in argv
    errors = []
    roles = sorted(d for d in glob.glob(os.path.join(ROOT, "roles", "*")) if os.path.isdir(d))
    for role_dir in roles:
        errors.extend(check_role(role_dir, write))
    for err in errors:
        print("role-docs: " + err)
    if errors:
        return 1
    print("role-docs: %d roles in step (argument_specs, defaults, README)" % len(roles))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
