"""Print, as JSON, the apt source lines this node lacks for the NVIDIA driver.

Reads the node's own apt sources (one-line *.list and deb822 *.sources), skips the
file this role writes, takes the mirror(s) that serve the release suite, and for
each wanted suite lists the components not yet enabled there. Read-only.

usage: apt_missing_sources.py RELEASE SUFFIXES COMPONENTS EXCLUDE
  SUFFIXES and COMPONENTS are comma-separated (",-updates,-security" means the
  release suite itself, then <release>-updates and <release>-security).
"""
import glob
import json
import sys


def one_line(path):
    out = []
    with open(path, encoding="utf-8") as fh:
        for raw in fh:
            line = raw.split("#", 1)[0].strip()
            if not line.startswith("deb "):
                continue
            words = line.split()[1:]
            if words and words[0].startswith("["):
                while words and not words[0].endswith("]"):
                    words.pop(0)
                words = words[1:]
            if len(words) >= 2:
                out.append((words[0].rstrip("/") + "/", words[1], set(words[2:])))
    return out


def deb822(path):
    out = []
    with open(path, encoding="utf-8") as fh:
        paragraphs = fh.read().split("\n\n")
    for para in paragraphs:
        fields = {}
        key = None
        for raw in para.splitlines():
            if raw.startswith("#") or not raw.strip():
                continue
            if raw[0] in " \t" and key:
                fields[key] += " " + raw.strip()
                continue
            key, _sep, value = raw.partition(":")
            key = key.strip().lower()
            fields[key] = value.strip()
        if "deb" not in fields.get("types", "").split():
            continue
        if fields.get("enabled", "yes").lower() == "no":
            continue
        for uri in fields.get("uris", "").split():
            for suite in fields.get("suites", "").split():
                out.append((uri.rstrip("/") + "/", suite, set(fields.get("components", "").split())))
    return out


def main():
    release, suffixes, components, exclude = sys.argv[1:5]
    wanted = [c for c in components.split(",") if c]
    entries = []
    files = ["/etc/apt/sources.list"] + sorted(glob.glob("/etc/apt/sources.list.d/*.list"))
    for path in files:
        if path != exclude and glob.os.path.exists(path):
            entries += one_line(path)
    for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
        if path != exclude:
            entries += deb822(path)
    mirrors = []
    for uri, suite, _components in entries:
        if suite == release and uri not in mirrors:
            mirrors.append(uri)
    lines = []
    for uri in mirrors:
        for suffix in suffixes.split(","):
            suite = release + suffix
            present = set()
            for e_uri, e_suite, e_comps in entries:
                if e_uri == uri and e_suite == suite:
                    present |= e_comps
            missing = [c for c in wanted if c not in present]
            if missing:
                lines.append("deb %s %s %s" % (uri, suite, " ".join(missing)))
    json.dump({"mirrors": mirrors, "lines": lines}, sys.stdout)


if __name__ == "__main__":
    main()
