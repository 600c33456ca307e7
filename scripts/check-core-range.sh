#!/usr/bin/env bash
# meta/runtime.yml's requires_ansible, tested: `ansible-test units` and the sanity tests an older ansible-core can
# break (import and compile: the plugins load and the Python parses there) with the lowest ansible-core this
# collection claims, on the machine's Python (3.11; ansible-core 2.20 and later need 3.12, so 2.19.x is the
# highest that 3.11 runs).
#
#   scripts/check-core-range.sh [VERSION...]      default: the bounds below
#
# The highest (2.19.14) is the project's own .venv (requirements.txt), which `make test` already runs
# units and sanity with ("ansible-test units" / "ansible-test sanity" rows); this script runs the
# other versions, each in its own venv .cache/venv-core-<version> (ansible-core plus what the unit tests
# import; ansible-test --requirements adds its own pinned pytest) and its own copy of the collection
# (scripts/ansible-test.sh with ANSIBLE_TEST_VENV). It also fails when requires_ansible's lower bound
# is not the lowest version tested here, so the claim and the test cannot drift apart.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/env.sh
. scripts/env.sh
LOWEST=2.17.14
versions=("$@")
(( ${#versions[@]} )) || versions=("$LOWEST")

claim=$(sed -n 's/^requires_ansible: *"\(.*\)"/\1/p' meta/runtime.yml)
lower=$(sed -n 's/^>=\([0-9.]*\),.*/\1/p' <<<"$claim")
if [[ ${LOWEST%.*}.0 != "$lower" ]]; then
  echo "meta/runtime.yml claims '$claim', but the lowest version tested here is $LOWEST (expected >=${LOWEST%.*}.0)"; exit 1
fi

rc=0
for v in "${versions[@]}"; do
  venv=.cache/venv-core-$v
  if [[ ! -x $venv/bin/ansible-test ]]; then
    echo "[core-range] creating $venv (ansible-core==$v)"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check "ansible-core==$v" \
      "$(grep -E '^kubernetes==' requirements.txt)" "$(grep -E '^jmespath==' requirements.txt)" \
      "$(grep -E '^mock==' requirements.txt)" "$(grep -E '^pytest-mock==' requirements.txt)" \
      "$(grep -E '^kubernetes-validate==' requirements.txt)"
  fi
  venv_abs=$PWD/$venv
  # The playbooks and the roles they import parse with this ansible-core (a syntax check: the roles'
  # tasks are not run with it; molecule and the integration tests run with .venv's 2.19 only).
  t0=$(date +%s)
  for p in playbooks/*.yml; do
    if ! out=$("$venv/bin/ansible-playbook" -i localhost, --syntax-check "$p" 2>&1); then
      echo "[core-range] ansible-core $v: ansible-playbook --syntax-check $p FAILED:"; echo "$out"; rc=1
    fi
  done
  echo "[core-range] ansible-core $v: ansible-playbook --syntax-check of playbooks/*.yml done ($(( $(date +%s) - t0 )) s)"
  for cmd in units sanity; do
    t0=$(date +%s)
    extra=(--test import --test compile)
    [[ $cmd == units ]] && extra=(--requirements)
    if ANSIBLE_TEST_VENV=$venv_abs bash scripts/ansible-test.sh "$cmd" "${extra[@]}"; then
      echo "[core-range] ansible-core $v: ansible-test $cmd passed ($(( $(date +%s) - t0 )) s)"
    else
      echo "[core-range] ansible-core $v: ansible-test $cmd FAILED ($(( $(date +%s) - t0 )) s)"; rc=1
    fi
  done
done
exit $rc
