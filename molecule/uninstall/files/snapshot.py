"""Record a node's package selections, holds and every path under /etc (TEST ONLY).

python3 snapshot.py OUT.json: {"selections": {package: state}, "holds": [...], "etc": {path: "f <sha256>" | "l <target>" | "d"}}
"""
import hashlib
import json
import os
import subprocess
import sys


def etc():
    found = {}
    for root, dirs, files in os.walk("/etc"):
        for name in dirs + files:
            path = os.path.join(root, name)
            if os.path.islink(path):
                found[path] = "l " + os.readlink(path)
            elif os.path.isdir(path):
                found[path] = "d"
            elif os.path.isfile(path):
                digest = hashlib.sha256()
                with open(path, "rb") as handle:
                    for block in iter(lambda: handle.read(1 << 20), b""):
                        digest.update(block)
                found[path] = "f " + digest.hexdigest()
    return found


def main():
    env = dict(os.environ, LC_ALL="C")
    selections = {}
    for line in subprocess.run(["dpkg", "--get-selections"], capture_output=True, text=True, check=True, env=env).stdout.splitlines():
        name, state = line.split()
        selections[name] = state
    holds = subprocess.run(["apt-mark", "showhold"], capture_output=True, text=True, check=True, env=env).stdout.split()
    with open(sys.argv[1], "w", encoding="utf-8") as handle:
        json.dump({"selections": selections, "holds": sorted(holds), "etc": etc()}, handle, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
