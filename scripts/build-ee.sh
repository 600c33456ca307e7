#!/usr/bin/env bash
# make ee: build the execution environment of execution-environment.yml with ansible-builder and podman.
#
#   scripts/build-ee.sh                       on the project's own Debian 12 base (tests/ee/base)
#   EE_BASE_IMAGE=<image> scripts/build-ee.sh on another base (docs/awx.md)
#
# The image is tagged localhost/baremetal-gpu-ee:<key> and :latest; <key> changes with every input of
# the build (scripts/ee-context.py), and an image whose key exists is reused, not built again.
# Prints the image name as its last line. Exit 2: something the build needs is missing (said why).
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '[ee] %s\n' "$*" >&2; }
missing() { printf '[ee] cannot build the execution environment: %s\n' "$*" >&2; exit 2; }

# What the build needs from this machine, said by name before anything starts.
command -v podman >/dev/null 2>&1 \
  || missing "podman is not installed (not found in PATH). Install it (Debian/Ubuntu: apt-get install podman), or run scripts/setup.sh, which does."
# shellcheck source=scripts/env.sh
. scripts/env.sh
command -v ansible-builder >/dev/null 2>&1 || missing "ansible-builder is not in the venv (run scripts/setup.sh)"
[[ -x .bin/helm && -x .bin/kubectl ]] || missing ".bin/helm or .bin/kubectl is missing (run scripts/setup.sh)"
NEED_GB=${EE_MIN_FREE_GB:-4}
store=$(podman info --format '{{.Store.GraphRoot}}' 2>/dev/null) || missing "podman does not answer (podman info failed)"
for dir in "$store" .cache; do
  mkdir -p "$dir"
  free_kb=$(df -Pk "$dir" | awk 'NR == 2 {print $4}')
  if ((free_kb < NEED_GB * 1024 * 1024)); then
    missing "only $((free_kb / 1024)) MiB free in $dir; the build needs ${NEED_GB} GiB (EE_MIN_FREE_GB) there"
  fi
done

base=${EE_BASE_IMAGE:-}
if [[ -z $base ]]; then
  bash scripts/build-images.sh ee-base >&2
  [[ $(cat .cache/images/ee-base.status) == ok ]] || missing "the test base image: $(cat .cache/images/ee-base.status)"
  base=localhost/baremetal-gpu-ee-base:latest
fi
base_id=$(podman image inspect --format '{{.Id}}' "$base" 2>/dev/null) \
  || missing "the base image $base is not on this machine (podman pull it first; the build does not pull)"

mkdir -p .cache/ee/build
rm -f .cache/ee/build/*.tar.gz
ansible-galaxy collection build --force --output-path .cache/ee/build . >&2
key=$(python3 scripts/ee-context.py .cache/ee/build/baremetal-gpu-*.tar.gz "$base_id")
image=localhost/baremetal-gpu-ee:$key
if podman image exists "$image"; then
  log "reusing $image (no input of the build changed)"
else
  log "building $image on $base (log: .cache/ee/build.log)"
  t0=$SECONDS
  if ! ansible-builder build -f execution-environment.yml --context .cache/ee/context --container-runtime podman \
      --build-arg EE_BASE_IMAGE="$base" --tag "$image" -v 2 >.cache/ee/build.log 2>&1; then
    tail -20 .cache/ee/build.log >&2
    log "FAILED: ansible-builder build (full log: .cache/ee/build.log)"
    exit 1
  fi
  log "built $image in $((SECONDS - t0)) s"
fi
podman tag "$image" localhost/baremetal-gpu-ee:latest
# Earlier keys' images (their layers stay shared with this one where they are the same).
podman images --format '{{.Repository}}:{{.Tag}}' | grep '^localhost/baremetal-gpu-ee:[0-9a-f]\{12\}$' \
  | grep -vx "$image" | xargs -r podman rmi >/dev/null 2>&1 || true
echo "$image"
