"""The machine's speed, for comparing CPU figures taken on different machines (docs/benchmarks.md).

    python3 scripts/calibrate.py          # prints: <seconds> <factor>

Times a fixed, single-threaded CPU-bound workload that looks like the suite's own (Python byte code, YAML-ish text
handling, hashing) by the process's own CPU clock, best of three, so a busy machine does not inflate it much.
<factor> is REFERENCE_SECONDS / <seconds>: 1.0 on the reference machine, below 1 on a slower one. A row's CPU
seconds times <factor> is what the same work would have cost on the reference machine.
"""
import hashlib
import json
import sys
import time

# The workload's CPU seconds on the reference machine (the 2-core machine of the first calibrated row of
# docs/benchmarks.md's table of whole runs, idle).
REFERENCE_SECONDS = 1.12


def workload():
    data = {"node-%d" % i: {"gpus": i % 8, "labels": ["nvidia.com/gpu.present=true"] * 4} for i in range(2000)}
    digest = hashlib.sha256()
    for _round in range(100):
        text = json.dumps(data, sort_keys=True)
        digest.update(text.encode())
        words = sorted(set(text.replace('"', " ").split()))
        data = {k: dict(v, gpus=(v["gpus"] + len(words)) % 8) for k, v in data.items()}
    total = 0
    for i in range(12000000):
        total += i % 7
    return digest.hexdigest(), total


def measure(rounds=3):
    best = None
    for _round in range(rounds):
        start = time.process_time()
        workload()
        spent = time.process_time() - start
        best = spent if best is None else min(best, spent)
    return best


def main():
    seconds = measure()
    print("%.3f %.3f" % (seconds, REFERENCE_SECONDS / seconds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
