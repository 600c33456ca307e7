#!/usr/bin/env bash
# The collection's documentation as the Ansible ecosystem reads it:
# `antsibull-docs lint-collection-docs --plugin-docs` (pinned in tests/requirements-galaxy.txt) on the
# files git knows, with the dependencies of galaxy.yml beside it (scripts/setup.sh puts them in
# .ansible/collections; antsibull-docs reads them to resolve references to their plugins). It checks every plugin's and role's documentation (argument_specs included) the
# way the docsite build renders it: schema, markup, references to options and return values. Exit 0
# or the check fails.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
venv=$(bash scripts/galaxy-venv.sh)
work=$root/.cache/docs-lint
rm -rf "$work"
mkdir -p "$work/collections/ansible_collections/baremetal" "$work/tmp"
# The files git knows (what the tarball is built from), at the path ansible-doc wants.
dest=$work/collections/ansible_collections/baremetal/gpu
mkdir -p "$dest"
git ls-files -z --cached --others --exclude-standard | rsync -a --from0 --files-from=- ./ "$dest/"
cd "$dest"
t0=$(date +%s)
PATH="$venv/bin:$PATH" ANSIBLE_COLLECTIONS_PATH="$work/collections:$root/.ansible/collections" ANSIBLE_LOCAL_TEMP="$work/tmp" TMPDIR="$work/tmp" \
  antsibull-docs lint-collection-docs --plugin-docs .
echo "antsibull-docs $("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("antsibull-docs"))') lint-collection-docs --plugin-docs: no finding ($(( $(date +%s) - t0 )) s)"
