#!/usr/bin/env bash
# `make test`: set up everything from nothing and run every check, then print a
# summary table. Every row is PASS, FAIL or NOT RUN (with the reason); a check
# that did not run is never counted as passed. Exit status is non-zero if any
# check failed.
#
# Environment knobs:
#   MOLECULE_JOBS   scenarios run in parallel (default 2; each is its own process)
#   ONLY_SCENARIOS  space-separated subset of molecule scenarios to run
#   SKIP_MOLECULE=1 skip the molecule stage (reported as NOT RUN)
#   MOLECULE_TIMEOUT time limit per scenario in seconds (default 1800; one retry on timeout)
#   BAREMETAL_GPU_CHART_DIR the pinned chart tarballs for tests/integration/test_charts.py
#                   (default ../shared/charts when it exists; else that row is NOT RUN)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
RESULTS=$ROOT/.cache/results
LOGS=$ROOT/.cache/logs
rm -rf "$RESULTS" "$LOGS"
mkdir -p "$RESULTS" "$LOGS"
START=$(date +%s)

# slug NAME: the file name of a check's log (.cache/logs) and result row (.cache/results).
slug() { echo "$1" | tr '/ ' '__'; }

# record NAME STATUS SECONDS DETAIL
record() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >"$RESULTS/$(slug "$1").tsv"; }

# check NAME COMMAND...: run, log to .cache/logs/NAME.log, record PASS/FAIL.
check() {
  local name=$1; shift
  local log t0 rc detail
  log="$LOGS/$(slug "$name").log"
  t0=$(date +%s)
  printf '[test] %-34s ...\n' "$name"
  "$@" >"$log" 2>&1
  rc=$?
  detail=$(summary_of "$log")
  if [[ $rc -eq 0 ]]; then
    record "$name" PASS $(( $(date +%s) - t0 )) "$detail"
  else
    record "$name" FAIL $(( $(date +%s) - t0 )) "rc=$rc ${detail:-see $log}"
    echo "----- $name failed (rc=$rc); last lines of $log:"; tail -n 40 "$log"; echo "-----"
  fi
  return $rc
}

# A short detail for the table: pytest's closing line, or molecule's recap.
summary_of() {
  local log=$1 line
  line=$(grep -E '^(=+ )?[0-9]+ (passed|failed|errors?|skipped|deselected).* in [0-9.]+s' "$log" | tail -n 1 | tr -d '=' | sed 's/^ *//;s/ *$//')
  [[ -z $line ]] && line=$(grep -E '^\S+\s+: actions=' "$log" | tail -n 1 | sed 's/  */ /g')
  [[ -z $line ]] && line=$(grep -E '^(Running sanity test|role-docs:|Passed:|FATAL)' "$log" | tail -n 1)
  echo "$line"
}

echo "[test] setting up (host packages, venv, collections, helm/kubectl)"
if ! check "setup" bash scripts/setup.sh; then
  echo "[test] setup failed; nothing else can run"; cat "$LOGS/setup.log"; exit 1
fi
# shellcheck source=scripts/env.sh
. scripts/env.sh

# Build the test-node images in the background while static checks run.
bash scripts/build-images.sh >"$LOGS/images.log" 2>&1 &
IMAGES_PID=$!

# ---- static checks -------------------------------------------------------
check "role docs and argument_specs in step" python3 scripts/role-docs.py --check
check "yamllint" yamllint -s .
check "ansible-lint (production profile)" ansible-lint --nocolor
check "shellcheck" bash -c 'git ls-files -z --cached --others --exclude-standard -- "*.sh" .ci/run | xargs -0 shellcheck -x'
check "changelog fragments lint" antsibull-changelog lint
check "ansible-test sanity" bash scripts/ansible-test.sh sanity
check "ansible-test units" bash scripts/ansible-test.sh units
# ---- molecule scenarios --------------------------------------------------
wait "$IMAGES_PID"
cat "$LOGS/images.log"
image_status() { cat ".cache/images/$1.status" 2>/dev/null || echo "NOT RUN: image $1 was not built"; }

