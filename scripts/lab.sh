#!/usr/bin/env bash
# `make lab`: the collection's main job, run against a local lab node.
#
#   bash scripts/lab.sh                  set up, then preflight -> host layer -> verify -> preflight
#   LAB_OS=debian12 bash scripts/lab.sh  the lab node's OS: a test node of the OS matrix (debian12, debian13,
#                                        ubuntu2204, ubuntu2404, ubuntu2604: OS_MATRIX's test_node in
#                                        plugins/module_utils/support.py; default ubuntu2404: it converges fastest, Ubuntu's signed prebuilt
#                                        modules needing no DKMS build; see docs/DEVELOPING.md, "The two commands")
#   LAB_RESET=1 bash scripts/lab.sh      throw the lab node away first and start from a fresh one
#
# The lab node is a systemd container (podman) baremetal-gpu-lab-<LAB_OS> from
# localhost/baremetal-gpu-<LAB_OS>:latest, reached through the containers.podman.podman
# connection with inventory/lab/ (which reads LAB_OS too). A second run reuses it: that run is the
# idempotence check, and its changed count is printed. What cannot be exercised here (no GPU, no
# cluster) is stated at the end; nothing is reported as verified that was not.
set -euo pipefail
cd "$(dirname "$0")/.."

LAB_OS=${LAB_OS:-ubuntu2404}
# The test nodes of the OS matrix, as scripts/build-images.sh reads them (it needs no setup).
LAB_NODES=$(bash scripts/build-images.sh --list | paste -sd ' ')
if [[ " $LAB_NODES " != *" $LAB_OS "* ]]; then
  printf '[lab] LAB_OS must be one of the OS matrix'"'"'s test nodes (%s); got "%s"\n' "$LAB_NODES" "$LAB_OS" >&2
  exit 2
fi
export LAB_OS                # inventory/lab/hosts.yml reads it
LAB_NAME=baremetal-gpu-lab-$LAB_OS   # must match inventory/lab/hosts.yml
LAB_IMAGE=localhost/baremetal-gpu-$LAB_OS:latest
INVENTORY=inventory/lab
LOGS=.cache/logs/lab-$LAB_OS
REPORTS=reports/lab-$LAB_OS
# Skipped, each for a reason stated in the final summary: NVIDIA's container toolkit repository
# cannot be reached from here (tag nvidia_repo), and there is no RKE2 in the lab node for
# rke2_nvidia_runtime to configure (it refuses a node without RKE2, rightly).
SKIP_TAGS=nvidia_repo,rke2_nvidia_runtime

log() { printf '\n[lab] %s\n' "$*" >&2; }
die() { printf '\n[lab] FAILED: %s\n' "$*" >&2; exit 1; }

start=$SECONDS
log "setting up (scripts/setup.sh)"
bash scripts/setup.sh
log "building or reusing the $LAB_OS node image (scripts/build-images.sh $LAB_OS)"
bash scripts/build-images.sh "$LAB_OS"
# shellcheck source=scripts/env.sh
. scripts/env.sh
status=$(cat ".cache/images/$LAB_OS.status" 2>/dev/null || echo "NOT RUN: no status written")
[[ $status == ok ]] || die "the $LAB_OS image is not available ($status)"

export ANSIBLE_CALLBACK_RESULT_FORMAT=yaml ANSIBLE_PIPELINING=true ANSIBLE_RETRY_FILES_ENABLED=false
mkdir -p "$LOGS" "$REPORTS"

if [[ ${LAB_RESET:-0} == 1 ]] && podman container exists "$LAB_NAME"; then
  log "LAB_RESET=1: removing the lab node $LAB_NAME"
  podman rm -f "$LAB_NAME" >/dev/null
fi
rerun=false
if podman container exists "$LAB_NAME"; then
  rerun=true
  if [[ $(podman inspect -f '{{.State.Running}}' "$LAB_NAME") != true ]]; then
    log "starting the existing lab node $LAB_NAME"
    podman start "$LAB_NAME" >/dev/null
  else
    log "reusing the running lab node $LAB_NAME (this run is an idempotent rerun)"
  fi
else
  log "starting a fresh lab node $LAB_NAME from $LAB_IMAGE"
  # Ubuntu 26.04's systemd runs only on cgroup v2: a private cgroup namespace over the host's v2 hierarchy
  # (BAREMETAL_CGROUP2, from scripts/env.sh), as its molecule platforms have.
  opts=()
  [[ $LAB_OS != ubuntu2604 ]] || opts=(--cgroupns=private -v "$BAREMETAL_CGROUP2:/sys/fs/cgroup:rw")
  podman run -d --systemd=always "${opts[@]}" --name "$LAB_NAME" --hostname "$LAB_NAME" "$LAB_IMAGE" /sbin/init >/dev/null
