#!/usr/bin/env bash
# Benchmark (not a test): the configuration-only part of the host layer (no driver build) on
# 1 lab node against 8 lab nodes.
#
#   bash benchmarks/bench_fanout.sh              (FORKS=8 by default; about 5 minutes on 2 cores)
#
# What runs is the part that can run here: container_toolkit registering the nvidia runtime
# with containerd (container_toolkit_runtime=containerd: drop-in, import in config.toml,
# `containerd config dump` validation, containerd restart), with the tag nvidia_repo skipped as
# in the lab (NVIDIA's repository cannot be reached here). rke2_nvidia_runtime is left out:
# there is no RKE2 here and the role refuses a node without it (ROLES/EXTRA_ARGS change this).
# Nodes: Debian 12 systemd containers (podman) from an image with Debian's containerd, built
# once from localhost/baremetal-gpu-debian12:latest and kept as localhost/baremetal-gpu-bench-containerd.
# First 1 fresh node, then 8 other fresh nodes, each a first converge followed by a rerun.
# Every node it starts is removed on exit. Prints a table: wall times, per-node time, the
# 8-node/1-node ratio (8.0 would mean no parallelism at all), and the changed counts.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=scripts/env.sh
. scripts/env.sh
BASE_IMAGE=localhost/baremetal-gpu-debian12:latest
IMAGE=localhost/baremetal-gpu-bench-containerd:latest
PREFIX=bench-fanout
FORKS="${FORKS:-8}"
ROLES="${ROLES:-baremetal.gpu.container_toolkit}"
EXTRA_ARGS="${EXTRA_ARGS:--e container_toolkit_runtime=containerd}"
SKIP_TAGS="${SKIP_TAGS:-nvidia_repo}"
WORK="$(mktemp -d)"
NODES=()
cleanup() {
  local n
  for n in "${NODES[@]}"; do podman rm -f "$n" >/dev/null 2>&1 || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
export ANSIBLE_PIPELINING=true ANSIBLE_RETRY_FILES_ENABLED=false ANSIBLE_FORKS="$FORKS"

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
# Sum of one recap counter over all hosts of a log.
recap_sum() { awk -v k="$2" '/ : ok=/ { for (i = 1; i <= NF; i++) if ($i ~ "^" k "=") s += substr($i, length(k) + 2) } END { print s + 0 }' "$1"; }

start_nodes() {   # start_nodes <name>...: fresh nodes, wait for systemd
  local n state
  for n in "$@"; do
    podman rm -f "$n" >/dev/null 2>&1 || true
    podman run -d --systemd=always --name "$n" --hostname "$n" "$IMAGE" /sbin/init >/dev/null
    NODES+=("$n")
  done
  for n in "$@"; do
    for _ in $(seq 1 60); do
      state=$(podman exec "$n" systemctl is-system-running 2>/dev/null || true)
      [[ $state == running || $state == degraded ]] && break
      sleep 1
    done
  done
}

write_inventory() {   # write_inventory <file> <name>...
  local file=$1 n
  shift
  {
    echo "all:"
    echo "  children:"
    echo "    gpu_nodes:"
    echo "      hosts:"
    for n in "$@"; do
      echo "        $n:"
      echo "          ansible_connection: containers.podman.podman"
      echo "          ansible_python_interpreter: /usr/bin/python3"
    done
  } >"$file"
}

{
  echo "- name: Configuration-only part of the host layer"
  echo "  hosts: gpu_nodes"
  echo "  become: true"
  echo "  gather_facts: true"
  echo "  roles:"
  for r in $ROLES; do echo "    - role: $r"; done
} >"$WORK/play.yml"

if ! podman image exists "$IMAGE"; then
  echo "bench_fanout: building $IMAGE (Debian's containerd on the Debian 12 node image), once" >&2
  printf 'FROM %s\nRUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends containerd >/dev/null && rm -rf /var/lib/apt/lists/*\n' \
    "$BASE_IMAGE" >"$WORK/Containerfile"
  podman build -q -t "$IMAGE" -f "$WORK/Containerfile" "$WORK" >/dev/null
fi

declare -A first rerun changed_first changed_rerun
for count in 1 8; do
  names=()
  for i in $(seq 1 "$count"); do names+=("$PREFIX-$count-$i"); done
  start_nodes "${names[@]}"
  write_inventory "$WORK/inv-$count.yml" "${names[@]}"
  for phase in first rerun; do
    t0=$(now)
    # shellcheck disable=SC2086  # EXTRA_ARGS is a list of arguments
    ansible-playbook -i "$WORK/inv-$count.yml" "$WORK/play.yml" --skip-tags "$SKIP_TAGS" $EXTRA_ARGS >"$WORK/$count-$phase.log" 2>&1 \
      || { echo "$count node(s), $phase run failed:"; tail -40 "$WORK/$count-$phase.log"; exit 1; }
    t=$(secs "$t0" "$(now)")
    if [[ $phase == first ]]; then first[$count]=$t; changed_first[$count]=$(recap_sum "$WORK/$count-$phase.log" changed)
    else rerun[$count]=$t; changed_rerun[$count]=$(recap_sum "$WORK/$count-$phase.log" changed); fi
  done
  for n in "${names[@]}"; do podman rm -f "$n" >/dev/null 2>&1 || true; done
done

printf '\nFan-out of %s, 1 node against 8 (forks %s), %s, %s cores\n\n' "$ROLES" "$FORKS" "$(date -u +%F)" "$(nproc)"
printf '| %-6s | %-12s | %-16s | %-9s | %-18s |\n' nodes "first run s" "first s per node" "rerun s" "changed first/rerun"
printf '|%s|%s|%s|%s|%s|\n' "--------" "--------------" "------------------" "-----------" "--------------------"
for count in 1 8; do
  printf '| %-6s | %-12s | %-16s | %-9s | %-18s |\n' "$count" "${first[$count]}" \
    "$(awk -v t="${first[$count]}" -v n="$count" 'BEGIN { printf "%.1f", t / n }')" "${rerun[$count]}" \
    "${changed_first[$count]}/${changed_rerun[$count]}"
done
printf '\nratio 8 nodes / 1 node: first run %s, rerun %s\n' \
  "$(awk -v a="${first[8]}" -v b="${first[1]}" 'BEGIN { printf "%.2f", a / b }')" \
  "$(awk -v a="${rerun[8]}" -v b="${rerun[1]}" 'BEGIN { printf "%.2f", a / b }')"
