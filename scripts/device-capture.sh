#!/usr/bin/env bash
# Capture, on a machine with an NVIDIA GPU, what the collection's read-only parts read there and what they
# conclude: the node tree gpu_node_facts reads (scripts/capture-node-tree.sh), the raw answers of nvidia-smi,
# /proc/driver/nvidia and the kernel log, and the results of gpu_node_facts, nvidia_smi, gpu_health, the preflight
# role, the verify role's node checks and playbooks/gpu_health.yml's report, run on the machine itself
# (scripts/device-capture.yml, connection local).
#
#   bash scripts/device-capture.sh OUTDIR        (as root, on the GPU machine; ansible-core importable)
#
# Read-only: nothing on the machine changes (no reset, no module load, no package, no service).
# What it wrote is the input of tests/fixtures/device (see SOURCE.md there); serial numbers, UUIDs and the
# like are masked when fixtures are made from it, not here.
set -uo pipefail
out=${1:?usage: device-capture.sh OUTDIR}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out/raw" "$out/results" "$out/reports"
out=$(cd "$out" && pwd)

rec() {  # rec NAME COMMAND...: stdout, stderr and rc of a read-only command, at most 60 s
  local name=$1; shift
  LC_ALL=C timeout 60 "$@" >"$out/raw/$name.out" 2>"$out/raw/$name.err"
  echo $? >"$out/raw/$name.rc"
}
bash "$root/scripts/capture-node-tree.sh" "$out/node-tree.tar"
rec uname uname -a
rec os-release cat /etc/os-release
rec nvidia-smi-q-x nvidia-smi -q -x
rec nvidia-smi-q nvidia-smi -q
rec nvidia-smi-L nvidia-smi -L
rec nvidia-smi-table nvidia-smi
rec nvidia-smi-query nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,persistence_mode,mig.mode.current,ecc.mode.current,compute_mode --format=csv
rec nvidia-smi-nvlink nvidia-smi nvlink -s
rec nvidia-smi-topo nvidia-smi topo -m
rec proc-version cat /proc/driver/nvidia/version
rec proc-params cat /proc/driver/nvidia/params
rec proc-registry cat /proc/driver/nvidia/registry
# shellcheck disable=SC2016  # expanded by the inner sh, not here
rec proc-gpus sh -c 'for f in /proc/driver/nvidia/gpus/*/information; do echo "== $f"; cat "$f"; done'
rec proc-cmdline cat /proc/cmdline
rec modinfo modinfo nvidia
rec modprobe-d sh -c 'grep -rH . /etc/modprobe.d/ /usr/lib/modprobe.d/ 2>/dev/null | grep -i -e nvidia -e nouveau'
rec dev-nvidia sh -c 'ls -l /dev/nvidia* /dev/nvidia-caps 2>&1'
rec journalctl-k journalctl -k -o short-iso --no-pager
rec dmesg dmesg
rec systemctl-units sh -c 'systemctl list-units --all --no-pager "nvidia*" "dcgm*" 2>&1'
rec dcgmi sh -c 'command -v dcgmi nv-hostengine nvidia-persistenced nvidia-ctk lspci mokutil modinfo journalctl 2>&1'
# shellcheck disable=SC2016  # expanded by the inner sh, not here
rec pci-all sh -c 'for d in /sys/bus/pci/devices/*; do printf "%s %s %s %s %s\n" "${d##*/}" "$(cat "$d/vendor")" "$(cat "$d/device")" "$(cat "$d/class")" "$(basename "$(readlink "$d/driver" 2>/dev/null)" 2>/dev/null)"; done'
rec efi ls -la /sys/firmware/efi

# The collection on this machine: ANSIBLE_COLLECTIONS_PATH points at a folder naming this checkout baremetal.gpu.
collections=$(mktemp -d)
mkdir -p "$collections/ansible_collections/baremetal"
ln -s "$root" "$collections/ansible_collections/baremetal/gpu"
python=$(command -v python3)
# k8s_control is named by the plays that look for the API host; empty here (no cluster), so no warning.
printf '[gpu_nodes]\ndevice ansible_connection=local ansible_python_interpreter=%s ansible_become=false\n[k8s_control]\n' \
  "$python" >"$collections/inventory.ini"
export ANSIBLE_COLLECTIONS_PATH=$collections ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=false CAPTURE_DIR=$out \
  ANSIBLE_NOCOLOR=1 ANSIBLE_FORCE_COLOR=0 \
  ANSIBLE_LOCAL_TEMP=$collections/tmp ANSIBLE_REMOTE_TEMP=$collections/rtmp LC_ALL=C.UTF-8
ansible-playbook --version >"$out/raw/ansible-version.out" 2>&1
cd "$out" || exit 1   # the preflight report's relative directory and the play's files land here
start=$(date +%s.%N)
timeout 300 ansible-playbook -i "$collections/inventory.ini" "$root/scripts/device-capture.yml" \
  -e preflight_report_dir="$out/reports" -e preflight_fail_on_blockers=false -e gpu_health_report_dir="$out/reports" \
  >"$out/playbook.log" 2>&1
echo $? >"$out/playbook.rc"
end=$(date +%s.%N)
echo "playbook rc $(cat "$out/playbook.rc") in $(python3 -c "print(round($end - $start, 1))") s" | tee -a "$out/playbook.log"
rm -rf "$collections"
