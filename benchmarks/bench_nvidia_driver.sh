#!/usr/bin/env bash
# Benchmark of the nvidia_driver role against a bare apt-get install of the same packages.
#
#   benchmarks/bench_nvidia_driver.sh [debian12|debian13|ubuntu2204|ubuntu2404]   (default debian12)
#   BENCH_SCOPE=host-layer benchmarks/bench_nvidia_driver.sh debian12
#   BENCH_CONNECTION=podman benchmarks/bench_nvidia_driver.sh ubuntu2404   (default podman_nsenter)
#   BENCH_COLLECTIONS_PATH=/tmp/head benchmarks/bench_nvidia_driver.sh ubuntu2404
#
# BENCH_COLLECTIONS_PATH: a collections path searched first (ansible_collections/baremetal/gpu there, e.g. another
# commit's tree from git archive), to measure another tree the same way on the same machine.
#
# BENCH_CONNECTION: podman_nsenter (default; the connection the molecule scenarios use,
# tests/molecule_plugins/connection, a few milliseconds per command) or podman (containers.podman.podman,
# about 0.35 s per podman process, as the figures in docs/benchmarks.md before 2026-11-28 were taken).
# Each role run is profiled task by task (benchmarks/task_profile, a callback that prints nothing): the
# table is followed by the TOP (default 15) tasks by wall time of the converge and of the rerun.
# BENCH_KEEP=<dir> keeps the runs' logs and task profiles there.
#
# BENCH_SCOPE=role (default) runs the nvidia_driver role alone; BENCH_SCOPE=host-layer runs
# playbooks/gpu_nodes.yml with the lab's group_vars and skip tags (nvidia_repo: NVIDIA's
# repository cannot be reached here; rke2_nvidia_runtime: no RKE2), i.e. nvidia_driver and the
# configuration part of container_toolkit, against the same bare floor.
#
# Two identical fresh nodes from the same image (the images have a kernel installed, as a real
# machine has). Then, one after the other so they do not share the CPUs:
#   bare: add the same apt components the role adds, apt-get update, apt-get install
#         --no-install-recommends of the packages the role installs with its defaults there
#         (DKMS builds; on ubuntu2404 Canonical's prebuilt open modules, no DKMS)
#   role: ansible-playbook with baremetal.gpu.nvidia_driver (first converge), then a rerun; the play gathers the
#         facts the role reads (gather_subset min, as playbooks/gpu_nodes.yml gathers min and network)
# and prints a table: wall times, the role/bare ratio, the rerun time and its changed count, the
# machine's core count and load average. Takes about 15-20 minutes on 2 cores with DKMS, about 4 without.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=/dev/null
. "$ROOT/scripts/env.sh"
if [ -n "${BENCH_COLLECTIONS_PATH:-}" ]; then export ANSIBLE_COLLECTIONS_PATH="$BENCH_COLLECTIONS_PATH:$ANSIBLE_COLLECTIONS_PATH"; fi
NODE="${1:-debian12}"
IMAGE="localhost/baremetal-gpu-${NODE}:latest"
BARE="bench-nvd-bare-$NODE"
ROLE="bench-nvd-role-$NODE"
WORK="$(mktemp -d)"
cleanup() { podman rm -f "$BARE" "$ROLE" >/dev/null 2>&1 || true; rm -rf "$WORK"; }
trap cleanup EXIT

case "$NODE" in
  debian12)
    PKGS="nvidia-driver nvidia-kernel-dkms nvidia-smi firmware-misc-nonfree initramfs-tools"
    ;;
  debian13)
    PKGS="nvidia-driver nvidia-kernel-dkms nvidia-smi firmware-misc-nonfree initramfs-tools"
    ;;
  ubuntu2204)
    # The role's default there: open modules (auto), DKMS (no prebuilt modules for the node's kernel).
    PKGS="nvidia-driver-580-open nvidia-dkms-580-open initramfs-tools"
    ;;
  ubuntu2404)
    # The role's default there: open modules, Canonical's prebuilt modules for the node's kernel, no DKMS.
    PKGS="nvidia-headless-no-dkms-580-open nvidia-utils-580 libnvidia-gl-580 libnvidia-extra-580 libnvidia-decode-580
          libnvidia-encode-580 libnvidia-fbc1-580 xserver-xorg-video-nvidia-580 initramfs-tools"
    ;;
  *) echo "unknown node $NODE (debian12, debian13, ubuntu2204 or ubuntu2404)" >&2; exit 2 ;;
