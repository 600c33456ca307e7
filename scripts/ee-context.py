"""Put into .cache/ee what execution-environment.yml's build installs, and print the build's cache key.

    python3 scripts/ee-context.py TARBALL BASE_IMAGE_ID

TARBALL is this collection's built tarball (ansible-galaxy collection build). Written:
  .cache/ee/collections/<ns>-<name>.tar.gz   this collection and each dependency of galaxy.yml, the dependency
                                             at the version requirements.yml pins (from the project-local copy
                                             scripts/setup.sh installed; its MANIFEST.json must say that version)
  .cache/ee/wheels/                          wheels of every Python package the definition names, and of the
                                             builder's own tools, for the EE's Python and platform; pip.conf
                                             that makes the build's pip take only these
Checked, so the definition cannot drift from the collection: its galaxy list is exactly this collection and
galaxy.yml's dependencies. The key (stdout) changes when any input of the build does: the definition, the
collections' file checksums, the wheels, helm and kubectl, the base image, ansible-builder.
"""
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, ".cache", "ee")
COLLECTIONS = os.path.join(ROOT, ".ansible", "collections", "ansible_collections")
# What ansible-builder's builder stage installs with pip for itself (unpinned there): pinned here.
BUILDER_TOOLS = ["bindep==2.13.0", "PyYAML==6.0.3", "packaging==25.0"]
# The EE's Python and platform (the wheels must fit it, not this machine): Python 3.11 on glibc 2.34 or
# newer (RHEL 9, as the recommended ee-minimal-rhel9; Debian 12, the test base), x86_64.
EE_PYTHON = os.environ.get("EE_PYTHON_VERSION", "3.11")
EE_PLATFORM = os.environ.get("EE_PLATFORM", "manylinux_2_34_x86_64")
# pip does not count the legacy manylinux tags as older glibc versions of a manylinux_2_X platform.
LEGACY_PLATFORMS = ["manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"]


def fail(msg):
    sys.exit("ee-context: " + msg)


def load_yaml(path):
    with open(os.path.join(ROOT, path)) as f:
        return yaml.safe_load(f)


def tar_dir(src, dest):
    """A collection tarball of an installed collection, its files at the archive's root as Galaxy builds them.
    The copies scripts/setup.sh takes from the PyPI `ansible` package lack the files that package leaves out
    (tests, CI); their FILES.json still lists them, and ansible-galaxy refuses a tarball without a listed
    file. So FILES.json lists the files present (each checked against the checksum it had) and MANIFEST.json
    the new FILES.json's checksum."""
    with open(os.path.join(src, "FILES.json")) as f:
        files = json.load(f)
    kept = []
    for entry in files["files"]:
        path = os.path.join(src, entry["name"])
        if entry["name"] == "." or (entry["ftype"] == "dir" and os.path.isdir(path)):
            kept.append(entry)
        elif entry["ftype"] == "file" and os.path.isfile(path):
            with open(path, "rb") as f:
                if hashlib.sha256(f.read()).hexdigest() != entry["chksum_sha256"]:
                    fail("%s differs from the checksum its FILES.json gives" % path)
            kept.append(entry)
    files_json = json.dumps(dict(files, files=kept), indent=4).encode()
    with open(os.path.join(src, "MANIFEST.json")) as f:
        manifest = json.load(f)
    manifest["file_manifest_file"]["chksum_sha256"] = hashlib.sha256(files_json).hexdigest()
    manifest_json = json.dumps(manifest, indent=4).encode()
    with tarfile.open(dest, "w:gz") as tar:
        for name, data in (("MANIFEST.json", manifest_json), ("FILES.json", files_json)):
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
        for entry in kept[1:]:
            tar.add(os.path.join(src, entry["name"]), arcname=entry["name"], recursive=False)


def manifest_of(tarball):
    with tarfile.open(tarball) as tar:
        manifest = tar.extractfile("MANIFEST.json").read()
        files = tar.extractfile("FILES.json").read()
    return json.loads(manifest), manifest + files


