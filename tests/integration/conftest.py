"""Shared helpers for the integration tests (run with the project venv, see scripts/env.sh)."""
import atexit
import functools
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import tempfile

import pytest

from k8s_api_double import ApiDouble, write_kubeconfig

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@functools.lru_cache(maxsize=None)
def role_docs():
    """scripts/role-docs.py, imported by path (once per session): the one reader of the support data's pins and OS
    matrix."""
    import importlib.util  # pylint: disable=import-outside-toplevel
    spec = importlib.util.spec_from_file_location("baremetal_gpu_role_docs", os.path.join(ROOT, "scripts", "role-docs.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def chart_pin(role):
    """The chart version a cluster role installs by default, so that a chart bump does not touch the tests: read by
    scripts/role-docs.py's chart_pin(), which also writes docs/charts.md's pins table from it."""
    return role_docs().chart_pin(role)


def support():
    """plugins/module_utils/support.py (through role-docs.py's reader): the support data, e.g. CLUSTER_COMPONENTS, the
    cluster layer's components in install order."""
    return role_docs().load_support()


def supported_os():
    """The OS keys of the OS matrix (plugins/module_utils/support.py), in order: "Debian-12, Debian-13, ...", as the
    host roles' refusals list them. An OS release added to the matrix does not touch the tests."""
    return ', '.join(support().supported_os_keys())


# Every Python an ansible-playbook of the tests starts (its modules' above all) loads tests/images/sitecustomize.py
# (the test nodes carry the same file): the module_utils a module imports from its AnsiballZ zip are compiled once
# per test session instead of once per module run (about a third of a module run's CPU); see that file.
BYTECODE_CACHE = tempfile.mkdtemp(prefix="baremetal-gpu-module-bytecode-")
atexit.register(shutil.rmtree, BYTECODE_CACHE, True)


def ansible_env(extra=None):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.join(ROOT, "tests", "images")]
        + [entry for entry in env.get("PYTHONPATH", "").split(os.pathsep) if entry])
    env["BAREMETAL_TEST_BYTECODE_CACHE"] = BYTECODE_CACHE
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


# What each play of the playbooks that talks to the Kubernetes API carries: the cluster contract and the connection
# for every API module (meta/runtime.yml's group/baremetal.gpu.k8s). The tests' plays, cut from the playbooks, carry
# the same and set cluster_kubeconfig, as an inventory does; no role takes a kubeconfig of its own.
CLUSTER_PLAY_KEYWORDS = """  vars_files: [%s]
  module_defaults:
    group/baremetal.gpu.k8s: "{{ __cluster_connection }}"
""" % os.path.join(ROOT, 'playbooks', 'vars', 'cluster.yml')


def cluster_play(text):
    """``text``, a playbook, with CLUSTER_PLAY_KEYWORDS added to each of its plays (after its ``hosts:`` line)."""
    return re.sub(r'(?m)^(  hosts: .*\n)', lambda m: m.group(1) + CLUSTER_PLAY_KEYWORDS, text)


def roles_play(name, *roles):
    """A cluster play (cluster_play) on localhost named ``name`` that applies the collection's ``roles`` in order."""
    return cluster_play("---\n- name: %s\n  hosts: localhost\n  gather_facts: false\n  roles:\n%s" % (
        name, "".join("    - role: baremetal.gpu.%s\n" % role for role in roles)))


def run_playbook(playbook, *args, extra_env=None, timeout=600):
    """Run ansible-playbook against localhost (connection local); return CompletedProcess."""
    cmd = ["ansible-playbook", "-i", "localhost,", "-c", "local", playbook] + list(args)
    return subprocess.run(cmd, capture_output=True, text=True, env=ansible_env(extra_env),
                          timeout=timeout, check=False)


def killed_at(proc, marker, after=''):
    """kill -9 the run's whole process group (ansible-playbook, its workers and the module they run; ``proc`` started
    with start_new_session and text stdout) as soon as it prints a line starting with ``marker`` once it printed one
    containing ``after``; returns its output."""
    out = []
    seen = False
    for line in proc.stdout:
        out.append(line)
        seen = seen or after in line
        if seen and line.startswith(marker):
            os.killpg(proc.pid, signal.SIGKILL)
            break
    out.append(proc.stdout.read())
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, ''.join(out)[-3000:]
    return ''.join(out)


@pytest.fixture(scope="session")
def project_root():
    return ROOT


# The bearer token the API stand-in accepts (tests/integration/k8s_api_double.py).
API_TOKEN = 'double-token'


def real_node():
    """A real RKE2 GPU Node: the first item of tests/fixtures/k8s-nodes/edgexr__rke2-vgpu-A16-4Q-nodes.json."""
    with open(os.path.join(ROOT, 'tests', 'fixtures', 'k8s-nodes', 'edgexr__rke2-vgpu-A16-4Q-nodes.json'),
              encoding='utf-8') as handle:
        return json.load(handle)['items'][0]