scenarios=()
for f in molecule/*/molecule.yml; do
  s=$(basename "$(dirname "$f")")
  if [[ -n ${ONLY_SCENARIOS:-} && " $ONLY_SCENARIOS " != *" $s "* ]]; then
    record "molecule: $s" "NOT RUN" 0 "not in ONLY_SCENARIOS"; continue
  fi
  if [[ $s == cluster ]]; then
    record "molecule: $s" "NOT RUN" 0 "needs a real Kubernetes cluster (KUBECONFIG); none can run here"
    continue
  fi
  if [[ ${SKIP_MOLECULE:-0} == 1 ]]; then
    record "molecule: $s" "NOT RUN" 0 "SKIP_MOLECULE=1"; continue
  fi
  reason=""
  for node in debian12 debian13 ubuntu2204 ubuntu2404; do
    if grep -q "baremetal-gpu-$node" "$f"; then
      st=$(image_status "$node")
      [[ $st == ok ]] || reason="$node node: $st"
    fi
  done
  if [[ -n $reason ]]; then
    record "molecule: $s" "NOT RUN" 0 "$reason"
    continue
  fi
  scenarios+=("$s")
done

# Each scenario runs under a time limit (MOLECULE_TIMEOUT, default 1800 s; a normal run takes
# 1-13 minutes). A scenario that ran out of time (a download that hung: see
# tests/images/99baremetal-test-apt) is run once more, and its row says so.
remove_instances() {
  # Leftover instances of an interrupted earlier run would clash with create.
  podman ps -a --format '{{.Names}}' | grep -E "^$1-" | xargs -r podman rm -f >/dev/null 2>&1
}
run_scenario() {
  local s=$1 limit=${MOLECULE_TIMEOUT:-1800} rc name file
  name="molecule: $s"
  file=$(slug "$name")
  remove_instances "$s"
  check "$name" timeout -k 60 "$limit" molecule test -s "$s"
  rc=$?
  if [[ $rc -eq 124 || $rc -eq 137 ]]; then
    echo "[test] molecule: $s ran out of time (${limit} s); running it once more"
    cp "$LOGS/$file.log" "$LOGS/$file.timed-out.log"
    remove_instances "$s"
    check "$name" timeout -k 60 "$limit" molecule test -s "$s"
    rc=$?
    IFS=$'\t' read -r _n st secs detail <"$RESULTS/$file.tsv"
    record "$name" "$st" "$secs" "2nd attempt; the 1st ran out of time after ${limit} s (log: $file.timed-out.log). $detail"
  fi
  return $rc
}
export -f run_scenario remove_instances check record slug summary_of
export RESULTS LOGS

# Longest first (two lanes: the order decides the total). Measured wall times on the 2-core machine
# are in docs/DEVELOPING.md; scenarios not listed here run last, in name order.
LONGEST_FIRST="nvidia_driver upgrade_driver uninstall nvidia_driver_mismatch nvidia_driver_switch gpu_nodes_batching container_toolkit rke2_nvidia_runtime preflight"
ordered=()
for s in $LONGEST_FIRST; do
  for t in "${scenarios[@]}"; do [[ $t == "$s" ]] && ordered+=("$s"); done
done
for t in "${scenarios[@]}"; do
  [[ " $LONGEST_FIRST " == *" $t "* ]] || ordered+=("$t")
done
# The molecule lanes run in the background while the integration tests, the real charts and the
# build run beside them: the scenarios spend much of their time waiting for the archives (apt
# downloads), the integration tests on the CPU, so the three overlap (measured: docs/DEVELOPING.md).
MOLECULE_PID=""
if ((${#ordered[@]})); then
  # shellcheck disable=SC2016  # $1 is expanded by the inner bash
  printf '%s\n' "${ordered[@]}" | xargs -P "${MOLECULE_JOBS:-2}" -I{} bash -c 'run_scenario "$1"' _ {} &
  MOLECULE_PID=$!
fi

# ---- controller-side tests, beside the molecule lanes ----------------------------------------
check "integration (pytest)" python3 -m pytest -p no:cacheprovider -q tests/integration --ignore=tests/integration/test_charts.py
# The real upstream charts (tests/integration/test_charts.py): tarballs from BAREMETAL_GPU_CHART_DIR,
# by default ../shared/charts beside the checkout. Without them the row is NOT RUN with the reason.
if [[ -z ${BAREMETAL_GPU_CHART_DIR:-} && -d $ROOT/../shared/charts ]]; then
  BAREMETAL_GPU_CHART_DIR=$(cd "$ROOT/../shared/charts" && pwd)
fi
export BAREMETAL_GPU_CHART_DIR=${BAREMETAL_GPU_CHART_DIR:-}
charts_row="charts: helm template + schemas"
if [[ -z $BAREMETAL_GPU_CHART_DIR ]]; then
  record "$charts_row" "NOT RUN" 0 "no chart directory: set BAREMETAL_GPU_CHART_DIR (default ../shared/charts, absent here)"
elif check "$charts_row" python3 -m pytest -p no:cacheprovider -q -rs tests/integration/test_charts.py \
    && grep -qE '^[0-9]+ skipped in ' "$LOGS/$(slug "$charts_row").log"; then
  record "$charts_row" "NOT RUN" 0 "$(grep -m1 -o 'NOT RUN: .*' "$LOGS/$(slug "$charts_row").log")"
fi
check "collection build and install" bash scripts/check-build.sh
[[ -n $MOLECULE_PID ]] && wait "$MOLECULE_PID"

# ---- summary ----------------------------------------------------------------
pass=0; fail=0; notrun=0
summary=$RESULTS/summary.md
{
  echo
  echo "| check | result | seconds | detail |"
  echo "|---|---|---|---|"
} >"$summary"
for r in "$RESULTS"/*.tsv; do
  IFS=$'\t' read -r name status secs detail <"$r"
  case $status in PASS) pass=$((pass+1));; FAIL) fail=$((fail+1));; *) notrun=$((notrun+1));; esac
  echo "| $name | $status | $secs | $detail |" >>"$summary"
done
printf '\nTotal time: %s s. Logs: .cache/logs/\n' "$(( $(date +%s) - START ))" >>"$summary"
cat "$summary"
echo "$pass passed, $fail failed, $notrun skipped"
[[ $fail -eq 0 ]]
