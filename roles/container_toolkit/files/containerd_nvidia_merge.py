"""Compute the containerd drop-in for the NVIDIA runtime, and the main config's new imports.

Read-only: prints one JSON object and writes nothing; the role writes the files (with
check mode, diff and `validate:`). Usage:

    containerd_nvidia_merge.py CONFIG DROPIN IMPORT_ENTRY RUNTIME_NAME BINARY CONTAINERD_MAJOR DEFAULT(true|false)

Why the drop-in carries the whole CRI plugin table: containerd 1.6/1.7 merge an imported file
into the main config one plugin at a time, so an imported
[plugins."io.containerd.grpc.v1.cri"...] table *replaces* the main config's CRI table (the
user's sandbox_image, runc options, registry settings would be lost). The drop-in therefore
holds the user's CRI table (main config plus the files it already imports, in containerd's
order), with the nvidia runtime merged in. The main config itself only gains an `imports` entry.
"""
import glob
import json
import os
import re
import sys

try:
    import tomllib as _toml  # Python 3.11+

    def _loads(text):
        return _toml.loads(text)
except ImportError:  # pragma: no cover - older Pythons (Ubuntu 22.04, EL9)
    try:
        import tomli as _toml

        def _loads(text):
            return _toml.loads(text)
    except ImportError:
        try:
            import toml as _toml

            def _loads(text):
                return _toml.loads(text)
        except ImportError:
            print(json.dumps({"failed": True, "msg": "no TOML parser on this node: install python3-toml "
                              "(Python < 3.11 lacks tomllib)"}))
            sys.exit(1)

PLUGIN = {2: "io.containerd.grpc.v1.cri", 3: "io.containerd.cri.v1.runtime"}
BARE = re.compile(r"^[A-Za-z0-9_-]+$")
HEADER = re.compile(r"^\s*\[")


def key(k):
    return k if BARE.match(k) else json.dumps(k)


def scalar(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(scalar(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join("%s = %s" % (key(k), scalar(x)) for k, x in v.items()) + "}"
    return json.dumps(str(v))


def is_table_list(v):
    return isinstance(v, list) and v and all(isinstance(x, dict) for x in v)


def emit(path, table, out):
    out.append("")
    out.append("[%s]" % ".".join(key(p) for p in path))
    for k, v in table.items():
        if not isinstance(v, dict) and not is_table_list(v):
            out.append("  %s = %s" % (key(k), scalar(v)))
    for k, v in table.items():
        if isinstance(v, dict):
            emit(path + [k], v, out)
        elif is_table_list(v):
            for item in v:
                out.append("")
                out.append("[[%s]]" % ".".join(key(p) for p in path + [k]))
                for ik, iv in item.items():
                    out.append("  %s = %s" % (key(ik), scalar(iv)))


def merge(base, over):
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(base.get(k), dict):
            merge(base[k], v)
        else:
            base[k] = v
    return base


def top_level(text):
    """Split text into (top-level part before the first table header, rest)."""
    lines = text.splitlines(True)
    for i, line in enumerate(lines):
        if HEADER.match(line):
            return "".join(lines[:i]), "".join(lines[i:])
    return text, ""


def main(argv):
    config, dropin, entry, name, binary, major, default = argv[1:8]
    major = int(major)
    default = default.lower() == "true"
    exists = os.path.exists(config)
    text = open(config, encoding="utf-8").read() if exists else ""
    try:
        data = _loads(text)
    except Exception as exc:  # noqa: BLE001 - report any parse error with the path
        return {"failed": True, "msg": "%s is not valid TOML: %s" % (config, exc)}
    version = data.get("version")
    if version is None:
        if data.get("plugins"):
            return {"failed": True, "msg": "%s has no `version` key but configures plugins (config version 1, "
                    "deprecated): add `version = 2` and rename the plugin tables, then run again" % config}
        version = 3 if major >= 2 else 2
    if version not in PLUGIN:
        return {"failed": True, "msg": "%s: unsupported containerd config version %r (expected 2 or 3)" % (config, version)}
    if version == 3 and major < 2:
        return {"failed": True, "msg": "%s is config version 3, which containerd %d.x cannot read" % (config, major)}
    plugin = PLUGIN[version]

    # The CRI table containerd would see without our drop-in: main config, then each import in order.
    imports = list(data.get("imports") or [])
    cri = merge({}, (data.get("plugins") or {}).get(plugin) or {})
    for pattern in imports:
        pattern = pattern if os.path.isabs(pattern) else os.path.join(os.path.dirname(config), pattern)
        for path in sorted(glob.glob(pattern)):
            if os.path.abspath(path) == os.path.abspath(dropin):
                continue
            try:
                part = _loads(open(path, encoding="utf-8").read())
            except Exception as exc:  # noqa: BLE001
                return {"failed": True, "msg": "%s (imported by %s) is not valid TOML: %s" % (path, config, exc)}
            if plugin in (part.get("plugins") or {}):
                # containerd replaces the whole plugin table with the imported one.
                cri = merge({}, part["plugins"][plugin])

    runtimes = cri.setdefault("containerd", {}).setdefault("runtimes", {})
    runc = runtimes.get("runc") or {}
    nvidia = merge({}, runtimes.get(name) or {})
    nvidia.setdefault("runtime_type", runc.get("runtime_type", "io.containerd.runc.v2"))
    options = merge(merge({}, runc.get("options") or {}), nvidia.get("options") or {})
    options["BinaryName"] = binary
    nvidia["options"] = options
    runtimes[name] = nvidia
    if default:
        cri["containerd"]["default_runtime_name"] = name

    out = ["# The CRI plugin table of %s (and its imports) with the %r runtime merged in." % (config, name),
           "# containerd replaces a plugin's whole table with an imported one, so this file carries all of it.",
           "version = %d" % version]
    emit(["plugins", plugin], cri, out)
    dropin_text = "\n".join(out) + "\n"

    # The main config only gains the import (and `version` when it had none).
    new_main = text
    covered = any(os.path.abspath(dropin) in [os.path.abspath(p) for p in glob.glob(
        i if os.path.isabs(i) else os.path.join(os.path.dirname(config), i))] or i in (entry, dropin) for i in imports)
    if not covered or "version" not in data:
        head, rest = top_level(text)
        new_imports = imports + ([] if covered else [entry])
        line = "imports = %s\n" % scalar(new_imports)
        if re.search(r"(?ms)^imports\s*=\s*\[.*?\]\s*$", head):
            head = re.sub(r"(?ms)^imports\s*=\s*\[.*?\][ \t]*\n?", line, head, count=1)
        elif re.search(r"(?m)^version\s*=", head):
            head = re.sub(r"(?m)^(version\s*=.*\n?)", lambda m: m.group(1).rstrip("\n") + "\n" + line, head, count=1)
        else:
            head = head + "version = %d\n%s" % (version, line)
        if "version" not in data and re.search(r"(?m)^version\s*=", head) is None:
            head = "version = %d\n" % version + head
        new_main = head + ("\n" if rest and not head.endswith("\n") else "") + rest
    return {"failed": False, "config_exists": exists, "version": version, "plugin": plugin,
            "imports": imports, "main_content": new_main, "main_changed": new_main != text,
            "dropin_content": dropin_text}


if __name__ == "__main__":
    result = main(sys.argv)
    print(json.dumps(result))
    sys.exit(1 if result.get("failed") else 0)
