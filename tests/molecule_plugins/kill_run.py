"""TEST ONLY: kill a run of ansible-playbook once a test node says it is held where the test wants it killed.

Shared by the verify tests of the molecule scenarios that kill a run inside an apt transaction (a stand-in's maintainer
script or a test-only dpkg trigger holds dpkg and creates a file while it holds). On the verifier's PYTHONPATH
(.config/molecule/config.yml).
"""
import os
import signal
import time


def kill_when_held(host, proc, holding, seconds=300):
    """Wait until ``holding`` exists on ``host`` (or the run ended), then kill -9 the run's whole process group
    (``proc`` started with start_new_session and text stdout, stderr joined): as a dropped SSH session ends the run.
    Returns the run's output; the test then asserts that the node was held."""
    try:
        for _second in range(seconds):
            if host.run("test -e %s" % holding).rc == 0 or proc.poll() is not None:
                break
            time.sleep(1)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        out = proc.communicate()[0]
    return out