esac
PKGS="$(echo "$PKGS" | tr -s ' \n' '  ')"   # one line: a newline would end the apt-get command in bash -c below

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

for c in "$BARE" "$ROLE"; do
  podman rm -f "$c" >/dev/null 2>&1 || true
  podman run -d --name "$c" --systemd=always "$IMAGE" /sbin/init >/dev/null
done
sleep 3
KVER="$(podman exec "$BARE" bash -c 'ls /boot | sed -n "s/^vmlinuz-//p" | head -n1')"
case "$NODE" in
  ubuntu2404) KPKGS="linux-modules-nvidia-580-open-$KVER" ;;
  *) KPKGS="linux-headers-$KVER" ;;
esac

case "${BENCH_CONNECTION:-podman_nsenter}" in
  podman_nsenter) CONNECTION=podman_nsenter ;;
  podman) CONNECTION=containers.podman.podman ;;
  *) echo "unknown BENCH_CONNECTION ${BENCH_CONNECTION} (podman_nsenter or podman)" >&2; exit 2 ;;
esac
export ANSIBLE_CONNECTION_PLUGINS="$ROOT/tests/molecule_plugins/connection" ANSIBLE_PIPELINING=true
export ANSIBLE_CALLBACK_PLUGINS="$ROOT/benchmarks/task_profile" ANSIBLE_CALLBACKS_ENABLED=task_profile
cat > "$WORK/inventory.yml" <<INV
all:
  hosts:
    $ROLE:
      ansible_connection: $CONNECTION
      ansible_python_interpreter: /usr/bin/python3
INV
SCOPE="${BENCH_SCOPE:-role}"
case "$SCOPE" in
  role)
    PLAYBOOK="$WORK/play.yml"
    PLAY_ARGS=()
    cat > "$PLAYBOOK" <<'PLAY'
- name: Bench nvidia_driver
  hosts: all
  gather_facts: true
  gather_subset: [min]
  roles:
    - role: baremetal.gpu.nvidia_driver
PLAY
    ;;
  host-layer)
    # The lab's settings (no reboot in a container, no GPU expected), in group gpu_nodes.
    PLAYBOOK="$ROOT/playbooks/gpu_nodes.yml"
    PLAY_ARGS=(-e "@$ROOT/inventory/lab/group_vars/all.yml" --skip-tags "nvidia_repo,rke2_nvidia_runtime")
    printf '  children:\n    gpu_nodes:\n      hosts:\n        %s: {}\n' "$ROLE" >> "$WORK/inventory.yml"
    ;;
  *) echo "unknown BENCH_SCOPE $SCOPE (role or host-layer)" >&2; exit 2 ;;
esac

LOAD_BEFORE="$(cut -d' ' -f1-3 /proc/loadavg)"
# Bare: the same components on the node's own mirror (keeping its Signed-By), then one apt-get install.
t0="$(now)"
podman exec "$BARE" bash -c "
  set -e
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    sed -e 's/^Components: .*/Components: contrib non-free/' /etc/apt/sources.list.d/debian.sources > /etc/apt/sources.list.d/bare.sources
  elif [ -f /etc/apt/sources.list.d/ubuntu.sources ]; then
    sed -e 's/^Components: .*/Components: restricted multiverse/' /etc/apt/sources.list.d/ubuntu.sources > /etc/apt/sources.list.d/bare.sources
  else
    mirror=\$(awk '\$1==\"deb\" {print \$2; exit}' /etc/apt/sources.list)
    suite=\$(awk '\$1==\"deb\" {print \$3; exit}' /etc/apt/sources.list)
    if [ '$NODE' = debian12 ]; then
      echo \"deb \$mirror \$suite contrib non-free non-free-firmware\" > /etc/apt/sources.list.d/bare.list
    else
      printf 'deb %s %s restricted multiverse\\ndeb %s %s-updates main restricted universe multiverse\\ndeb %s %s-security main restricted universe multiverse\\n' \\
        \$mirror \$suite \$mirror \$suite \$mirror \$suite > /etc/apt/sources.list.d/bare.list
    fi
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $KPKGS $PKGS >/dev/null
" > "$WORK/bare.log" 2>&1 || { echo "the bare install failed:"; tail -20 "$WORK/bare.log"; exit 1; }
t1="$(now)"
BARE_S="$(secs "$t0" "$t1")"
BARE_DKMS="$(podman exec "$BARE" dkms status 2>/dev/null | tr "\n" " " || true)"

