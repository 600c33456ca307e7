#!/usr/bin/env bash
# `make test`: set up everything from nothing and run every check, then print a
# summary table. Every row is PASS, FAIL or NOT RUN (with the reason); a check
# that did not run is never counted as passed. Exit status is non-zero if any
# check failed.
#
# Environment knobs:
#   ONLY_SCENARIOS  space-separated subset of molecule scenarios to run
#   SKIP_MOLECULE=1 skip the molecule stage (reported as NOT RUN)
#   SKIP_CHECKS=1   skip the foreground checks (static checks, integration, charts, build, docs, galaxy, core range;
#                   reported as NOT RUN): the molecule stage alone, through the same lanes and watchdog
#   MOLECULE_IDLE   seconds a scenario may go without output, CPU and I/O before it is taken as hung and ended
#                   (default 600; scripts/watchdog.py). A slow machine makes a scenario slower, never silent, so no
#                   correct run is cut by it; a hung one fails naming the molecule step and task it was in, and its
#                   nodes are removed all the same.
#   MOLECULE_TIMEOUT backstop per scenario in seconds for one that keeps busy for ever (default 3600, stretched by
#                   the machine's calibration when it is slower than the reference)
#   BAREMETAL_APT_CACHE_DIR where the test nodes' package cache keeps its files (scripts/apt-cache.sh;
#                   default ~/.cache/baremetal-gpu/apt-cacher-ng, kept between runs; remove it for a cold run)
#   BAREMETAL_GPU_CHART_DIR the pinned chart tarballs for tests/integration/test_charts.py
#                   (default ../shared/charts when it exists; else that row is NOT RUN)
#
# CPU-bound jobs never outnumber the cores: the foreground checks run one after the other and count as one job
# while they run; the image build and each scenario lane count as one each (scripts/run-scenarios.py).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
RESULTS=$ROOT/.cache/results
LOGS=$ROOT/.cache/logs
rm -rf "$RESULTS" "$LOGS"
mkdir -p "$RESULTS" "$LOGS"
START=$(date +%s)
BUDGET=3600   # the 60 minutes make test must stay within on the 2-core machine (CI allows 90)
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
# The whole machine's CPU (/proc/stat: busy and total jiffies), to set the rows' sum against.
stat_cpu() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }' /proc/stat; }
read -r BUSY_START _ < <(stat_cpu)
# The machine's speed (scripts/calibrate.py): CPU seconds of a fixed workload and the factor to the reference.
read -r CALIBRATION CAL_FACTOR < <(python3 scripts/calibrate.py)
LOAD_PID=""
( while sleep 60; do cut -d' ' -f1 /proc/loadavg >>"$RESULTS/.load"; done ) &
LOAD_PID=$!
echo "[test] calibration: ${CALIBRATION} s for the fixed workload (factor ${CAL_FACTOR} to the reference machine); $(nproc) cores; load $LOAD_START"

