#!/usr/bin/env bash
# The test nodes' package cache: apt-cacher-ng (Debian's package), run by the harness, not by a
# system service (no system file is edited; there may be no systemd on the machine).
#
#   scripts/apt-cache.sh start   start it unless something already answers on port 3142
#   scripts/apt-cache.sh stop    stop the one this script started
#   scripts/apt-cache.sh stats   one line: what came from the archives and what was served from the cache
#   scripts/apt-cache.sh url     the proxy URL for this machine's own tools (debootstrap, podman build)
#
# The cache lives outside the checkout, so a fresh clone on the same machine reuses it:
# BAREMETAL_APT_CACHE_DIR (default ${XDG_CACHE_HOME:-~/.cache}/baremetal-gpu/apt-cacher-ng).
# Remove that directory to measure a cold run. Test nodes find the cache through
# tests/apt-cache/99baremetal-test-apt-proxy (baked into the node images): it answers DIRECT
# when the cache is not running, so nothing depends on it being there.
set -euo pipefail
cd "$(dirname "$0")/.."

PORT=3142
DIR=${BAREMETAL_APT_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/baremetal-gpu/apt-cacher-ng}
PIDFILE=$DIR/run/pid

log() { printf '[apt-cache] %s\n' "$*" >&2; }

answers() { timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$PORT" 2>/dev/null; }

start() {
  if answers; then
    log "a package cache already answers on 127.0.0.1:$PORT; using it"
    return 0
  fi
  command -v apt-cacher-ng >/dev/null || { log "apt-cacher-ng is not installed (scripts/setup.sh installs it)"; return 1; }
  mkdir -p "$DIR/cache" "$DIR/log" "$DIR/run"
  apt-cacher-ng -c "$PWD/tests/apt-cache" "CacheDir=$DIR/cache" "LogDir=$DIR/log" \
    "PidFile=$PIDFILE" "SocketPath=$DIR/run/socket" "Port=$PORT"
  for _ in $(seq 1 50); do
    answers && { log "started on port $PORT, cache $DIR/cache ($(du -sh "$DIR/cache" | cut -f1))"; return 0; }
    sleep 0.2
  done
  log "apt-cacher-ng did not answer on port $PORT; see $DIR/log"
  return 1
}

stop() {
  if [[ -f $PIDFILE ]] && kill "$(cat "$PIDFILE")" 2>/dev/null; then
    log "stopped"
  fi
  rm -f "$PIDFILE"
}

# apt-cacher-ng's transfer log: "time|I|bytes|client|path" for what it fetched from a mirror (I) and
# "time|O|bytes|client|path" for what it delivered to a client (O).
stats() {
  local logf=$DIR/log/apt-cacher.log
  [[ -f $logf ]] || { echo "no transfers logged"; return 0; }
  awk -F'|' -v since="${1:-0}" '$1 >= since && $2 == "I" {i += $3} $1 >= since && $2 == "O" {o += $3}
    END {printf "%.0f MB fetched from the archives, %.0f MB delivered to the nodes\n", i/1e6, o/1e6}' "$logf"
}

case ${1:-} in
  start) start ;;
  stop) stop ;;
  stats) stats "${2:-0}" ;;
  url) echo "http://127.0.0.1:$PORT" ;;
  *) echo "usage: $0 start|stop|stats [since-epoch]|url" >&2; exit 2 ;;
esac