t0="$(now)"
TASK_PROFILE_LOG="$WORK/converge.jsonl" ANSIBLE_STDOUT_CALLBACK=ansible.builtin.default ansible-playbook -i "$WORK/inventory.yml" "$PLAYBOOK" "${PLAY_ARGS[@]}" > "$WORK/role1.log" 2>&1 || { echo "the converge failed:"; tail -30 "$WORK/role1.log"; }
t1="$(now)"
ROLE_S="$(secs "$t0" "$t1")"
ROLE_CHANGED="$(sed -n "s/^$ROLE *: .*changed=\([0-9]*\).*/\1/p" "$WORK/role1.log")"

t0="$(now)"
TASK_PROFILE_LOG="$WORK/rerun.jsonl" ansible-playbook -i "$WORK/inventory.yml" "$PLAYBOOK" "${PLAY_ARGS[@]}" > "$WORK/role2.log" 2>&1 || { echo "the rerun failed:"; tail -30 "$WORK/role2.log"; }
t1="$(now)"
RERUN_S="$(secs "$t0" "$t1")"
RERUN_CHANGED="$(sed -n "s/^$ROLE *: .*changed=\([0-9]*\).*/\1/p" "$WORK/role2.log")"
ROLE_DKMS="$(podman exec "$ROLE" dkms status 2>/dev/null | tr "\n" " " || true)"
RATIO="$(awk -v r="$ROLE_S" -v b="$BARE_S" 'BEGIN { printf "%.2f", r / b }')"
RERUN_RATIO="$(awk -v r="$RERUN_S" -v b="$BARE_S" 'BEGIN { printf "%.2f", r / b }')"
LOAD_AFTER="$(cut -d' ' -f1-3 /proc/loadavg)"

echo
echo "nvidia_driver benchmark ($SCOPE, connection $CONNECTION, collection $(ansible-galaxy collection list baremetal.gpu 2>/dev/null | awk '/^# /{print $2; exit}')): $NODE node ($IMAGE), kernel $KVER, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: nproc $(nproc), $(uname -r), load average before $LOAD_BEFORE, after $LOAD_AFTER"
printf '| %-44s | %10s | %6s | %s\n' "Run" "Wall (s)" "Ratio" "Notes"
printf '| %-44s | %10s | %6s | %s\n' "bare apt-get update + install (same packages)" "$BARE_S" "1.00" "dkms: $BARE_DKMS"
printf '| %-44s | %10s | %6s | %s\n' "role, first converge (goal ratio <= 1.5)" "$ROLE_S" "$RATIO" "changed=$ROLE_CHANGED; dkms: $ROLE_DKMS"
printf '| %-44s | %10s | %6s | %s\n' "role, no-op rerun (goal <= 20 s)" "$RERUN_S" "$RERUN_RATIO" "changed=$RERUN_CHANGED"
for run in converge rerun; do
  echo
  echo "== $run: top tasks by wall time =="
  python3 "$ROOT/benchmarks/task_profile/summarize.py" "$WORK/$run.jsonl" "${TOP:-15}" | sed -n '/^seconds/,$p'
done
if [ -n "${BENCH_KEEP:-}" ]; then mkdir -p "$BENCH_KEEP" && cp "$WORK"/*.log "$WORK"/*.jsonl "$BENCH_KEEP"/; fi
