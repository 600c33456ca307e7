"""make ee (scripts/build-ee.sh) says what is missing by name, before anything starts (bad inputs).

The build itself, and a job run in the EE, are tested in molecule/execution_environment.
"""
import os
import shutil
import subprocess

import pytest
from conftest import ROOT

SCRIPT = os.path.join(ROOT, "scripts", "build-ee.sh")


def _run(env):
    return subprocess.run(["bash", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
                          check=False)


def test_without_podman_it_says_podman_is_missing(tmp_path):
    # A PATH with what the script needs before its first check, and no podman.
    for tool in ("bash", "dirname"):
        os.symlink(shutil.which(tool), tmp_path / tool)
    proc = _run({"PATH": str(tmp_path), "HOME": os.environ.get("HOME", "/root")})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "podman is not installed (not found in PATH)" in proc.stderr, proc.stderr
    assert proc.stdout == ""


def test_without_room_it_says_where_and_how_much(tmp_path):
    if shutil.which("podman") is None:
        pytest.skip("no podman on this machine: the check for podman comes first")
    env = dict(os.environ, EE_MIN_FREE_GB="100000000")
    proc = _run(env)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "MiB free in" in proc.stderr and "the build needs 100000000 GiB (EE_MIN_FREE_GB) there" in proc.stderr
    assert "building" not in proc.stderr


def test_a_base_image_that_is_not_here_is_named_and_not_pulled(tmp_path):
    if shutil.which("podman") is None:
        pytest.skip("no podman on this machine: the check for podman comes first")
    env = dict(os.environ, EE_BASE_IMAGE="localhost/baremetal-gpu-no-such-base:0")
    proc = _run(env)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "the base image localhost/baremetal-gpu-no-such-base:0 is not on this machine" in proc.stderr
