#!/usr/bin/env bash
# Build, cache and import the systemd test-node images from debootstrap.
#
#   scripts/build-images.sh [debian12] [debian13] [ubuntu2204] [ubuntu2404] [ubuntu2604] [ee-base]
#   scripts/build-images.sh --list     print the test nodes of the OS matrix, one per line, and build nothing
#
# ee-base is not a node: the base of the test execution environment (make ee, tests/ee/base), on
# the same Debian 12 debootstrap base as the debian12 node.
#
# Images are tagged localhost/baremetal-gpu-<node>:<recipe hash>; a cached image
# whose recipe did not change is reused. The result per node is written to
# .cache/images/<node>.status: "ok", or "NOT RUN: <reason>" (for example when
# Ubuntu's archive does not answer). Nothing is reported as built that was not.
#
# Each node looks like a fresh install of its release, as far as the tests care:
#   debian12   bookworm  one-line /etc/apt/sources.list (bookworm main), as bookworm installs
#   debian13   trixie    deb822 debian.sources with Signed-By, main non-free-firmware (the installer's default)
#   ubuntu2204 jammy     one-line sources.list (jammy main universe)
#   ubuntu2404 noble     deb822 ubuntu.sources with Signed-By, noble noble-updates noble-security, main universe
#   ubuntu2604 resolute  the same layout as noble (Ubuntu 26.04 LTS; its systemd needs the host's cgroup2 hierarchy,
#                        which its molecule platforms mount: docs/DEVELOPING.md)
# and each has a kernel image installed (a real machine has one; the role builds or installs
# modules for it), from its own archive. The mirror is whatever debootstrap chose by default;
# nothing here names a mirror host.
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

# The test nodes and their releases come from the OS matrix (plugins/module_utils/support.py, OS_MATRIX: each tested
# row's test_node, codename and distribution): "node suite family" per line. Only how a node is laid out is said here.
matrix_nodes() {
  python3 - <<'PY'
import importlib.util
spec = importlib.util.spec_from_file_location('support', 'plugins/module_utils/support.py')
support = importlib.util.module_from_spec(spec)
spec.loader.exec_module(support)
for row in support.OS_MATRIX:
    if row['tested'] and row['test_node']:
        print(row['test_node'], row['codename'], row['galaxy_platform'].lower())
PY
}
MATRIX_NODES=$(matrix_nodes)
mapfile -t ALL_NODES < <(awk '{print $1}' <<<"$MATRIX_NODES")
if [[ ${1:-} == --list ]]; then printf '%s\n' "${ALL_NODES[@]}"; exit 0; fi

# node_layout NODE: "sources-format kernel-package", what the matrix does not say: how the release installs its
# sources, and the kernel the node gets.
node_layout() {
  case $1 in
    debian12) echo "list linux-image-amd64" ;;
    debian13) echo "deb822 linux-image-amd64" ;;
    # Pinned too (tested for real in molecule/nvidia_driver_jammy): 5.15.0-203, whose
    # prebuilt NVIDIA module packages download, one ABI below jammy's newest, 5.15.0-204, whose packages the
    # archive lists but answers 404 for (seen 2026-11-23 on noble's 6.8.0-151, 2026-11-28 on jammy's 5.15.0-204).
    # The scenario converges prebuilt on 203, then brings 204 through apt alone, and auto's next run switches the
    # node to DKMS and says why. 203 comes from jammy-security (kernel_pocket); the node's sources stay
    # debootstrap's one line, as before.
    ubuntu2204) echo "list linux-image-5.15.0-203-generic" ;;
    # The kernel is pinned: on 2026-11-23 the archive's index listed Canonical's prebuilt NVIDIA
    # modules for the newest ABI (6.8.0-151, noble-updates), but their files answered 404; those
    # for 6.8.0-149 (noble-security) download. The prebuilt-module tests need a kernel they exist for.
    ubuntu2404) echo "deb822 linux-image-6.8.0-149-generic" ;;
    # Pinned for the same reason: on 2026-11-28 the newest ABI, 7.0.0-44, had its prebuilt module packages listed
    # in resolute-updates/-security but answered 404; those for 7.0.0-43 download.
    ubuntu2604) echo "deb822 linux-image-7.0.0-43-generic" ;;
    *) return 1 ;;
  esac
}

# kernel_pocket NODE: the pocket the node's kernel comes from when its sources lack it (added for the kernel's
# install only, in tests/images/Containerfile), or nothing.
kernel_pocket() {
  case $1 in
    ubuntu2204) echo "jammy-security" ;;
  esac
}

