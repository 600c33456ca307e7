"""Shared helpers for the integration tests (run with the project venv, see scripts/env.sh)."""
import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def ansible_env(extra=None):
    env = dict(os.environ)
    env.update({
        "ANSIBLE_COLLECTIONS_PATH": os.path.join(ROOT, ".ansible", "collections"),
        "ANSIBLE_ROLES_PATH": os.path.join(ROOT, "roles"),
        "ANSIBLE_INJECT_FACT_VARS": "false",
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_FORCE_COLOR": "0",
        "ANSIBLE_RETRY_FILES_ENABLED": "0",
        "ANSIBLE_LOCALHOST_WARNING": "0",
        "ANSIBLE_INVENTORY_UNPARSED_WARNING": "0",
        "ANSIBLE_PYTHON_INTERPRETER": os.path.join(ROOT, ".venv", "bin", "python"),
    })
    env.update(extra or {})
    return env


def run_playbook(playbook, *args, extra_env=None, timeout=600):
    """Run ansible-playbook against localhost (connection local); return CompletedProcess."""
    cmd = ["ansible-playbook", "-i", "localhost,", "-c", "local", playbook] + list(args)
    return subprocess.run(cmd, capture_output=True, text=True, env=ansible_env(extra_env),
                          timeout=timeout, check=False)


@pytest.fixture(scope="session")
def project_root():
    return ROOT
