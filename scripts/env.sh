# shellcheck shell=bash
# Environment shared by every project script: sourced, never run.
# Everything lives inside the checkout; no system file is edited.
BAREMETAL_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export BAREMETAL_ROOT
export CONTAINERS_CONF="$BAREMETAL_ROOT/tests/containers.conf"
export ANSIBLE_COLLECTIONS_PATH="$BAREMETAL_ROOT/.ansible/collections"
export ANSIBLE_INJECT_FACT_VARS=false
export ANSIBLE_FORCE_COLOR="${ANSIBLE_FORCE_COLOR:-0}"
export ANSIBLE_NOCOLOR="${ANSIBLE_NOCOLOR:-1}"
export PY_COLORS=0
export ANSIBLE_LOCAL_TEMP="$BAREMETAL_ROOT/.ansible/tmp"
export ANSIBLE_ROLES_PATH="$BAREMETAL_ROOT/roles"
export MOLECULE_GLOB="molecule/*/molecule.yml"
export PATH="$BAREMETAL_ROOT/.venv/bin:$BAREMETAL_ROOT/.bin:$PATH"
# The host's cgroup v2 hierarchy, which the Ubuntu 26.04 test nodes mount (their systemd runs only on cgroup v2;
# molecule/*/molecule.yml): /sys/fs/cgroup/unified on a host with hybrid cgroups, else /sys/fs/cgroup.
if [[ -z ${BAREMETAL_CGROUP2:-} ]]; then
  if [[ -d /sys/fs/cgroup/unified ]]; then BAREMETAL_CGROUP2=/sys/fs/cgroup/unified; else BAREMETAL_CGROUP2=/sys/fs/cgroup; fi
fi
export BAREMETAL_CGROUP2
