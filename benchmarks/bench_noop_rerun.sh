#!/usr/bin/env bash
# Benchmark (not a test): the host layer's no-op rerun against the floor of the same number of
# `ansible.builtin.stat` tasks on the same node.
#
#   bash benchmarks/bench_noop_rerun.sh          (after `make lab`; REPS=3 by default)
#
# The node is the lab node that `make lab` provisioned (baremetal-gpu-lab, inventory/lab).
# The script does not create or remove it; a rerun must change nothing, and the changed count
# of every rerun is printed. N is the number of tasks the rerun ran on the host (ok + changed
# in the recap); the floor is a play of N stat tasks over the same podman connection. It prints
# a table: median wall times, the ratio, and the changed counts.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=scripts/env.sh
. scripts/env.sh
NODE=baremetal-gpu-lab
INVENTORY=inventory/lab
REPS="${REPS:-3}"
SKIP_TAGS=nvidia_repo,rke2_nvidia_runtime   # as in make lab: no NVIDIA repository, no RKE2
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
export ANSIBLE_PIPELINING=true ANSIBLE_RETRY_FILES_ENABLED=false

if [[ $(podman inspect -f '{{.State.Running}}' "$NODE" 2>/dev/null) != true ]]; then
  echo "bench_noop_rerun: the lab node $NODE is not running; run 'make lab' first" >&2
  exit 2
fi

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
recap() { awk -v h="$NODE" -v k="$2" '$1 == h { for (i = 1; i <= NF; i++) if ($i ~ "^" k "=") print substr($i, length(k) + 2) }' "$1" | tail -1; }

rerun_times=() changed_counts=() n_tasks=0
for r in $(seq 1 "$REPS"); do
  t0=$(now)
  ansible-playbook -i "$INVENTORY" playbooks/gpu_nodes.yml --skip-tags "$SKIP_TAGS" >"$WORK/rerun-$r.log" 2>&1 \
    || { echo "rerun $r failed:"; tail -30 "$WORK/rerun-$r.log"; exit 1; }
  rerun_times+=("$(secs "$t0" "$(now)")")
  changed_counts+=("$(recap "$WORK/rerun-$r.log" changed)")
  n_tasks=$(($(recap "$WORK/rerun-$r.log" ok) + $(recap "$WORK/rerun-$r.log" changed)))
done

{
  echo "- name: Floor, $n_tasks stat tasks"
  echo "  hosts: gpu_nodes"
  echo "  gather_facts: false"
  echo "  become: true"
  echo "  tasks:"
  for i in $(seq 1 "$n_tasks"); do
    echo "    - name: Stat $i"
    echo "      ansible.builtin.stat:"
    echo "        path: /etc/hostname"
  done
} >"$WORK/floor.yml"

floor_times=()
for r in $(seq 1 "$REPS"); do
  t0=$(now)
  ansible-playbook -i "$INVENTORY" "$WORK/floor.yml" >"$WORK/floor-$r.log" 2>&1 \
    || { echo "floor run $r failed:"; tail -30 "$WORK/floor-$r.log"; exit 1; }
  floor_times+=("$(secs "$t0" "$(now)")")
done

rerun_med=$(printf '%s\n' "${rerun_times[@]}" | median)
floor_med=$(printf '%s\n' "${floor_times[@]}" | median)
printf '\nNo-op rerun of the host layer against %s stat tasks, %s (%s, %s cores), %s runs each\n\n' \
  "$n_tasks" "$NODE" "$(date -u +%F)" "$(nproc)" "$REPS"
printf '| %-34s | %-20s | %-10s |\n' "run" "wall s (each)" "median s"
printf '|%s|%s|%s|\n' "------------------------------------" "----------------------" "------------"
printf '| %-34s | %-20s | %-10s |\n' "host layer rerun (changed: ${changed_counts[*]})" "${rerun_times[*]}" "$rerun_med"
printf '| %-34s | %-20s | %-10s |\n' "$n_tasks x ansible.builtin.stat" "${floor_times[*]}" "$floor_med"
printf '| %-34s | %-20s | %-10s |\n' "ratio rerun / floor" "" "$(awk -v a="$rerun_med" -v b="$floor_med" 'BEGIN { printf "%.2f", a / b }')"