# node_kcflags NODE: the test node's KCFLAGS (tests/images/Containerfile): -g0, a build without debug information,
# except where the kernel needs it. Ubuntu 26.04's 7.0 kernels are built with CONFIG_GENDWARFKSYMS: their module
# versions come from the DWARF of every object that exports symbols, and with -g0 the NVIDIA DKMS build fails
# ("gendwarfksyms: process_module: dwarf_get_units failed: no debugging information?", nv-p2p.o, seen 2026-12-01).
node_kcflags() {
  case $1 in
    ubuntu2604) echo "" ;;
    *) echo "-g0" ;;
  esac
}

# node_info NODE: "suite family debootstrap-script sources-format kernel-package"
node_info() {
  local node=$1 suite family layout
  if [[ $node == ee-base ]]; then
    read -r suite family _ <<<"$(node_info debian12)"
    echo "$suite $family $suite list -"
    return
  fi
  read -r _ suite family < <(awk -v n="$node" '$1 == n' <<<"$MATRIX_NODES") || return 1
  layout=$(node_layout "$node") || { log "$node is a test node of the OS matrix without a layout in node_layout"; return 1; }
  # The release's own debootstrap script, else (Debian 12's debootstrap has no noble script) for Ubuntu the gutsy
  # script, which serves every Ubuntu release.
  local script=$suite
  [[ $family == ubuntu && ! -e /usr/share/debootstrap/scripts/$suite ]] && script=gutsy
  echo "$suite $family $script $layout"
}
# base_node NODE: whose debootstrap base it is built on; context_of NODE: the layer's build context.
base_node() { case $1 in ee-base) echo debian12 ;; *) echo "$1" ;; esac; }
context_of() { case $1 in ee-base) echo tests/ee/base ;; *) echo tests/images ;; esac; }

