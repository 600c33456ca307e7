#!/usr/bin/env bash
# `make docs`: the collection's documentation site, as the Ansible ecosystem renders it.
# antsibull-docs (pinned in tests/requirements-galaxy.txt, venv made by scripts/galaxy-venv.sh) writes the
# reStructuredText of every module, filter, lookup and role (from meta/argument_specs.yml) of the
# collection as installed (its dependencies beside it, from .ansible/collections, for references), and Sphinx builds it with the Ansible
# theme, warnings as errors, with the user guide (docs/*.md) beside them. Sources: docs/site/ (conf.py,
# antsibull-docs.cfg, index.rst) and docs/.
# The site: .cache/docs/html/index.html (BAREMETAL_GPU_DOCS_DIR overrides .cache/docs).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
venv=$(bash scripts/galaxy-venv.sh)
out=${BAREMETAL_GPU_DOCS_DIR:-$root/.cache/docs}
rm -rf "$out"
mkdir -p "$out/collections/ansible_collections/baremetal" "$out/src/rst" "$out/tmp"
# The collection at the path ansible-doc wants, ahead of the copy linked in .ansible/collections.
ln -s "$root" "$out/collections/ansible_collections/baremetal/gpu"
cp docs/site/conf.py docs/site/antsibull-docs.cfg "$out/src/"
chmod og-w "$out/src/rst"   # antsibull-docs wants the directory writable only by itself
export PATH="$venv/bin:$PATH" ANSIBLE_COLLECTIONS_PATH="$out/collections:$root/.ansible/collections" ANSIBLE_LOCAL_TEMP="$out/tmp" TMPDIR="$out/tmp"
t0=$(date +%s)
(cd "$out/src" && antsibull-docs --config-file antsibull-docs.cfg collection --use-current \
  --dest-dir rst baremetal.gpu)
cp docs/site/index.rst "$out/src/rst/index.rst"
# The user guide: docs/*.md as Markdown pages (myst-parser) under guide/. A link to another page of docs/ stays a
# link between pages; a link to any other file of the repository (a role's README, a playbook) becomes its URL
# under galaxy.yml's repository, since the site does not carry those files.
python3 - "$out/src/rst/guide" docs <<'PY'
import os, re, sys
dest, src = sys.argv[1], sys.argv[2]
repository = re.search(r"^repository: *(\S+)", open("galaxy.yml").read(), re.M).group(1)
os.makedirs(dest)
for name in sorted(os.listdir(src)):
    if not name.endswith(".md"):
        continue
    def link(match):
        target = match.group(2)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#") or "/" not in target.split("#")[0]:
            return match.group(0)
        path = os.path.normpath(os.path.join(src, target.split("#")[0]))
        anchor = "#" + target.split("#", 1)[1] if "#" in target else ""
        return "%s%s/blob/main/%s%s)" % (match.group(1), repository, path, anchor)
    text = re.sub(r"(\]\()([^)\s]+)\)", link, open(os.path.join(src, name), encoding="utf-8").read())
    open(os.path.join(dest, name), "w", encoding="utf-8").write(text)
PY
# The build is offline (no intersphinx): the labels that the generated pages take from the Ansible
# docsite (other collections' plugins, common return values, configuration) get a page of links to
# docs.ansible.com, so Sphinx still fails on any other undefined reference.
python3 - "$out/src/rst" <<'PY'
import os, re, sys
rst = sys.argv[1]
base = "https://docs.ansible.com/ansible/latest/"
labels = {"common_return_values": base + "reference_appendices/common_return_values.html",
          "ansible_configuration_settings": base + "reference_appendices/config.html"}
for folder, _, files in os.walk(os.path.join(rst, "collections")):
    for name in files:
        text = open(os.path.join(folder, name)).read()
        for ns, coll, plugin, kind in re.findall(r"<ansible_collections\.(\w+)\.(\w+)\.(\w+)_(\w+)>", text):
            if (ns, coll) != ("baremetal", "gpu"):
                labels["ansible_collections.%s.%s.%s_%s" % (ns, coll, plugin, kind)] = (
                    base + "collections/%s/%s/%s_%s.html" % (ns, coll, plugin, kind))
lines = ["Ansible documentation", "=====================", "",
         "Pages of the Ansible documentation that this site refers to.", ""]
for label, url in sorted(labels.items()):
    title = label.replace("ansible_collections.", "").replace("_", " ") if label.startswith("ansible_collections.") else label
    lines += [".. _%s:" % label, "", "%s" % title, "-" * len(title), "", url, ""]
open(os.path.join(rst, "external.rst"), "w").write("\n".join(lines))
PY
(cd "$out/src" && sphinx-build -q -b html -c . -W --keep-going rst "$out/html")
pages=$(find "$out/html/collections/baremetal/gpu" -name '*.html' | wc -l)
echo "docs: $pages pages of baremetal.gpu in $(( $(date +%s) - t0 )) s; open $out/html/index.html"
