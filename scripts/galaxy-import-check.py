#!/usr/bin/env python
"""Judge a galaxy-importer run on this collection's tarball (called by scripts/check-galaxy.sh).

    galaxy-import-check.py IMPORTER_RESULT_JSON IMPORTER_LOG UNPACKED_COLLECTION FILTERS_JSON

IMPORTER_RESULT_JSON is the importer's importer_result.json, IMPORTER_LOG its output (where its
warnings and errors are, as "WARNING: ..." and "ERROR: ..." lines: the JSON result does not carry
them), UNPACKED_COLLECTION the tarball's content, and FILTERS_JSON the output of
`ansible-doc -t filter -l --json baremetal.gpu` run on the unpacked collection alone.

It fails (exit 1, naming every problem) unless:
  - the importer said it completed, and logged no error;
  - every warning it logged matches one of ALLOWED_WARNINGS below, each with its reason;
  - the name, version and requires_ansible it read are those of galaxy.yml and meta/runtime.yml;
  - every module, lookup and filter of the tarball has its documentation in the result (modules with
    their examples and return values), and every role its README;
  - every other entry without documentation is a filter *file* (a FilterModule holding documented
    filters), never a filter itself.
"""

from __future__ import absolute_import, division, print_function

import json
import os
import re
import sys

import yaml

# Warnings the importer may log, each with why it is accepted. None is accepted today: the
# syntax-check failures of playbooks that use the dependencies' modules are answered by the
# tarball's .config/ansible-lint.yml (mock_modules), and every module has its documentation.
ALLOWED_WARNINGS = [
    # (regular expression, reason)
]


def load_yaml(path):
    with open(path) as handle:
        return yaml.safe_load(handle)


def log_problems(log_text):
    problems = []
    accepted = []
    if "Importer processing completed successfully" not in log_text:
        problems.append("the importer did not say 'Importer processing completed successfully'")
    for line in log_text.splitlines():
        if line.startswith("ERROR:") or line.startswith("CRITICAL:"):
            problems.append("importer error: %s" % line)
        elif line.startswith("WARNING:"):
            reasons = [reason for pattern, reason in ALLOWED_WARNINGS if re.search(pattern, line)]
            if reasons:
                accepted.append("%s (accepted: %s)" % (line, reasons[0]))
            else:
                problems.append("importer warning not listed in ALLOWED_WARNINGS: %s" % line)
    return problems, accepted


def metadata_problems(result, root):
    problems = []
    with open(os.path.join(root, "MANIFEST.json")) as handle:
        galaxy = json.load(handle)["collection_info"]
    meta = result.get("metadata") or {}
    for key in ("namespace", "name", "version"):
        if meta.get(key) != galaxy[key]:
            problems.append("metadata %s is %r, the tarball's MANIFEST.json says %r" % (key, meta.get(key), galaxy[key]))
    runtime = load_yaml(os.path.join(root, "meta", "runtime.yml"))
    if result.get("requires_ansible") != runtime["requires_ansible"]:
        problems.append("requires_ansible read as %r, meta/runtime.yml says %r"
                        % (result.get("requires_ansible"), runtime["requires_ansible"]))
    return problems


def plugin_names(root, kind, suffix):
    folder = os.path.join(root, "plugins", kind)
    if not os.path.isdir(folder):
        return set()
    return set(name[:-len(suffix)] for name in os.listdir(folder)
               if name.endswith(suffix) and not name.startswith("_"))


def docs_problems(result, root, listed_filters):
    problems = []
    docs = {}
    for entry in (result.get("docs_blob") or {}).get("contents") or []:
        docs[(entry["content_type"], entry["content_name"])] = entry
    expected = {
        "module": plugin_names(root, "modules", ".py"),
        "lookup": plugin_names(root, "lookup", ".py"),
        "filter": plugin_names(root, "filter", ".yml") | set(listed_filters),
    }
    documented = {}
    for kind, names in sorted(expected.items()):
        documented[kind] = 0
        for name in sorted(names):
            entry = docs.get((kind, name))
            strings = (entry or {}).get("doc_strings") or {}
            if not strings.get("doc"):
                problems.append("%s %s has no documentation in the import result" % (kind, name))
                continue
            if kind == "module" and not (strings.get("examples") and strings.get("return")):
                problems.append("module %s lacks EXAMPLES or RETURN in the import result" % name)
                continue
            documented[kind] += 1
    # Entries without documentation must be filter files that only hold documented filters.
    containers = []
    for (kind, name), entry in sorted(docs.items()):
        if kind != "filter" or entry.get("doc_strings") or name in expected["filter"]:
            continue
        if not os.path.isfile(os.path.join(root, "plugins", "filter", name + ".py")):
            problems.append("filter %s is in the import result without documentation or a file" % name)
        containers.append(name)
    roles = sorted(name for (kind, name) in docs if kind == "role")
    for name in roles:
        if not docs[("role", name)].get("readme_html"):
            problems.append("role %s has no README in the import result" % name)
    on_disk = set(os.listdir(os.path.join(root, "roles")))
    if set(roles) != on_disk:
        problems.append("roles in the import result %s, in the tarball %s" % (roles, sorted(on_disk)))
    summary = ("documented: %d modules, %d lookups, %d filters; %d roles with README; filter files holding them: %s"
               % (documented["module"], documented["lookup"], documented["filter"], len(roles),
                  ", ".join(containers) or "none"))
    if not expected["module"]:
        problems.append("no module found in the tarball")
    return problems, summary


def main(argv):
    if len(argv) != 5:
        sys.stderr.write(__doc__)
        return 2
    result_path, log_path, root, filters_path = argv[1:]
    with open(result_path) as handle:
        result = json.load(handle)
    with open(log_path) as handle:
        log_text = handle.read()
    with open(filters_path) as handle:
        listed_filters = [name.split(".", 2)[2] for name in json.load(handle)]
    problems, accepted = log_problems(log_text)
    problems += metadata_problems(result, root)
    more, summary = docs_problems(result, root, listed_filters)
    problems += more
    print("galaxy-import-check: %s" % summary)
    for line in accepted:
        print("galaxy-import-check: %s" % line)
    for problem in problems:
        print("galaxy-import-check: FAIL %s" % problem)
    if problems:
        return 1
    print("galaxy-import-check: ok (no error, no unlisted warning, every module, lookup and filter documented)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
