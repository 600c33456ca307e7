#!/usr/bin/env bash
# Benchmark (not a test): the four cluster roles in render mode (tests/integration/test_render.py's two settings),
# a first run and a second that must change nothing, each timed; REPS times (default 3), medians printed.
#
#   bash benchmarks/bench_render.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=scripts/env.sh
. scripts/env.sh
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
REPS="${REPS:-3}" WORK="$WORK" python3 - <<'PY'
import os, statistics, sys, time
sys.path.insert(0, os.path.join(os.getcwd(), 'tests', 'integration'))
import test_render as tr  # the settings, the play and the render helper the tests use
times = {}
for rep in range(int(os.environ['REPS'])):
    for name, vars_ in tr.SCENARIOS.items():
        tmp = os.path.join(os.environ['WORK'], '%s-%d' % (name, rep))
        for run in ('first', 'second'):
            start = time.time()
            res, _dirs = tr.render(tmp, tr.ROLES, vars_)
            assert res.returncode == 0, res.stdout[-2000:]
            changed = tr.recap(res)['changed']
            assert (changed > 0) == (run == 'first'), (run, changed)
            times.setdefault((name, run), []).append(time.time() - start)
print('| settings | run | median s | runs |')
print('|---|---|---|---|')
for (name, run), values in sorted(times.items()):
    print('| %s | %s | %.1f | %s |' % (name, run, statistics.median(values), ' '.join('%.1f' % v for v in values)))
PY