fi
for _ in $(seq 1 60); do
  state=$(podman exec "$LAB_NAME" systemctl is-system-running 2>/dev/null || true)
  [[ $state == running || $state == degraded ]] && break
  sleep 1
done
log "lab node systemd state: ${state:-unknown}"

# A real machine has a kernel installed; so has the node image (tests/images/Containerfile), and the
# driver role builds or installs modules for it (the container's running kernel is the host's).
if ! podman exec "$LAB_NAME" sh -c 'ls /boot/vmlinuz-* >/dev/null 2>&1'; then
  die "the lab node has no kernel image in /boot (rebuild the images: bash scripts/build-images.sh $LAB_OS)"
fi

declare -A took changed
# run_play <step> <playbook> [args...]: run one playbook, keep its log, record time and changed count.
run_play() {
  local step=$1 playbook=$2 t0 rc=0
  shift 2
  log "$step: ansible-playbook -i $INVENTORY $playbook $*"
  t0=$SECONDS
  ansible-playbook -i "$INVENTORY" "$playbook" "$@" 2>&1 | tee "$LOGS/$step.log" || rc=$?
  took[$step]=$((SECONDS - t0))
  changed[$step]=$(awk -v h=baremetal-gpu-lab '$1 == h && /changed=/ {for (i = 1; i <= NF; i++) if ($i ~ /^changed=/) print substr($i, 9)}' "$LOGS/$step.log" | tail -1)
  ((rc == 0)) || die "$step failed (rc $rc); full log in $LOGS/$step.log"
}

run_play preflight-before playbooks/preflight.yml -e preflight_report_dir="$REPORTS/before"
run_play host-layer playbooks/gpu_nodes.yml --skip-tags "$SKIP_TAGS"
run_play verify playbooks/verify.yml
run_play preflight-after playbooks/preflight.yml -e preflight_report_dir="$REPORTS"

total=$((SECONDS - start))
printf '\n==================== make lab (%s): summary ====================\n' "$LAB_OS"
printf '%-18s %8s %8s\n' step seconds changed
for step in preflight-before host-layer verify preflight-after; do
  printf '%-18s %8s %8s\n' "$step" "${took[$step]}" "${changed[$step]:-?}"
done
printf '%-18s %8s\n' total "$total"
if $rerun; then
  printf '\nRerun on the existing lab node: the host layer changed %s task(s)%s.\n' "${changed[host-layer]:-?}" \
    "$([[ ${changed[host-layer]:-x} == 0 ]] && echo ' (idempotent)' || echo ' (NOT idempotent: see the log)')"
else
  printf '\nFirst provision of a fresh lab node: the host layer changed %s task(s). Run make lab again for the idempotence check.\n' \
    "${changed[host-layer]:-?}"
fi

printf '\nReadiness report after the host layer (%s/preflight.md; before: %s/before/preflight.md):\n\n' "$REPORTS" "$REPORTS"
sed -n '/^| Host /,/^$/p' "$REPORTS/preflight.md"
grep -E '^- ' "$REPORTS/preflight.md" || true

cat <<'EOF'

What this lab did NOT exercise, plainly:
- There is no GPU. The driver packages were installed and the module is there for the node's
  kernel (DKMS built it, or, on Ubuntu 24.04 by default, Canonical's signed prebuilt modules were
  installed), but no module was loaded and nvidia-smi cannot talk to a driver: verify reports
  "driver installed, no GPU visible". The lab node is a container sharing the host's kernel, so
  nouveau, Secure Boot, module loading and reboots are not real here.
- There is no cluster. RKE2 is not installed in the lab node, the Kubernetes API is absent,
  so the cluster layer (RuntimeClass, kube-prometheus-stack, device plugin, dcgm-exporter)
  and verify's cluster checks (node capacity, smoke-test pod, DCGM series in Prometheus) were
  skipped, with the reason printed above. The charts are tested in render mode by `make test`.
- NVIDIA's container toolkit repository cannot be reached from here: its tasks (tag
  nvidia_repo) were skipped, so the toolkit packages are not installed (its configuration
  part ran).
- rke2_nvidia_runtime was skipped (tag rke2_nvidia_runtime): RKE2 cannot be installed here,
  and the role refuses a node without it.
EOF
