"""TEST ONLY (molecule/maintenance_kill side effect): a stand-in of NVIDIA's nvidia-mig-parted for a node without a
GPU (and tests/integration/test_host_rollout_cluster.py's MIG change, on the machine running the tests). It keeps the
GPUs' MIG state in /var/lib/baremetal-test-mig/state.json (BAREMETAL_TEST_MIG_STATE) and behaves as the real tool does where
the mig_manager role depends on it (cmd/nvidia-mig-parted/assert and apply of NVIDIA/mig-parted):
  assert --config-file FILE|- --selected-config NAME   exit 0 when every GPU has what the layout's entries (walked in
      order, a later entry winning for the GPUs it selects) say; else "assertion failure: selected configuration not
      currently applied", exit 1; an unknown layout or an unreadable file: another error, exit 1
  apply --config-file FILE --selected-config NAME      a MIG mode change is refused while a client holds the GPU (here
      the test unit baremetal-test-gpu-holder, or a loaded nvidia_drm), as the driver refuses the reset; the mode is written first, the
      instances after (a kill in between leaves MIG on without the instances, as on a real GPU); each apply is
      logged in /var/tmp/mig-applies.log; while /var/tmp/mig-apply-hang exists it hangs after the mode change; while
      the file BAREMETAL_TEST_MIG_NO_RESET names exists the GPUs cannot be reset (a GPU passed through to a VM): the
      mode is set pending, and the apply fails as the real one does after its reset failed ("error resetting all
      GPUs"), the GPUs keeping their current mode until a boot
Run as nvidia-smi (a copy named so; tests/integration only): -q -x prints the real capture BAREMETAL_TEST_MIG_SMI_XML
names with its first GPU's current and pending MIG mode from the state."""
import json
import os
import re
import subprocess
import sys
import time

import yaml

# The state file, and what holds the GPU: the test unit baremetal-test-gpu-holder while it runs; where the
# environment names a file instead (tests/integration, no systemd there), while that file exists.
STATE = os.environ.get('BAREMETAL_TEST_MIG_STATE', '/var/lib/baremetal-test-mig/state.json')
HELD_FILE = os.environ.get('BAREMETAL_TEST_MIG_HELD_FILE', '')
# A loaded nvidia_drm holds the GPU too: where the environment names the directory that stands for it (the test's
# /sys/module/nvidia_drm), while that directory exists.
DRM_DIR = os.environ.get('BAREMETAL_TEST_MIG_DRM_DIR', '')
# While this file exists, a reset of the GPUs fails (a GPU passed through to a VM): a mode change waits for a boot.
NO_RESET = os.environ.get('BAREMETAL_TEST_MIG_NO_RESET', '')


def fail(message):
    sys.stderr.write('Error: %s\n' % message)
    sys.exit(1)


def args():
    out, rest = {}, sys.argv[2:]
    while rest:
        key = rest.pop(0)
        if key in ('-f', '--config-file'):
            out['file'] = rest.pop(0)
        elif key in ('-c', '--selected-config'):
            out['config'] = rest.pop(0)
    return out


def wanted(options, gpus):
    if options.get('file') == '-':
        spec = yaml.safe_load(sys.stdin.read())
    else:
        with open(options['file'], encoding='utf-8') as handle:
            spec = yaml.safe_load(handle)
    configs = spec.get('mig-configs') or {}
    if options.get('config') not in configs:
        fail('error selecting MIG config: selected mig-config not present: %s' % options.get('config'))
    out = [None] * len(gpus)
    for entry in configs[options['config']]:
        filters = entry.get('device-filter')
        filters = [filters] if isinstance(filters, str) else filters
        for index, gpu in enumerate(gpus):
            if filters and gpu['device_id'].upper() not in [f.upper() for f in filters]:
                continue
            if entry['devices'] != 'all' and index not in entry['devices']:
                continue
            out[index] = {'mig_enabled': bool(entry['mig-enabled']),
                          'devices': dict(entry.get('mig-devices') or {}) if entry['mig-enabled'] else {}}
    return out


def nvidia_smi():
    """-q -x: the real capture, its first GPU's <current_mig> and <pending_mig> from the state."""
    if sys.argv[1:] != ['-q', '-x']:
        fail('stand-in nvidia-smi: only -q -x')
    with open(STATE, encoding='utf-8') as handle:
        gpu = json.load(handle)['gpus'][0]
    with open(os.environ['BAREMETAL_TEST_MIG_SMI_XML'], encoding='utf-8') as handle:
        xml = handle.read()
    mode = {True: 'Enabled', False: 'Disabled'}
    current = mode[gpu['mig_enabled']]
    xml = re.sub(r'<current_mig>[^<]*</current_mig>', '<current_mig>%s</current_mig>' % current, xml, count=1)
    xml = re.sub(r'<pending_mig>[^<]*</pending_mig>', '<pending_mig>%s</pending_mig>'
                 % mode[gpu.get('mig_pending', gpu['mig_enabled'])], xml, count=1)
    sys.stdout.write(xml)


def main():
    if os.path.basename(sys.argv[0]) == 'nvidia-smi':
        nvidia_smi()
        return
    command = sys.argv[1] if len(sys.argv) > 1 else ''
    options = args()
    with open(STATE, encoding='utf-8') as handle:
        state = json.load(handle)
    want = wanted(options, state['gpus'])
    if command == 'assert':
        if all(w is not None and w['mig_enabled'] == g['mig_enabled'] and w['devices'] == g['devices']
               for w, g in zip(want, state['gpus'])):
            print('Selected MIG configuration currently applied')
            return
        fail('assertion failure: selected configuration not currently applied')
    if command != 'apply':
        fail('stand-in: %s is not a command of this stand-in' % command)
    if any(w is None for w in want):
        fail('not all GPUs match the specified config')
    if any(w['mig_enabled'] != g['mig_enabled'] for w, g in zip(want, state['gpus'])):
        if held():
            fail('error setting MIG mode: In use by another client')
        if NO_RESET and os.path.exists(NO_RESET):
            for w, g in zip(want, state['gpus']):
                if w['mig_enabled'] != g['mig_enabled']:
                    g['mig_pending'] = w['mig_enabled']
            write(state)
            fail('error applying MIG configuration with hooks: error resetting all GPUs: exit status 255')
        for w, g in zip(want, state['gpus']):
            g['mig_enabled'], g['devices'] = w['mig_enabled'], {}
        write(state)
        if os.path.exists('/var/tmp/mig-apply-hang'):
            with open('/var/tmp/mig-apply-hanging', 'w', encoding='utf-8'):
                pass
            time.sleep(600)
    for w, g in zip(want, state['gpus']):
        g['devices'] = w['devices']
    write(state)
    with open('/var/tmp/mig-applies.log', 'a', encoding='utf-8') as log:
        log.write('%s\n' % options['config'])
    print('MIG configuration applied successfully')


def held():
    if DRM_DIR and os.path.isdir(DRM_DIR):
        return True
    if HELD_FILE:
        return os.path.exists(HELD_FILE)
    return subprocess.run(['systemctl', 'is-active', '--quiet', 'baremetal-test-gpu-holder'], check=False).returncode == 0


def write(state):
    with open(STATE + '.tmp', 'w', encoding='utf-8') as handle:
        json.dump(state, handle)
    os.rename(STATE + '.tmp', STATE)


main()
