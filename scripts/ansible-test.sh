#!/usr/bin/env bash
# Run ansible-test on a copy of the collection laid out as ansible_collections/baremetal/gpu.
#
#   scripts/ansible-test.sh sanity [args...]
#   scripts/ansible-test.sh units  [args...]
#
# ANSIBLE_TEST_VENV=<venv> runs that venv's ansible-test (another ansible-core, see
# scripts/check-core-range.sh) in its own copy, .cache/ansible-test-<venv name>-<command>/.
#
# ansible-test needs the collection under an ansible_collections/<ns>/<name> path and a
# git tree; the checkout itself is the collection root, so we copy the files git knows
# (tracked, plus untracked-but-not-ignored) into .cache/ansible-test/.
# ansible-test bootstraps its sanity venvs with a get-pip script from a host that
# cannot be reached here; the stand-in written below runs ensurepip and then pip
# install of the pinned packages ansible-test asks for (from PyPI), which is what
# get-pip does. --docker cannot work here (no daemon, no registry).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/env.sh
. scripts/env.sh

if [[ -n ${ANSIBLE_TEST_VENV:-} ]]; then
  PATH="$ANSIBLE_TEST_VENV/bin:$PATH"
  copy=.cache/ansible-test-$(basename "$ANSIBLE_TEST_VENV")-${1:-none}
else
  copy=.cache/ansible-test
fi
# The infrastructure pip version this ansible-test bootstraps its venvs with (24.2 for 2.19).
PIP_VERSION=$(python3 - <<'PY'
import re
import ansible_test._internal.python_requirements as m
print(re.search(r"default_packages = dict\(\s*pip='([0-9.]+)'", open(m.__file__).read()).group(1))
PY
)
stand_in="$HOME/.ansible/test/cache/get_pip_${PIP_VERSION//./_}.py"
mkdir -p "$(dirname "$stand_in")"
cat >"$stand_in" <<'PY'
"""Stand-in for get-pip.py (written by baremetal.gpu scripts/ansible-test.sh)."""
import subprocess
import sys

subprocess.check_call([sys.executable, "-m", "ensurepip", "--default-pip"], stdout=subprocess.DEVNULL)
args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
subprocess.check_call([sys.executable, "-m", "pip", "install", "--disable-pip-version-check"] + args)
PY

dest=$copy/ansible_collections/baremetal/gpu
rm -rf "$dest"
mkdir -p "$dest"
git ls-files -z --cached --others --exclude-standard | rsync -a --from0 --files-from=- ./ "$dest/"
# Collections whose module_utils the collection's plugins use must sit in the same
# ansible_collections tree for ansible-test (units, sanity import and validate-modules).
deps=(kubernetes/core)
for dep in "${deps[@]}"; do
  mkdir -p "$copy/ansible_collections/$dep"
  rsync -a --delete ".ansible/collections/ansible_collections/$dep/" "$copy/ansible_collections/$dep/"
done
cd "$dest"
git init -q
git add -A
exec ansible-test "$@" --python 3.11 --color no
