#!/usr/bin/env bash
# Build the collection tarball and install it into an empty path, then prove the
# installed copy works: its modules are documented and a playbook using its FQCNs parses.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/env.sh
. scripts/env.sh
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
ansible-galaxy collection build --force --output-path "$out" .
tarball=$(ls "$out"/baremetal-gpu-*.tar.gz)
echo "built $tarball ($(du -h "$tarball" | cut -f1))"
# Nothing from build_ignore may leak into the tarball.
if tar tzf "$tarball" | grep -E '^(molecule|tests|scripts|\.venv|\.ansible|\.cache|benchmarks)/'; then
  echo "build_ignore is incomplete: the files above are in the tarball"; exit 1
fi
mkdir -p "$out/empty"
# Dependencies come from the project-local collections (Galaxy cannot be reached).
ANSIBLE_COLLECTIONS_PATH="$out/empty" ansible-galaxy collection install --offline --no-deps -p "$out/empty" "$tarball"
test -f "$out/empty/ansible_collections/baremetal/gpu/MANIFEST.json"
for d in "$out"/empty/ansible_collections/baremetal/gpu/roles/*/; do
  test -f "$d/meta/argument_specs.yml"
done
export ANSIBLE_COLLECTIONS_PATH="$out/empty:$BAREMETAL_ROOT/.ansible/collections"
for m in "$out"/empty/ansible_collections/baremetal/gpu/plugins/modules/*.py; do
  mod=$(basename "$m" .py)
  ansible-doc "baremetal.gpu.$mod" >/dev/null
  echo "ansible-doc baremetal.gpu.$mod: ok"
done
ansible-doc -l baremetal.gpu | sed 's/^/  /'
# The collection's playbooks run by FQCN from the installed copy.
for p in "$out"/empty/ansible_collections/baremetal/gpu/playbooks/*.yml; do
  name=$(basename "$p" .yml)
  ansible-playbook -i localhost, --syntax-check "baremetal.gpu.$name" >/dev/null
  echo "ansible-playbook --syntax-check baremetal.gpu.$name: ok"
done
echo "installed from $tarball into an empty path: ok"