def pod(name, namespace, resources=None, owner=None, empty_dir=False, phase='Running', node='nori'):
    """A Pod on Node ``node`` (a valid core/v1 Pod: test_upgrade_cluster_steps validates them), one container with
    ``resources`` as its limits, ``owner`` (kind, name) as its controller, and an emptyDir volume if ``empty_dir``."""
    container = {'name': 'main', 'image': 'registry.example/app:1'}
    if resources:
        container['resources'] = {'limits': resources}
    spec = {'nodeName': node, 'containers': [container]}
    if empty_dir:
        spec['volumes'] = [{'name': 'scratch', 'emptyDir': {}}]
    meta = {'name': name, 'namespace': namespace, 'labels': {'app': name}}
    if owner:
        meta['ownerReferences'] = [{'apiVersion': 'apps/v1', 'kind': owner[0], 'name': owner[1], 'uid': '1',
                                    'controller': True}]
    return {'apiVersion': 'v1', 'kind': 'Pod', 'metadata': meta, 'spec': spec, 'status': {'phase': phase}}


def paused_daemon_pod(pause, name, namespace, daemonset, instance, node):
    """A DaemonSet's pod on ``node`` that keeps off a Node labelled for ``pause`` (support.EXPORTER_PAUSE or
    DEVICE_PLUGIN_PAUSE): the labels of its selector and the node affinity term the roles' values give the chart
    (test_charts.py checks the real charts render them so)."""
    daemon = pod(name, namespace, owner=('DaemonSet', daemonset), node=node)
    key, value = pause['selector'].split('=', 1)
    daemon['metadata']['labels'] = {key: value, 'app.kubernetes.io/instance': instance}
    daemon['spec']['affinity'] = {'nodeAffinity': {'requiredDuringSchedulingIgnoredDuringExecution': {
        'nodeSelectorTerms': [{'matchExpressions': [{'key': pause['label'], 'operator': 'NotIn',
                                                     'values': [pause['value']]}]}]}}}
    return daemon


def exporter_pod(node):
    """The pod of baremetal.gpu.dcgm_exporter's DaemonSet on ``node``."""
    return paused_daemon_pod(support().EXPORTER_PAUSE, 'nvidia-dcgm-exporter-7x2kq', 'nvidia-dcgm',
                             'nvidia-dcgm-exporter', 'nvidia-dcgm-exporter', node)


def device_plugin_pod(node):
    """The device plugin's pod of baremetal.gpu.device_plugin's chart on ``node`` (GFD's and the MPS daemon's carry
    the same name label and affinity; the chart's default terms are cut to the pause term here)."""
    return paused_daemon_pod(support().DEVICE_PLUGIN_PAUSE, 'nvidia-device-plugin-x7k2p', 'nvidia-device-plugin',
                             'nvidia-device-plugin', 'nvdp', node)


# Real nvidia-smi -q -x captures (tests/fixtures/nvidia-smi-xml, sources in its SOURCE.md).
H100 = os.path.join(ROOT, 'tests', 'fixtures', 'nvidia-smi-xml', 'device__h100-80gb-hbm3__580.159.04.xml')
T4 = os.path.join(ROOT, 'tests', 'fixtures', 'nvidia-smi-xml', 'telegraf__tesla_t4.xml')


# A process on a GPU as nvidia-smi -q -x lists it (the <process_info> of tests/fixtures/nvidia-smi-xml/telegraf__a10g.xml,
# a compute process here).
PROCESS_INFO = ('<processes>\n\t\t\t<process_info>\n\t\t\t\t<gpu_instance_id>N/A</gpu_instance_id>\n'
                '\t\t\t\t<compute_instance_id>N/A</compute_instance_id>\n\t\t\t\t<pid>725</pid>\n\t\t\t\t<type>C</type>\n'
                '\t\t\t\t<process_name>python3</process_name>\n\t\t\t\t<used_memory>22 MiB</used_memory>\n'
                '\t\t\t</process_info>\n\t\t</processes>')


