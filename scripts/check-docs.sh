#!/usr/bin/env bash
# The collection's documentation as the Ansible ecosystem reads it:
# `antsibull-docs lint-collection-docs --plugin-docs` (pinned in tests/requirements-galaxy.txt) on the
# files git knows, with the dependencies of galaxy.yml beside it (scripts/setup.sh puts them in
# .ansible/collections; antsibull-docs reads them to resolve references to their plugins). It checks every plugin's
# and role's documentation (argument_specs included) the way the docsite build renders it: schema, markup,
# references to options and return values. Exit 0 or the check fails.
#
# The copy lies OUTSIDE this git tree: inside it (under the ignored .cache/) antsibull-docs skipped every file git
# ignores, i.e. all of them, and reported "no finding" for any error. So the row tests itself after the real lint:
# an option reference planted in a copy of one role's argument_specs must make the same command fail, naming it.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
venv=$(bash scripts/galaxy-venv.sh)
work=$(mktemp -d "${TMPDIR:-/tmp}/baremetal-gpu-docs-lint.XXXXXX")
trap 'rm -rf "$work"' EXIT
case $work in "$root"/*) echo "docs lint: the copy must lie outside the git tree ($work)" >&2; exit 1 ;; esac
mkdir -p "$work/collections/ansible_collections/baremetal" "$work/tmp"

# lint DIR [PATH...]: the pinned command on the collection copied into DIR (git's files, or those of them under the
# PATHs, at the path ansible-doc wants).
lint() {
  local top=$work/$1 dest=$work/$1/collections/ansible_collections/baremetal/gpu
  shift
  mkdir -p "$dest"
  git ls-files -z --cached --others --exclude-standard -- "$@" | rsync -a --from0 --files-from=- ./ "$dest/"
  [[ $# -eq 0 ]] || plant "$dest"
  (cd "$dest" && PATH="$venv/bin:$PATH" ANSIBLE_COLLECTIONS_PATH="$top/collections:$root/.ansible/collections" \
    ANSIBLE_LOCAL_TEMP="$work/tmp" TMPDIR="$work/tmp" antsibull-docs lint-collection-docs --plugin-docs .)
}

plant() {
  sed -i '0,/^    short_description: /s//    short_description: O(baremetal_planted_no_such_option) /' \
    "$1/roles/runtime_class/meta/argument_specs.yml"
}

t0=$(date +%s)
lint real
version=$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("antsibull-docs"))')
echo "antsibull-docs $version lint-collection-docs --plugin-docs: no finding ($(( $(date +%s) - t0 )) s)"
# The self-test's copy holds only what the planted role needs, so it costs seconds.
if out=$(lint planted galaxy.yml meta roles/runtime_class 2>&1); then
  echo "docs lint self-test: a planted reference to a missing option passed the lint; the row cannot fail" >&2
  exit 1
fi
grep -q baremetal_planted_no_such_option <<<"$out" || { echo "docs lint self-test: failed, but not on the planted error:" >&2; echo "$out" >&2; exit 1; }
echo "docs lint self-test: a planted reference to a missing option fails it"
