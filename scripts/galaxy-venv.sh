#!/usr/bin/env bash
# Create (or reuse) the venv of the Galaxy import check and the docs tools from
# tests/requirements-galaxy.txt (galaxy-importer, antsibull-docs and their pinned
# dependencies). It is its own venv so that the project's .venv keeps requirements.txt's pins. It lives
# outside the checkout, named by the requirements' hash (${XDG_CACHE_HOME:-~/.cache}/baremetal-gpu/
# venv-galaxy-<hash>), so a fresh clone on the same machine (CI) reuses it instead of installing
# about 100 packages again; BAREMETAL_GALAXY_VENV overrides the path.
# Prints the venv's path. Sourced or run; idempotent (a stamp holds the requirements' hash).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
req="$root/tests/requirements-galaxy.txt"
want=$(sha256sum "$req" | cut -d' ' -f1)
venv=${BAREMETAL_GALAXY_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/baremetal-gpu/venv-galaxy-${want:0:12}}
if [[ ! -x $venv/bin/python || "$(cat "$venv/.requirements.sha" 2>/dev/null)" != "$want" ]]; then
  echo "[galaxy-venv] creating $venv from tests/requirements-galaxy.txt" >&2
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check -r "$req" >&2
  echo "$want" >"$venv/.requirements.sha"
fi
echo "$venv"