# The cache key of the debootstrap base: what goes into it, not the whole script, so editing
# log messages does not force a rebuild. The node layer on top (tests/images/, the kernel) has
# its own key, so a change there rebuilds only that layer.
base_hash() {
  local suite family script format _kernel
  read -r suite family script format _kernel <<<"$(node_info "$1")"
  echo "$PACKAGES $suite $family $script $format ${UBUNTU_MIRROR:-} v2" | sha256sum | cut -c1-12
}
recipe_hash() {
  { base_hash "$(base_node "$1")"; node_info "$1"; kernel_pocket "$1"; node_kcflags "$1"; cat "$(context_of "$1")"/*; } |
    sha256sum | cut -c1-12
}
image_name() { echo "localhost/baremetal-gpu-$1:$(recipe_hash "$1")"; }

check_ubuntu_keyring() {
  # A private GnuPG home: ~/.gnupg may be locked by another gpg at the same moment (seen once in a
  # make test run beside other test runs: gpg printed nothing and the check failed).
  local keyring=$1 have fpr home
  home=$(mktemp -d)
  have=$(gpg --homedir "$home" --no-default-keyring --keyring "$keyring" --list-keys --with-colons 2>"$home/err" \
    | awk -F: '/^fpr/ {print $10}')
  for fpr in $UBUNTU_FPRS; do
    if ! grep -qx "$fpr" <<<"$have"; then
      log "keyring $keyring lacks expected fingerprint $fpr (gpg: $(tr '\n' ' ' <"$home/err"))"
      rm -rf "$home"
      return 1
    fi
  done
  rm -rf "$home"
}

# write_deb822 ROOTFS FAMILY SUITE: replace debootstrap's one-line sources.list with the deb822
# file a fresh install of this release has, on the mirror debootstrap used.
write_deb822() {
  local rootfs=$1 family=$2 suite=$3 uri
  uri=$(awk '$1 == "deb" {print $2; exit}' "$rootfs/etc/apt/sources.list")
  [[ -n $uri ]] || { log "no mirror in $rootfs/etc/apt/sources.list"; return 1; }
  if [[ $family == ubuntu ]]; then
    cat >"$rootfs/etc/apt/sources.list.d/ubuntu.sources" <<EOF
Types: deb
URIs: $uri
Suites: $suite $suite-updates $suite-security
Components: main universe
Signed-By: /usr/share/keyrings/ubuntu-archive-keyring.gpg
EOF
    test -f "$rootfs/usr/share/keyrings/ubuntu-archive-keyring.gpg"
  else
    cat >"$rootfs/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $uri
Suites: $suite $suite-updates
Components: main non-free-firmware
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    test -f "$rootfs/usr/share/keyrings/debian-archive-keyring.gpg"
  fi
  rm -f "$rootfs/etc/apt/sources.list"
}

build_node() {
  local node=$1 suite family script format kernel keyring_opt=() tag base rootfs
  read -r suite family script format kernel <<<"$(node_info "$node")" || { log "unknown node $node"; return 2; }
  tag="$(image_name "$node")"
  if [[ $family == ubuntu ]]; then
    check_ubuntu_keyring "$PWD/tests/keys/ubuntu-archive-keyring.gpg" || {
      echo "NOT RUN: Ubuntu keyring fingerprint check failed" >"$CACHE/$node.status"; return 0; }
    keyring_opt=(--keyring="$PWD/tests/keys/ubuntu-archive-keyring.gpg")
  fi
  if podman image exists "$tag"; then
    log "$node: cached image $tag"
    echo ok >"$CACHE/$node.status"
    return 0
  fi
  base="localhost/baremetal-gpu-$(base_node "$node")-base:$(base_hash "$(base_node "$node")")"
  if podman image exists "$base"; then
    log "$node: cached base $base"
    build_top "$node" "$base" "$tag" "$kernel"
    return 0
  fi
  rootfs=$(mktemp -d "/var/tmp/rootfs-$node.XXXXXX")
  log "$node: debootstrap $suite into $rootfs (takes 1-2 minutes)"
  local components=main mirror=""
  if [[ $family == ubuntu ]]; then
    components=main,universe
    # UBUNTU_MIRROR is for testing the harness's own NOT RUN path; debootstrap's
    # built-in default mirror is used otherwise (an empty mirror argument means that).
    mirror=${UBUNTU_MIRROR:-}
  fi
  if ! http_proxy=$APT_PROXY debootstrap --variant=minbase "${keyring_opt[@]}" --components="$components" \
        --include="$PACKAGES" "$suite" "$rootfs" "$mirror" "$script" >"$CACHE/$node.debootstrap.log" 2>&1; then
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
  if [[ $format == deb822 ]] && ! write_deb822 "$rootfs" "$family" "$suite"; then
    echo "FAILED: could not write the deb822 sources of $node" >"$CACHE/$node.status"
    rm -rf "$rootfs"
    return 0
  fi
  tar -C "$rootfs" --numeric-owner -c . | podman import \
    --change 'CMD ["/sbin/init"]' --change 'STOPSIGNAL SIGRTMIN+3' \
    --change 'ENV container=podman' - "$base" >/dev/null
  rm -rf "$rootfs"
  build_top "$node" "$base" "$tag" "$kernel"
}

# build_top NODE BASE TAG KERNEL: the systemd node layer (tests/images/Containerfile) on the base,
# with a kernel image from the node's own archive (ee-base: tests/ee/base, no kernel).
build_top() {
  # --network host: the build reaches the package cache on this machine's loopback.
  if ! podman build -q --network host --build-arg "APT_PROXY=$APT_PROXY" --build-arg "BASE=$2" \
      --build-arg "KERNEL=$4" --build-arg "KERNEL_POCKET=$(kernel_pocket "$1")" --build-arg "KCFLAGS=$(node_kcflags "$1")" -t "$3" "$(context_of "$1")" >"$CACHE/$1.build.log" 2>&1; then
    log "$1: podman build failed, see $CACHE/$1.build.log"
    tail -5 "$CACHE/$1.build.log" >&2 || true
    if grep -qiE 'Could not resolve|Temporary failure|Failed to fetch|Unable to connect' "$CACHE/$1.build.log"; then
      echo "NOT RUN: the archive did not answer while installing the kernel of the $1 node" >"$CACHE/$1.status"
    else
      echo "FAILED: podman build of the $1 node layer failed" >"$CACHE/$1.status"
    fi
    return 0
  fi
  log "$1: built $3"
  echo ok >"$CACHE/$1.status"
}

# The harness's package cache (scripts/apt-cache.sh), when it runs: debootstrap and the node layer's
# apt download through it, so a rebuild on this machine downloads nothing again.
APT_PROXY=""
if timeout 2 bash -c 'exec 3<>/dev/tcp/127.0.0.1/3142' 2>/dev/null; then
  APT_PROXY=$(bash scripts/apt-cache.sh url)
  log "downloading through the package cache $APT_PROXY"
fi

nodes=("$@")
[[ ${#nodes[@]} -eq 0 ]] && nodes=("${ALL_NODES[@]}")
for n in "${nodes[@]}"; do
  node_info "$n" >/dev/null || { log "unknown node $n (known: ${ALL_NODES[*]} ee-base)"; exit 2; }
done
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
  if [[ $st == ok ]]; then
    podman tag "$(image_name "$n")" "localhost/baremetal-gpu-$n:latest"
  fi
done
