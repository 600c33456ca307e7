"""Record a node's package selections, holds and every path under /etc (TEST ONLY).

python3 snapshot.py OUT.json
    {"selections": {package: state}, "holds": [...], "etc": {path: "f <sha256>" | "l <target>" | "d"}}
    Paths the container runtime mounts into the node (/etc/hosts, /etc/hostname, /etc/resolv.conf) are
    left out: they belong to the container, not to the node, and differ between two containers of one image.
python3 snapshot.py compose PRISTINE PRE POST OUT.json
    For a node that starts from another scenario's converged image (scripts/test-all.sh, "converge once,
    reuse"): PRISTINE is that node before the collection touched it (taken by the producing scenario),
    PRE and POST this scenario's node before and after it added the user's own state (containerd, configs,
    stand-ins). OUT is "the node before the collection" as if this scenario had started fresh: PRISTINE
    with every change from PRE to POST applied.
"""
import hashlib
import json
import os
import subprocess
import sys


def mounted():
    """Mount points inside /etc (the 5th field of /proc/self/mountinfo)."""
    with open("/proc/self/mountinfo", encoding="utf-8") as handle:
        return {line.split()[4] for line in handle if line.split()[4].startswith("/etc/")}


def etc():
    found = {}
    skip = mounted()
    for root, dirs, files in os.walk("/etc"):
        for name in dirs + files:
            path = os.path.join(root, name)
            if path in skip:
                continue
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


def record():
    env = dict(os.environ, LC_ALL="C")
    selections = {}
    for line in subprocess.run(["dpkg", "--get-selections"], capture_output=True, text=True, check=True, env=env).stdout.splitlines():
        name, state = line.split()
        selections[name] = state
    holds = subprocess.run(["apt-mark", "showhold"], capture_output=True, text=True, check=True, env=env).stdout.split()
    return {"selections": selections, "holds": sorted(holds), "etc": etc()}


def apply_changes(base, pre, post):
    """`base` with every key that differs between `pre` and `post` set as in `post` (absent: removed)."""
    out = dict(base)
    for key in set(pre) | set(post):
        if pre.get(key) != post.get(key):
            if key in post:
                out[key] = post[key]
            else:
                out.pop(key, None)
    return out


def compose(pristine, pre, post):
    holds = apply_changes({h: True for h in pristine["holds"]}, {h: True for h in pre["holds"]},
                          {h: True for h in post["holds"]})
    return {"selections": apply_changes(pristine["selections"], pre["selections"], post["selections"]),
            "holds": sorted(holds), "etc": apply_changes(pristine["etc"], pre["etc"], post["etc"])}


def main():
    if sys.argv[1] == "compose":
        pristine, pre, post = (json.load(open(path, encoding="utf-8")) for path in sys.argv[2:5])
        result, out = compose(pristine, pre, post), sys.argv[5]
    else:
        result, out = record(), sys.argv[1]
    with open(out, "w", encoding="utf-8") as handle:
        json.dump(result, handle, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
