#!/usr/bin/env bash
# Galaxy's import check, as Galaxy and Automation Hub run it: galaxy-importer (pinned in
# tests/requirements-galaxy.txt, in its own venv) on the tarball of `ansible-galaxy collection build`,
# with this collection alone (no dependency installed: the importer puts only the tarball's content
# on ANSIBLE_COLLECTIONS_PATH for its ansible-doc run; its ansible-lint run is off: tests/galaxy-importer.cfg). Then
# scripts/galaxy-import-check.py reads the importer's JSON result and its log: no error, no warning
# that is not listed there with its reason, every module, lookup and filter documented.
# Output and result: .cache/galaxy/ (importer.log, importer_result.json).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
venv=$(bash scripts/galaxy-venv.sh)
work=$root/.cache/galaxy
rm -rf "$work"
mkdir -p "$work/home" "$work/tmp"
# The project's .venv builds the tarball (the ansible-galaxy that users run); nothing else of it is used.
.venv/bin/ansible-galaxy collection build --force --output-path "$work" . >/dev/null
tarball=$(ls "$work"/baremetal-gpu-*.tar.gz)
echo "built $(basename "$tarball") ($(du -h "$tarball" | cut -f1))"

# A clean environment: the galaxy venv first on PATH (its ansible-doc, ansible-lint), an empty HOME
# (no ~/.ansible collections or config), and the importer's settings from tests/galaxy-importer.cfg.
clean_env=(env -i "PATH=$venv/bin:/usr/local/bin:/usr/bin:/bin" "HOME=$work/home" "TMPDIR=$work/tmp"
  "LANG=C.UTF-8" "GALAXY_IMPORTER_CONFIG=$root/tests/galaxy-importer.cfg")
t0=$(date +%s)
set +e
(cd "$work" && "${clean_env[@]}" "$venv/bin/python" -m galaxy_importer.main "$(basename "$tarball")") >"$work/importer.log" 2>&1
rc=$?
set -e
echo "galaxy-importer $("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("galaxy-importer"))') ran in $(( $(date +%s) - t0 )) s, rc=$rc; its log: .cache/galaxy/importer.log"
grep -E '^(WARNING|ERROR|CRITICAL):' "$work/importer.log" || true
if [[ $rc -ne 0 || ! -s $work/importer_result.json ]]; then
  echo "galaxy-importer failed (rc=$rc) or wrote no importer_result.json:"; tail -n 40 "$work/importer.log"; exit 1
fi

mkdir -p "$work/alone/ansible_collections/baremetal/gpu"
tar xzf "$tarball" -C "$work/alone/ansible_collections/baremetal/gpu"

# The filters that ansible-doc finds in the collection alone (FilterModule files hold several).
"${clean_env[@]}" "ANSIBLE_COLLECTIONS_PATH=$work/alone" "$venv/bin/ansible-doc" -t filter -l --json baremetal.gpu \
  | "$venv/bin/python" -c 'import json, sys; print(json.dumps(sorted(json.load(sys.stdin))))' >"$work/filters.json"
"$venv/bin/python" scripts/galaxy-import-check.py "$work/importer_result.json" "$work/importer.log" \
  "$work/alone/ansible_collections/baremetal/gpu" "$work/filters.json"
