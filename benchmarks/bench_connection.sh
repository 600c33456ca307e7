#!/usr/bin/env bash
# The molecule test nodes' transport: containers.podman.podman against tests/molecule_plugins'
# podman_nsenter, on the same two running nodes, the same playbook (N command + N stat tasks per node).
#
#   bash benchmarks/bench_connection.sh [N]        (default N=20; needs the node images: make images)
#
# Prints one table row per connection: wall seconds and seconds per task and node. Not a test.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/env.sh
. scripts/env.sh
N=${1:-20}
NODES=(bench-conn-debian12 bench-conn-ubuntu2404)
work=$(mktemp -d)
cleanup() { podman rm -f -t 0 "${NODES[@]}" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
podman run -d --name "${NODES[0]}" --systemd always localhost/baremetal-gpu-debian12:latest /sbin/init >/dev/null
podman run -d --name "${NODES[1]}" --systemd always localhost/baremetal-gpu-ubuntu2404:latest /sbin/init >/dev/null
cat >"$work/play.yml" <<EOF
- name: Bench
  hosts: all
  gather_facts: false
  vars: {ansible_python_interpreter: /usr/bin/python3}
  tasks:
    - name: Command
      ansible.builtin.command: "true"
      changed_when: false
      loop: "{{ range($N) | list }}"
    - name: Stat
      ansible.builtin.stat: {path: /etc/os-release}
      loop: "{{ range($N) | list }}"
EOF
export ANSIBLE_CONNECTION_PLUGINS=$BAREMETAL_ROOT/tests/molecule_plugins/connection
printf '| connection | tasks per node | wall s | s per task and node | load average before |\n|---|---|---|---|---|\n'
for conn in containers.podman.podman podman_nsenter; do
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  t0=$(date +%s.%N)
  ansible-playbook -i "$(IFS=,; echo "${NODES[*]}"),", -c "$conn" "$work/play.yml" >"$work/$conn.log" 2>&1
  t1=$(date +%s.%N)
  awk -v c="$conn" -v n=$((2 * N)) -v a="$t0" -v b="$t1" -v l="$load" \
    'BEGIN { printf "| %s | %d | %.1f | %.2f | %s |\n", c, n, b - a, (b - a) / n, l }'
done
