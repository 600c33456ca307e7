#!/usr/bin/env bash
# Look at the built documentation site in a real browser: headless Chromium (Debian's `chromium`
# package, installed when missing) takes a screenshot of the site's index and of the nvidia_smi
# module's page. Run `make docs` first. The PNGs: .cache/docs/screenshots/{index,nvidia_smi}.png
# (BAREMETAL_GPU_DOCS_DIR overrides .cache/docs, as for scripts/build-docs.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${BAREMETAL_GPU_DOCS_DIR:-$PWD/.cache/docs}
html=$out/html
pages=("index:$html/index.html" "nvidia_smi:$html/collections/baremetal/gpu/nvidia_smi_module.html")
for page in "${pages[@]}"; do
  [[ -f ${page#*:} ]] || { echo "no ${page#*:}: run make docs first"; exit 1; }
done
if ! command -v chromium >/dev/null; then
  echo "installing chromium from Debian's archive"
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO=sudo
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
fi
mkdir -p "$out/screenshots" "$out/chromium"
for page in "${pages[@]}"; do
  name=${page%%:*}
  png=$out/screenshots/$name.png
  rm -f "$png"
  # --no-sandbox: root in a container has no user namespace for Chromium's sandbox; the pages are our own.
  timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$out/chromium" \
    --window-size=1280,1600 --screenshot="$png" "file://${page#*:}" >"$out/screenshots/$name.log" 2>&1 || true
  if [[ ! -s $png ]]; then
    echo "no screenshot of ${page#*:}:"; tail -n 20 "$out/screenshots/$name.log"; exit 1
  fi
  echo "screenshot: $png ($(du -h "$png" | cut -f1))"
done
