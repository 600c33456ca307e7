#!/usr/bin/env bash
# Build, cache and import the systemd test-node images from debootstrap.
#
#   scripts/build-images.sh [debian12] [ubuntu2204]
#
# Images are tagged localhost/baremetal-gpu-<node>:<recipe hash>; a cached image
# whose recipe did not change is reused. The result per node is written to
# .cache/images/<node>.status: "ok", or "NOT RUN: <reason>" (for example when
# Ubuntu's archive does not answer). Nothing is reported as built that was not.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/env.sh
. scripts/env.sh

CACHE=.cache/images
mkdir -p "$CACHE"

PACKAGES="systemd,systemd-sysv,dbus,python3,python3-apt,procps,iproute2,ca-certificates,gnupg,sudo,kmod,pciutils"
# Both Ubuntu archive signing keys that must be in the keyring we ship.
UBUNTU_FPRS="F6ECB3762474EDA9D21B7022871920D1991BC93C 790BC7277767219C42C86F933B4FE6ACC0B21F32"

log() { printf '[build-images] %s\n' "$*" >&2; }

# The cache key: what goes into an image (package list, suites, tests/images/*),
# not the whole script, so editing log messages does not force a rebuild.
# The debootstrap base has its own key, so a change to tests/images/ (Containerfile, apt
# settings) rebuilds only the thin layer on top of it.
base_hash() {
  echo "$PACKAGES bookworm jammy ${UBUNTU_MIRROR:-} v1" | sha256sum | cut -c1-12
}
recipe_hash() {
  { base_hash; cat tests/images/*; } | sha256sum | cut -c1-12
}

check_ubuntu_keyring() {
  local keyring=$1 have fpr
  have=$(gpg --no-default-keyring --keyring "$keyring" --list-keys --with-colons 2>/dev/null | awk -F: '/^fpr/ {print $10}')
  for fpr in $UBUNTU_FPRS; do
    if ! grep -qx "$fpr" <<<"$have"; then
      log "keyring $keyring lacks expected fingerprint $fpr"
      return 1
    fi
  done
}

build_node() {
  local node=$1 suite keyring_opt=() tag base rootfs
  tag="$(image_name "$node")"
  case $node in
    debian12) suite=bookworm ;;
    ubuntu2204)
      suite=jammy
      check_ubuntu_keyring "$PWD/tests/keys/ubuntu-archive-keyring.gpg" || {
        echo "NOT RUN: Ubuntu keyring fingerprint check failed" >"$CACHE/$node.status"; return 0; }
      keyring_opt=(--keyring="$PWD/tests/keys/ubuntu-archive-keyring.gpg")
      ;;
    *) log "unknown node $node"; return 2 ;;
  esac
  if podman image exists "$tag"; then
    log "$node: cached image $tag"
    echo ok >"$CACHE/$node.status"
    return 0
  fi
  base="localhost/baremetal-gpu-$node-base:$(base_hash)"
  if podman image exists "$base"; then
    log "$node: cached base $base"
    build_top "$node" "$base" "$tag"
    return 0
  fi
  rootfs=$(mktemp -d "/var/tmp/rootfs-$node.XXXXXX")
  log "$node: debootstrap $suite into $rootfs (takes 1-2 minutes)"
  local components=main mirror=()
  if [[ $node == ubuntu* ]]; then
    components=main,universe
    # UBUNTU_MIRROR is for testing the harness's own NOT RUN path; debootstrap's
    # built-in default mirror is used otherwise.
    [[ -n ${UBUNTU_MIRROR:-} ]] && mirror=("$UBUNTU_MIRROR")
  fi
  if ! debootstrap --variant=minbase "${keyring_opt[@]}" --components="$components" \
        --include="$PACKAGES" "$suite" "$rootfs" "${mirror[@]}" >"$CACHE/$node.debootstrap.log" 2>&1; then
    log "$node: debootstrap failed, see $CACHE/$node.debootstrap.log"
    tail -5 "$CACHE/$node.debootstrap.log" >&2 || true
    if grep -qiE 'Failed getting release file|Couldn.t download|Temporary failure|could not resolve|Connection (timed out|refused)' "$CACHE/$node.debootstrap.log"; then
      echo "NOT RUN: the $suite archive did not answer (debootstrap could not download)" >"$CACHE/$node.status"
    else
      echo "FAILED: debootstrap $suite failed" >"$CACHE/$node.status"
    fi
    rm -rf "$rootfs"
    return 0
  fi
  tar -C "$rootfs" --numeric-owner -c . | podman import \
    --change 'CMD ["/sbin/init"]' --change 'STOPSIGNAL SIGRTMIN+3' \
    --change 'ENV container=podman' - "$base" >/dev/null
  rm -rf "$rootfs"
  build_top "$node" "$base" "$tag"
}

# build_top NODE BASE TAG: the systemd node layer (tests/images/Containerfile) on the base.
build_top() {
  if ! podman build -q --build-arg "BASE=$2" -t "$3" tests/images >"$CACHE/$1.build.log" 2>&1; then
    log "$1: podman build failed, see $CACHE/$1.build.log"
    echo "FAILED: podman build of the $1 node layer failed" >"$CACHE/$1.status"
    return 0
  fi
  log "$1: built $3"
  echo ok >"$CACHE/$1.status"
}

image_name() { echo "localhost/baremetal-gpu-$1:$(recipe_hash)"; }

nodes=("$@")
[[ ${#nodes[@]} -eq 0 ]] && nodes=(debian12 ubuntu2204)
for n in "${nodes[@]}"; do
  build_node "$n" &
done
wait
for n in "${nodes[@]}"; do
  st=$(cat "$CACHE/$n.status")
  printf '%-12s %s\n' "$n" "$st"
  if [[ $st != ok ]]; then
    printf '\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n' >&2
    printf '!!! %s test node: %s\n!!! Scenarios that need it will be reported NOT RUN, not passed.\n' "$n" "$st" >&2
    printf '!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n\n' >&2
  fi
  # Stable alias so molecule.yml does not need the hash.
  if [[ $(cat "$CACHE/$n.status") == ok ]]; then
    podman tag "$(image_name "$n")" "localhost/baremetal-gpu-$n:latest"
  fi
done