def stand_in(tmp_path, host, healthy, reset_helps=False, capture=H100, lost_on_reset=False, hang_on_reset=False,
             held_first_read=False, held_while=None, drm_dir=None):
    """TEST ONLY. A stand-in nvidia-smi for ``host`` (written into ``tmp_path``) that prints a real capture (the
    H100's by default), changed to a pending row remap (the T4's: a pending page retirement) unless ``healthy``.
    ``nvidia-smi -r -i N`` is logged in <host>.resets; afterwards the unchanged capture is printed when
    ``reset_helps``. With ``lost_on_reset`` the reset also loses the host (<host>.lost: the lossy_local connection of
    connection_plugins/ makes it unreachable from then on). With ``hang_on_reset`` the reset never returns (it
    sleeps, as a reset stuck in the driver does). With ``held_first_read`` its first reading lists a process on the
    GPU (a pod's, which a drain ends), the later ones none. While the file ``held_while`` exists (the API double's
    watch_pods: a pod that holds the GPU runs on the node), a reset is refused as nvidia-smi refuses it; so it is while
    the directory ``drm_dir`` exists (a loaded nvidia_drm: modprobe_stand_in). Returns its path."""
    with open(capture, encoding='utf-8') as handle:
        well = handle.read()
    if capture == H100:
        old, new = '<remapped_row_pending>No</remapped_row_pending>', '<remapped_row_pending>Yes</remapped_row_pending>'
    else:
        old, new = '<pending_retirement>No</pending_retirement>', '<pending_retirement>Yes</pending_retirement>'
    assert old in well
    now = well if healthy else well.replace(old, new)
    (tmp_path / ('%s-well.xml' % host)).write_text(well)
    (tmp_path / ('%s.xml' % host)).write_text(now)
    base = tmp_path / host
    held = ''
    if held_first_read:
        assert '<processes>\n\t\t</processes>' in now
        (tmp_path / ('%s-held.xml' % host)).write_text(now.replace('<processes>\n\t\t</processes>', PROCESS_INFO, 1))
        held = 'if [ ! -e %(b)s.read ]; then touch %(b)s.read; cat %(b)s-held.xml; exit 0; fi\n' % {'b': base}
    path = tmp_path / ('nvidia-smi-%s' % host)
    path.write_text('#!/bin/sh\n# TEST ONLY: a stand-in nvidia-smi printing a real capture\n'
                    '%(busy)s'
                    'if [ "$1" = -r ]; then echo "$@" >> %(b)s.resets; %(lose)s%(hang)secho "GPU reset"; exit 0; fi\n'
                    '%(held)s'
                    'if [ -e %(b)s.resets ] && [ %(helps)s = yes ]; then cat %(b)s-well.xml; else cat %(b)s.xml; fi\n'
                    % {'b': base, 'helps': 'yes' if reset_helps else 'no', 'lose': ('touch %s.lost; ' % base) if lost_on_reset else '',
                       'hang': 'exec sleep 300; ' if hang_on_reset else '', 'held': held,
                       'busy': ''.join('if [ "$1" = -r ] && [ -e %s ]; then echo "GPU 00000000:18:00.0 is currently in use by '
                                       'another process." >&2; exit 255; fi\n' % path for path in (held_while, drm_dir) if path)})
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


# TEST ONLY: modprobe for nvidia_drm (host_common's nvidia_drm, through its seams __host_common_modprobe and
# __host_common_sys_module). The directory sys-module/nvidia_drm stands for the loaded module: the stand-in
# nvidia-mig-parted (BAREMETAL_TEST_MIG_DRM_DIR) and the stand-in nvidia-smi (``drm_dir``) refuse a reset while it exists.
# Each call is logged in modprobe.log; while the file nvidia_drm-busy exists the module is in use, as with a display
# server on the GPU, and modprobe -r fails as the real one does.
MODPROBE_STAND_IN = """#!/bin/sh
echo "$*" >> %(dir)s/modprobe.log
if [ "$1" = -r ]; then
  if [ -e %(dir)s/nvidia_drm-busy ]; then echo "modprobe: FATAL: Module nvidia_drm is in use." >&2; exit 1; fi
  rmdir %(dir)s/sys-module/nvidia_drm 2>/dev/null; exit 0
fi
mkdir -p %(dir)s/sys-module/nvidia_drm
"""


def modprobe_stand_in(tmp_path, loaded):
    """Writes the stand-in modprobe into ``tmp_path``, with nvidia_drm loaded or not; returns the seams' variables."""
    (tmp_path / 'sys-module').mkdir(exist_ok=True)
    if loaded:
        (tmp_path / 'sys-module' / 'nvidia_drm').mkdir()
    modprobe = tmp_path / 'modprobe'
    modprobe.write_text(MODPROBE_STAND_IN % {'dir': tmp_path})
    modprobe.chmod(0o755)
    return {'__host_common_sys_module': str(tmp_path / 'sys-module'), '__host_common_modprobe': str(modprobe)}


def modprobe_calls(tmp_path):
    """The stand-in modprobe's calls, in order."""
    log = tmp_path / 'modprobe.log'
    return log.read_text().splitlines() if log.exists() else []


@pytest.fixture
def cluster(tmp_path):
    """The Kubernetes API stand-in, started, with a kubeconfig for it (``.kubeconfig``); stopped after the test."""
    double = ApiDouble(token=API_TOKEN).start()
    double.kubeconfig = write_kubeconfig(tmp_path / 'kubeconfig', double.url, API_TOKEN)
    yield double
    double.stop()