def main(argv):
    if len(argv) != 3:
        fail("usage: ee-context.py TARBALL BASE_IMAGE_ID")
    tarball, base_id = argv[1], argv[2]
    definition = load_yaml("execution-environment.yml")
    galaxy = load_yaml("galaxy.yml")
    pins = {c["name"]: str(c["version"]) for c in load_yaml("requirements.yml")["collections"]}
    own = "%s.%s" % (galaxy["namespace"], galaxy["name"])
    wanted = sorted(list(galaxy.get("dependencies") or {}) + [own])
    listed = sorted(os.path.basename(c["name"])[:-len(".tar.gz")].replace("-", ".", 1)
                    for c in definition["dependencies"]["galaxy"]["collections"])
    if listed != wanted:
        fail("execution-environment.yml's galaxy collections %s are not this collection and galaxy.yml's "
             "dependencies %s" % (listed, wanted))
    key = hashlib.sha256()
    with open(os.path.join(ROOT, "execution-environment.yml"), "rb") as f:
        key.update(f.read())
    coll_dir = os.path.join(OUT, "collections")
    shutil.rmtree(coll_dir, ignore_errors=True)
    os.makedirs(coll_dir)
    for fqcn in wanted:
        ns, name = fqcn.split(".")
        dest = os.path.join(coll_dir, "%s-%s.tar.gz" % (ns, name))
        if fqcn == own:
            shutil.copyfile(tarball, dest)
        else:
            if fqcn not in pins:
                fail("galaxy.yml depends on %s, which requirements.yml does not pin" % fqcn)
            src = os.path.join(COLLECTIONS, ns, name)
            if not os.path.isfile(os.path.join(src, "MANIFEST.json")):
                fail("%s is not installed in %s (run scripts/setup.sh)" % (fqcn, COLLECTIONS))
            tar_dir(src, dest)
        manifest, content = manifest_of(dest)
        version = manifest["collection_info"]["version"]
        if fqcn in pins and version != pins[fqcn]:
            fail("%s is %s in %s, requirements.yml pins %s" % (fqcn, version, COLLECTIONS, pins[fqcn]))
        key.update(content)
    deps = definition["dependencies"]
    packages = [deps["ansible_core"]["package_pip"], deps["ansible_runner"]["package_pip"],
                definition["options"]["container_init"]["package_pip"]] + list(deps["python"]) + BUILDER_TOOLS
    unpinned = [p for p in packages if "==" not in p]
    if unpinned:
        fail("unpinned Python packages in execution-environment.yml: %s" % ", ".join(unpinned))
    # Afresh each time (pip's own cache makes that quick): a wheel of an earlier pin must not stay beside.
    wheels = os.path.join(OUT, "wheels")
    shutil.rmtree(wheels, ignore_errors=True)
    os.makedirs(wheels)
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--dest", wheels,
           "--only-binary=:all:", "--python-version", EE_PYTHON, "--platform", EE_PLATFORM]
    for platform in LEGACY_PLATFORMS if EE_PLATFORM.endswith("_x86_64") else []:
        cmd += ["--platform", platform]
    cmd += packages
    if subprocess.call(cmd, stdout=sys.stderr) != 0:
        fail("pip download of the EE's Python packages failed (command: %s)" % " ".join(cmd))
    with open(os.path.join(wheels, "pip.conf"), "w") as f:
        f.write("# The EE build's pip (scripts/ee-context.py): only the wheels of the build context.\n"
                "[global]\nno-index = true\nfind-links = /tmp/ee-wheels\n")
    for name in sorted(os.listdir(wheels)):
        key.update(name.encode())
    for tool in ("helm", "kubectl"):
        with open(os.path.join(ROOT, ".bin", tool), "rb") as f:
            key.update(hashlib.sha256(f.read()).digest())
    key.update(base_id.encode())
    key.update(subprocess.check_output(["ansible-builder", "--version"]))
    print(key.hexdigest()[:12])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