# Stopped by TERM, INT or HUP (kill of this script's pid, Ctrl-C, a CI time-out): end every process this run
# started, the background molecule stage and its scenarios included (they do not have this checkout's path on their
# command line, so a `pkill -f <checkout>` misses them), and remove the scenarios' test nodes; the EXIT trap then
# stops the package cache.
MOLECULE_PID=""
FOREGROUND_PID=""
tree_of() {
  local child
  echo "$1"
  for child in $(pgrep -P "$1" 2>/dev/null); do tree_of "$child"; done
}
# kill_tree PID: the process and all its descendants, frozen first so that none starts another meanwhile.
kill_tree() {
  local pids
  pids=$(tree_of "$1")
  # shellcheck disable=SC2086  # a list of pids
  kill -STOP $pids 2>/dev/null
  # shellcheck disable=SC2086
  kill -TERM $pids 2>/dev/null
  # shellcheck disable=SC2086
  kill -CONT $pids 2>/dev/null
}
on_signal() {
  trap - TERM INT HUP
  [[ -n $LOAD_PID ]] && kill "$LOAD_PID" 2>/dev/null
  echo "[test] stopped by a signal: ending the molecule stage and the running check, removing the test nodes"
  [[ -n $MOLECULE_PID ]] && kill_tree "$MOLECULE_PID"
  [[ -n $FOREGROUND_PID ]] && kill_tree "$FOREGROUND_PID"
  # What left the tree meanwhile (molecule starts ansible-playbook in a session of its own, and runs a destroy when
  # it is stopped; measured: one ansible-playbook outlived the TERM, waiting on a container being stopped) is
  # found by its working directory in this checkout, and killed; not the containers' monitors (conmon: a lab node
  # started from this checkout by `make lab` must live on; the test nodes are removed below).
  sleep 5
  local p cwd
  for p in /proc/[0-9]*; do
    cwd=$(readlink "$p/cwd" 2>/dev/null) || continue
    [[ ${p#/proc/} == "$$" || $(cat "$p/comm" 2>/dev/null) == conmon ]] && continue
    [[ $cwd == "$ROOT" || $cwd == "$ROOT"/* ]] && kill -KILL "${p#/proc/}" 2>/dev/null
  done
  local d names=()
  for d in molecule/*/; do names+=("$(basename "$d")"); done
  podman ps -a --format '{{.Names}}' | grep -E "^($(IFS='|'; echo "${names[*]}"))-" | xargs -r podman rm -f -t 5 >/dev/null 2>&1
  exit 143
}
trap on_signal TERM INT HUP

# slug NAME: the file name of a check's log (.cache/logs) and result row (.cache/results).
slug() { echo "$1" | tr '/ ' '__'; }

# record NAME STATUS SECONDS DETAIL
record() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >"$RESULTS/$(slug "$1").tsv"; }

# check NAME COMMAND...: run, log to .cache/logs/NAME.log, record PASS/FAIL; the CPU seconds (user + system) of
# the command and every process it waited for (a scenario's molecule, ansible-playbook, apt, DKMS and gcc in the
# nodes: the connection's nsenter waits for them) go to .cache/results/NAME.cpu, from bash's `times`.
check() {
  local name=$1; shift
  local log t0 rc detail
  if [[ ${SKIP_CHECKS:-0} == 1 && $name != molecule:* && $name != setup && $name != package* ]]; then
    record "$name" "NOT RUN" 0 "SKIP_CHECKS=1"; return 0
  fi
  log="$LOGS/$(slug "$name").log"
  t0=$(date +%s)
  printf '[test] %-34s ...\n' "$name"
  # In the background and waited for: bash runs a TERM/INT trap only once its foreground child has ended, but it
  # interrupts a `wait` (on_signal below).
  ( "$@"; rc=$?; times >"$RESULTS/$(slug "$name").cpu"; exit $rc ) >"$log" 2>&1 &
  FOREGROUND_PID=$!
  wait "$FOREGROUND_PID"
  rc=$?
  FOREGROUND_PID=""
  detail=$(summary_of "$log")
  if [[ $rc -eq 0 ]]; then
    record "$name" PASS $(( $(date +%s) - t0 )) "$detail"
  else
    record "$name" FAIL $(( $(date +%s) - t0 )) "rc=$rc ${detail:-see $log}"
    echo "----- $name failed (rc=$rc); last lines of $log:"; tail -n 40 "$log"; echo "-----"
  fi
  return $rc
}

# cpu_of NAME: the CPU seconds of a check (its `times` children line: "XmY.YYYs XmY.YYYs"), or "-" when the
# check was cut before it could write them.
cpu_of() {
  local f
  f="$RESULTS/$(slug "$1").cpu"
  [[ -s $f ]] || { echo "-"; return; }
  awk 'NR == 2 { split($1, u, /[ms]/); split($2, s, /[ms]/); printf "%.0f", u[1] * 60 + u[2] + s[1] * 60 + s[2] }' "$f"
}
# nodes_cpu_of NAME: the CPU seconds the check's test nodes used in their own cgroups (systemd units, triggers:
# what the connection did not start, so `times` did not see it; scripts/watchdog.py), or 0.
nodes_cpu_of() {
  local f
  f="$RESULTS/$(slug "$1").ctr"
  [[ -s $f ]] && awk '{ printf "%.0f", $1 }' "$f" || echo 0
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

# The test nodes' package cache (apt-cacher-ng): every package is downloaded once per machine.
if check "package cache for the test nodes" bash scripts/apt-cache.sh start; then
  trap 'bash scripts/apt-cache.sh stop' EXIT
fi
# ---- molecule scenarios --------------------------------------------------
# The whole molecule stage (build or reuse the node images, then the scenarios in lanes) runs in the
# background from the start; the static checks, the integration tests, the real charts and the build
# run beside it in the foreground. The scenarios wait on the archives and on dpkg as much as on the
# CPU, so the two overlap (measured: docs/benchmarks.md).
image_status() { cat ".cache/images/$1.status" 2>/dev/null || echo "NOT RUN: image $1 was not built"; }


# A scenario is ended only when it hangs (scripts/watchdog.py: no output, no CPU and no I/O for MOLECULE_IDLE
# seconds), or past the backstop (MOLECULE_TIMEOUT, stretched on a machine slower than the reference). It then
# FAILS, with no retry: its row names the molecule step and the task it was in, and its nodes are removed as after
# any other run.
scenario_limit() {
  python3 -c 'import sys; print(int(float(sys.argv[1]) * max(1.0, 1 / float(sys.argv[2]))))' \
    "${MOLECULE_TIMEOUT:-3600}" "${CAL_FACTOR:-1}"
}
remove_instances() {
  # Leftover instances of an interrupted earlier run would clash with create.
  podman ps -a --format '{{.Names}}' | grep -E "^$1-" | xargs -r podman rm -f -t 5 >/dev/null 2>&1
}

# Converge once, reuse. A producer's named nodes are committed to images (podman
# commit) after the whole scenario passed, and its consumers start from them through
# BAREMETAL_CONVERGED_<NODE> (their molecule.yml), held back by scripts/run-scenarios.py until the
# producer has finished. A consumer whose producer failed or was not run converges its own nodes
# (the same molecule.yml without the variable): each scenario still runs alone with `molecule test`.
produced_nodes() {
  case $1 in
    nvidia_driver) echo "ubuntu2404 ubuntu2404-dkms ubuntu2604" ;;
    nvidia_driver_debian12) echo "debian12" ;;
  esac
}
# producer_of CONSUMER: the scenarios whose converged nodes it starts from (one or more).
producer_of() {
  case $1 in
    upgrade_driver | maintenance_kill | execution_environment) echo nvidia_driver ;;
    uninstall | nvidia_driver_next_kernel) echo "nvidia_driver nvidia_driver_debian12" ;;
  esac
}
converged_image() { echo "localhost/baremetal-gpu-converged-$1:$RUN_TAG"; }
converged_var() { echo "BAREMETAL_CONVERGED_$(echo "$1" | tr 'a-z-' 'A-Z_')"; }

# stamp_steps: molecule's output with the time of day before each step's start and end line, so
# the log shows where a scenario spends its time (docs/benchmarks.md).
stamp_steps() {
  local line
  while IFS= read -r line; do
    if [[ $line == INFO*'] Executing'* || $line == INFO*'] Executed'* ]]; then
      printf '%(%H:%M:%S)T %s\n' -1 "$line"
    else
      printf '%s\n' "$line"
    fi
  done
}
# run_molecule SCENARIO LIMIT [OPTIONS...]: molecule test under the watchdog; its status is molecule's, or 124 when
# the watchdog ended it (its last line says why). The CPU of the scenario's test nodes goes to $RESULTS/<row>.ctr.
run_molecule() {
  local s=$1 limit=$2
  shift 2
  set -o pipefail
  # shellcheck disable=SC2016  # expanded by the inner bash
  python3 scripts/watchdog.py --idle "${MOLECULE_IDLE:-600}" --max "$limit" --containers "$s-" \
    --cpu-file "$RESULTS/$(slug "molecule: $s").ctr" -- bash -c '
    # --destroy never (a producer) also skips the first destroy, which resets molecule'"'"'s state of the
    # scenario: without it, a killed earlier run'"'"'s state says "created" and create is skipped.
    if [[ " $* " == *" --destroy never "* ]]; then molecule destroy -s "$0" || exit; fi
    exec molecule test -s "$0" "$@"' "$s" "$@" 2>&1 | stamp_steps
}

# where_it_stopped LOG: the molecule step and the last task a cut-off run had started.
where_it_stopped() {
  local step task
  step=$(grep -oE 'INFO +\[[a-z0-9_]+ > [a-z_]+\] Executing' "$1" | tail -n 1 | sed -E 's/.* > ([a-z_]+)\].*/\1/')
  task=$(grep -oE '^(TASK|RUNNING HANDLER) \[[^]]*\]' "$1" | tail -n 1)
  echo "step ${step:-unknown}, ${task:-no task started}"
}

run_scenario() {
  local s=$1 limit rc name file producers producer node img var note="" opts=()
  limit=$(scenario_limit "$s")
  name="molecule: $s"
  file=$(slug "$name")
  remove_instances "$s"
  producers=$(producer_of "$s")
  if [[ -n $producers ]]; then
    note="started from the converged nodes of $producers: "
    for producer in $producers; do
      for node in $(produced_nodes "$producer"); do
        img=$(converged_image "$node")
        var=$(converged_var "$node")
        if podman image exists "$img"; then
          export "$var=$img"
          note+="$node "
        else
          unset "$var"
        fi
      done
    done
    [[ $note == *": " ]] && note="the converged nodes of $producers were not committed in this run: converged its own. "
  fi
  # A producer keeps its nodes after the run (--destroy never) until they are committed.
  [[ -n $(produced_nodes "$s") ]] && opts=(--destroy never)
  check "$name" run_molecule "$s" "$limit" "${opts[@]}"
  rc=$?
  if [[ $rc -eq 124 ]]; then
    IFS=$'\t' read -r _n _st secs _detail <"$RESULTS/$file.tsv"
    record "$name" FAIL "$secs" "$(grep -o '\[watchdog\] .*' "$LOGS/$file.log" | tail -n 1) in $(where_it_stopped "$LOGS/$file.log"); nodes removed"
    echo "[test] molecule: $s was ended by the watchdog; its nodes are removed, no retry"
  elif [[ $rc -eq 0 && -n $(produced_nodes "$s") ]]; then
    local t0 pids=() failed=0
    t0=$(date +%s)
    for node in $(produced_nodes "$s"); do
      # apt's downloaded .debs (hundreds of MB a node) are not part of the converged state; the consumers'
      # apt gets any it needs again through the package cache. Committing them cost minutes of disk I/O.
      { podman exec "$s-$node" apt-get clean && podman commit -q "$s-$node" "$(converged_image "$node")" >/dev/null; } &
      pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || failed=1; done
    IFS=$'\t' read -r _n st secs detail <"$RESULTS/$file.tsv"
    if [[ $failed -eq 0 ]]; then
      note="committed $(produced_nodes "$s") for reuse in $(( $(date +%s) - t0 )) s. "
    else
      note="committing the converged nodes failed (their consumers converge their own). "
    fi
    record "$name" "$st" "$secs" "$note$detail"
    note=""
  fi
  if [[ -n $note ]]; then
    IFS=$'\t' read -r _n st secs detail <"$RESULTS/$file.tsv"
    record "$name" "$st" "$secs" "$note$detail"
  fi
  remove_instances "$s"
  return $rc
}
export -f run_scenario scenario_limit remove_instances check record slug summary_of cpu_of nodes_cpu_of produced_nodes producer_of converged_image \
  converged_var where_it_stopped stamp_steps run_molecule
RUN_TAG=run-$START
export RESULTS LOGS RUN_TAG CAL_FACTOR
# The previous run's converged nodes.
podman images --format '{{.Repository}}:{{.Tag}}' | grep '^localhost/baremetal-gpu-converged-' \
  | xargs -r podman rmi -f >/dev/null 2>&1

molecule_stage() {
  # The image build is a CPU-bound job of its own: beside the foreground only when there is a core for it.
  while (( $(nproc) < 2 )) && [[ ! -e $FOREGROUND_DONE ]]; do sleep 5; done
  # The test nodes a scenario's platforms use (localhost/baremetal-gpu-<node>; the nodes of the OS matrix).
  nodes_of() { grep -o 'baremetal-gpu-[a-z0-9]*' "molecule/$1/molecule.yml" | sort -u | sed 's/^baremetal-gpu-//'; }
  selected=()
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
    selected+=("$s")
  done
  # Only the nodes the selected scenarios use are built.
  mapfile -t wanted < <(for s in "${selected[@]}"; do nodes_of "$s"; done | sort -u)
  if ((${#wanted[@]})); then
    bash scripts/build-images.sh "${wanted[@]}" >"$LOGS/images.log" 2>&1
    cat "$LOGS/images.log"
  fi
  scenarios=()
  for s in "${selected[@]}"; do
    reason=""
    while read -r node; do
      st=$(image_status "$node")
      [[ $st == ok ]] || reason="$node node: $st"
    done < <(nodes_of "$s")
    if [[ -n $reason ]]; then
      record "molecule: $s" "NOT RUN" 0 "$reason"
      continue
    fi
    scenarios+=("$s")
  done

  # The order in which the lanes take the scenarios. The DKMS builds are the cost (CPU: docs/benchmarks.md): the
  # two producers (nvidia_driver and nvidia_driver_debian12) first, their consumers as soon as they are done, the other
  # DKMS scenarios spread between scenarios without a build, the short ones at the end. A scenario whose producers
  # have not all finished is passed over until they have (scripts/run-scenarios.py); scenarios not listed here run
  # last, in name order.
  LANE_ORDER="nvidia_driver nvidia_driver_debian12 container_toolkit nvidia_driver_releases upgrade_driver nvidia_driver_jammy uninstall nvidia_driver_next_kernel maintenance_kill execution_environment nvidia_driver_switch nvidia_driver_mismatch rke2_nvidia_runtime gpu_nodes_batching preflight"
  ordered=()
  for s in $LANE_ORDER; do
    for t in "${scenarios[@]}"; do [[ $t == "$s" ]] && ordered+=("$s"); done
  done
  for t in "${scenarios[@]}"; do
    [[ " $LANE_ORDER " == *" $t "* ]] || ordered+=("$t")
  done
  deps=()
  for t in "${ordered[@]}"; do
    for p in $(producer_of "$t"); do deps+=("$t=$p"); done
  done
  if ((${#ordered[@]})); then
    # As many lanes as cores, less one while the foreground checks run (scripts/run-scenarios.py).
    python3 scripts/run-scenarios.py --cores "$(nproc)" --foreground-done "$FOREGROUND_DONE" \
      --jobs-log "$RESULTS/.jobs" --deps "${deps[@]}" -- "${ordered[@]}"
  fi

}
FOREGROUND_DONE=$RESULTS/.foreground-done
rm -f "$FOREGROUND_DONE"
molecule_stage &
MOLECULE_PID=$!

# ---- static checks -------------------------------------------------------
check "role docs and argument_specs in step" python3 scripts/role-docs.py --check
check "yamllint" yamllint -s .
check "ansible-lint (production profile)" ansible-lint --nocolor
check "shellcheck" bash -c 'git ls-files -z --cached --others --exclude-standard -- "*.sh" .ci/run | xargs -0 shellcheck -x'
check "changelog fragments lint" antsibull-changelog lint
check "ansible-test sanity" bash scripts/ansible-test.sh sanity
check "ansible-test units" bash scripts/ansible-test.sh units
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
    && grep -qE '^[0-9]+ skipped in ' "$LOGS/$(slug "$charts_row").log" 2>/dev/null; then
  record "$charts_row" "NOT RUN" 0 "$(grep -m1 -o 'NOT RUN: .*' "$LOGS/$(slug "$charts_row").log")"
fi
check "collection build and install" bash scripts/check-build.sh
# The collection as Galaxy and the docsite see it: antsibull-docs' lint of every plugin's and
# role's documentation, and galaxy-importer on the built tarball (their own venv: scripts/galaxy-venv.sh).
check "docs lint (antsibull-docs)" bash scripts/check-docs.sh
check "galaxy import (galaxy-importer)" bash scripts/check-galaxy.sh
# requires_ansible tested at its lower bound too: units + the import and compile sanity tests with the lowest
# ansible-core meta/runtime.yml claims, in a venv of its own (the highest is the .venv of the rows above).
check "ansible-core range: units + import/compile with the lowest claimed" bash scripts/check-core-range.sh
touch "$FOREGROUND_DONE"
[[ -n $MOLECULE_PID ]] && wait "$MOLECULE_PID"

# ---- summary ----------------------------------------------------------------
[[ -n $LOAD_PID ]] && kill "$LOAD_PID" 2>/dev/null
pass=0; fail=0; notrun=0; cpu_total=0; nodes_total=0
summary=$RESULTS/summary.md
{
  echo
  echo "| check | result | seconds | CPU s (host) | CPU s (nodes) | detail |"
  echo "|---|---|---|---|---|---|"
} >"$summary"
for r in "$RESULTS"/*.tsv; do
  IFS=$'\t' read -r name status secs detail <"$r"
  case $status in PASS) pass=$((pass+1));; FAIL) fail=$((fail+1));; *) notrun=$((notrun+1));; esac
  cpu=$(cpu_of "$name")
  nodes=$(nodes_cpu_of "$name")
  [[ $cpu == - ]] || cpu_total=$((cpu_total + cpu))
  nodes_total=$((nodes_total + nodes))
  echo "| $name | $status | $secs | $cpu | $nodes | $detail |" >>"$summary"
done
total=$(( $(date +%s) - START ))
read -r busy_end _ < <(stat_cpu)
machine_cpu=$(( (busy_end - BUSY_START) / $(getconf CLK_TCK) ))
checks_cpu=$((cpu_total + nodes_total))
{
  printf '\nTotal time: %s s (%d min %02d s) of the %s s budget (%d %%). Logs: .cache/logs/\n' \
    "$total" $((total / 60)) $((total % 60)) "$BUDGET" $((100 * total / BUDGET))
  printf 'CPU of the checks: %s s (host %s: the processes each check waited for; nodes %s: the test nodes'"'"' own cgroups), %s s on the reference scale (calibration %s s, factor %s).\n' \
    "$checks_cpu" "$cpu_total" "$nodes_total" "$(awk -v c="$checks_cpu" -v f="$CAL_FACTOR" 'BEGIN { printf "%.0f", c * f }')" \
    "$CALIBRATION" "$CAL_FACTOR"
  printf 'The machine was busy %s s of %s s (%s cores) during the run: %s s not in any row (the harness, the package cache, other work on the machine).\n' \
    "$machine_cpu" $((total * $(nproc))) "$(nproc)" $((machine_cpu - checks_cpu))
  printf 'CPU-bound jobs at once (foreground included): at most %s on %s cores.\n' \
    "$(awk -F'\t' 'BEGIN { m = 0 } $3 > m { m = $3 } END { print m }' "$RESULTS/.jobs" 2>/dev/null || echo 0)" "$(nproc)"
  printf 'Load average (1 min): at the start %s, mean %s, highest %s (sampled each minute); at the end %s.\n' \
    "${LOAD_START%% *}" "$(awk '{ s += $1; n++ } END { if (n) printf "%.1f", s / n; else print "-" }' "$RESULTS/.load" 2>/dev/null)" \
    "$(sort -g "$RESULTS/.load" 2>/dev/null | tail -n 1)" "$(cut -d' ' -f1 /proc/loadavg)"
  printf 'Package cache this run: %s\n' "$(bash scripts/apt-cache.sh stats "$START")"
  ((total > BUDGET)) && printf 'OVER BUDGET: %s s > %s s\n' "$total" "$BUDGET"
} >>"$summary"
cat "$summary"
echo "$pass passed, $fail failed, $notrun skipped"
[[ $fail -eq 0 ]]
