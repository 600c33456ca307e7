#!/usr/bin/env bash
# Benchmark (not a test): where the integration suite (or any command that runs ansible-playbook) spends its time,
# task by task. Every ansible-playbook the command starts appends each task's start to a log through the callback
# benchmarks/task_profile/task_profile.py (it prints nothing, so the tests behave as always); the log is then summed
# by task name and by playbook.
#
#   bash benchmarks/bench_task_profile.sh                      # the integration suite (about 21 minutes idle)
#   bash benchmarks/bench_task_profile.sh python3 -m pytest -q tests/integration/test_render.py
#
# It found the cluster roles' render writes at 17 % of the suite (docs/benchmarks.md).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=scripts/env.sh
. scripts/env.sh
LOG="${TASK_PROFILE_LOG:-$(mktemp /tmp/task-profile.XXXXXX)}"
: >"$LOG"
if (($# == 0)); then
  set -- python3 -m pytest -p no:cacheprovider -q tests/integration --ignore=tests/integration/test_charts.py
fi
start=$(date +%s)
ANSIBLE_CALLBACK_PLUGINS="$ROOT/benchmarks/task_profile" ANSIBLE_CALLBACKS_ENABLED=task_profile \
  TASK_PROFILE_LOG="$LOG" "$@" || echo "bench_task_profile: the command failed (rc=$?); its tasks are summed all the same"
echo "wall: $(( $(date +%s) - start )) s; log: $LOG"
python3 benchmarks/task_profile/summarize.py "$LOG" "${TOP:-40}"
