#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: maintenance_lock
short_description: Take, renew or release the cluster-wide maintenance lock (a Lease, or a lock file)
version_added: 0.2.0
description:
  - The lock that lets one run at a time take GPU nodes out of service, whoever started it (a second operator, a
    second AWX job slice), as kured's lock does for reboots.
  - With O(backend=lease), a C(coordination.k8s.io/v1) Lease (O(namespace)/O(name)) whose C(holderIdentity) is
    O(holder) (the run id, the host running Ansible and the start time). Without a cluster, O(backend=file) keeps the
    same object in a JSON file on the node (O(path)), locked with C(flock) while it is read and written.
  - O(state=present) takes the lock, or renews it when this run holds it already. While another run holds it and
    its lease has not expired, the module waits, polling every O(poll_interval) seconds for up to O(timeout)
    seconds, then fails naming the holder. An expired lease (C(renewTime) + C(leaseDurationSeconds) in the past)
    is taken over, with a warning.
  - Every write carries the C(metadata.resourceVersion) that was read, so the API server refuses it with
    409 Conflict when someone else wrote the Lease in between; the module then reads and decides again (someone
    else took it), and never overwrites another run's hold.
  - With O(renew_only=true) the run must hold the lock already; a lock lost to another run fails.
  - O(state=absent) releases the lock (empties C(holderIdentity)) when this run holds it; a lock held by
    someone else is left alone.
  - The decisions are C(lock_acquire) and C(lock_release) in C(plugins/module_utils/maintenance_lease.py).
author:
  - baremetal.gpu maintainers (@baremetal-gpu)
requirements:
  - kubernetes (the Python client) on the host that runs the module, for O(backend=lease).
  - The collection kubernetes.core, whose API client and connection options the module uses.
extends_documentation_fragment:
  - baremetal.gpu.attributes
  - baremetal.gpu.kubernetes
attributes:
  check_mode:
    details: Reads the lock and says what it would do; writes nothing and never waits.
options:
  state:
    description:
      - V(present) takes or renews the lock; V(absent) releases it.
    type: str
    choices: [present, absent]
    default: present
  holder:
    description:
      - This run's identity, written to C(holderIdentity), for example V(20261124T101500-12345@awx-1@2026-11-24T10:15:00Z).
    type: str
    required: true
  backend:
    description:
      - V(lease) for the Kubernetes Lease, V(file) for a lock file on the host that runs the module.
    type: str
    choices: [lease, file]
    default: lease
  name:
    description:
      - Name of the Lease (and of the object in the lock file).
    type: str
    default: baremetal-gpu-maintenance
  namespace:
    description:
      - Namespace of the Lease.
    type: str
    default: kube-system
  path:
    description:
      - The lock file, for O(backend=file).
    type: path
    default: /var/lib/baremetal-gpu/maintenance-lock.json
  lease_duration:
    description:
      - Seconds the lock stays valid after each renewal (C(leaseDurationSeconds)). The playbooks renew it before
        each batch, so it must exceed the longest batch; after it a stopped run's lock is taken over.
    type: int
    default: 3600
  timeout:
    description:
      - Seconds to wait while another run holds the lock; V(0) fails at once. Less than 0 is refused.
    type: int
    default: 0
  poll_interval:
    description:
      - Seconds between two reads of the lock while waiting.
    type: float
    default: 5
  renew_only:
    description:
      - The run must hold the lock already (a renewal); fails when it is held by another run.
    type: bool
    default: false
  request_timeout:
    description:
      - Seconds one API request may take.
    type: int
    default: 30
  seen_version:
    description:
      - The lock's C(resourceVersion) when the caller's plan began (an empty string when there was no lock then). When
        the lock taken is at another version (someone wrote it while the plan was made), or this run waited, the
        result's RV(stale) says why, so that the caller plans again under the lock.
    type: str
notes:
  - The lock is the run's own bookkeeping. The playbooks run this module with C(changed_when=false), so a rerun
    still reports nothing changed.
seealso:
  - name: Leases (Kubernetes documentation)
    description: The coordination.k8s.io/v1 Lease object and its use as a lock.
    link: https://kubernetes.io/docs/concepts/architecture/leases/
  - name: kured
    description: A cluster-wide lock so that one node reboots at a time.
    link: https://kured.dev/docs/
"""

EXAMPLES = r"""
- name: Take the maintenance lock, waiting up to 10 minutes for another run
  baremetal.gpu.maintenance_lock:
    holder: "{{ run_id }}@{{ controller }}@{{ started }}"
    kubeconfig: /etc/rancher/rke2/rke2.yaml
    timeout: 600

- name: Renew it before a batch
  baremetal.gpu.maintenance_lock:
    holder: "{{ run_id }}@{{ controller }}@{{ started }}"
    kubeconfig: /etc/rancher/rke2/rke2.yaml
    renew_only: true

- name: Without a cluster, a lock file on the node
  baremetal.gpu.maintenance_lock:
    holder: "{{ run_id }}@{{ controller }}@{{ started }}"
    backend: file
    timeout: 600

- name: Release it
  baremetal.gpu.maintenance_lock:
    holder: "{{ run_id }}@{{ controller }}@{{ started }}"
    kubeconfig: /etc/rancher/rke2/rke2.yaml
    state: absent
"""

RETURN = r"""
acquired:
  description: Whether this run holds the lock now (O(state=present)).
  returned: state is present
  type: bool
  sample: true
released:
  description: Whether this run's hold was released (O(state=absent)).
  returned: state is absent
  type: bool
  sample: true
action:
  description: What was done, V(create), V(renew), V(take) (a released lock), V(take_over) (an expired one),
    V(wait) (another run holds it) or V(lost) (O(renew_only) and another run holds it).
  returned: state is present
  type: str
  sample: create
holder:
  description: The holder of the lock now (this run's O(holder) when acquired, else the other run's).
  returned: always
  type: str
  sample: 20261124T101500-12345@awx-1@2026-11-24T10:15:00.000000Z
waited:
  description: Seconds spent waiting for another run.
  returned: state is present
  type: float
  sample: 12.5
conflicts:
  description: Writes the API server refused with 409 because someone else wrote the lock first.
  returned: state is present
  type: int
  sample: 0
api_retries:
  description:
    - Calls to the Kubernetes API that failed in a way worth trying again (no answer within O(request_timeout), the
      API unreachable, 429, 500, 502, 503, 504) and were made again, after 1, 3 and 6 seconds, up to four attempts
      each. A write made again is safe, as the API server refuses a repeated create or replace with 409, and the lock
      is then read and decided again, never overwritten.
  returned: with the Lease backend
  type: int
  sample: 0
message:
  description: What happened, in words.
  returned: always
  type: str
  sample: no lock, taking it
stale:
  description:
    - Why the caller's plan may be out of date now that the lock is taken (this run waited for another one, or the
      lock was written since O(seen_version)), or an empty string.
  returned: state is present and the lock was taken
  type: str
  sample: this run waited 12.5 s for another run, which may have changed the nodes
lease:
  description: The lock object as written (or as read when it was not taken).
  returned: state is present
  type: dict
  sample: {"kind": "Lease", "spec": {"holderIdentity": "r1@ctl@2026-11-24T10:15:00.000000Z", "leaseDurationSeconds": 3600}}
"""

import time
from datetime import datetime

from ansible.module_utils.basic import missing_required_lib
from ansible.module_utils.common.text.converters import to_text

from ansible_collections.baremetal.gpu.plugins.module_utils.lock_store import FileStore, LeaseStore
from ansible_collections.baremetal.gpu.plugins.module_utils.maintenance_lease import (
    LEASE_NAME,
    LEASE_NAMESPACE,
    TIME_FORMAT,
    LockConflict,
    lease_decision,
    lock_acquire,
    lock_release,
    plan_staleness,
)
from ansible_collections.baremetal.gpu.plugins.module_utils.node_reader import (
    KUBERNETES_IMPORT_ERROR,
    KubeModule,
    K8S_CONFIG,
    K8sConnectionError,
    guarded,
    kubeconfig_secrets,
)
from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.exceptions import CoreException


def argument_spec():
    spec = dict(
        state=dict(type='str', choices=['present', 'absent'], default='present'),
        holder=dict(type='str', required=True),
        backend=dict(type='str', choices=['lease', 'file'], default='lease'),
        name=dict(type='str', default=LEASE_NAME),
        namespace=dict(type='str', default=LEASE_NAMESPACE),
        path=dict(type='path', default='/var/lib/baremetal-gpu/maintenance-lock.json'),
        lease_duration=dict(type='int', default=3600),
        timeout=dict(type='int', default=0),
        poll_interval=dict(type='float', default=5),
        renew_only=dict(type='bool', default=False),
        request_timeout=dict(type='int', default=30),
        seen_version=dict(type='str'),
    )
    spec.update(AUTH_ARG_SPEC)
    # As in gpu_node_capacity: a kubeconfig path is no secret; a kubeconfig dictionary's secrets are hidden by main().
    spec['kubeconfig'] = dict(AUTH_ARG_SPEC['kubeconfig'], no_log=False)
    spec['client_key'] = dict(AUTH_ARG_SPEC['client_key'], no_log=False)
    return spec


def utc_now():
    return datetime.utcnow().strftime(TIME_FORMAT)


def lease_store(params):
    auth = dict((name, params[name]) for name in AUTH_ARG_SPEC)
    where = params['host'] or (params['kubeconfig'] if isinstance(params['kubeconfig'], str) else 'the kubeconfig')
    try:
        client = guarded('the API discovery', where, params['request_timeout'], lambda: get_api_client(**auth))
    except K8sConnectionError:
        raise
    except (CoreException, OSError, ValueError, TypeError) as exc:
        raise K8sConnectionError('cannot load Kubernetes configuration (%s): %s' % (where, to_text(exc)), K8S_CONFIG)
    return LeaseStore(client.client.client, client.configuration.host or where, params['namespace'], params['name'],
                      params['request_timeout'])


def run(module, store):
    params = module.params
    if module.check_mode:
        current = store.get()
        if params['state'] == 'absent':
            holder = ((current or {}).get('spec') or {}).get('holderIdentity') or ''
            return dict(changed=holder == params['holder'], released=False, holder=holder,
                        message='check mode: would release the lock' if holder == params['holder'] else
                        'check mode: the lock is not held by this run')
        decision = lease_decision(current, params['holder'], utc_now())
        return dict(changed=decision['action'] != 'wait', acquired=False, action=decision['action'],
                    holder=decision['holder'], waited=0.0, conflicts=0, lease=current,
                    message='check mode: %s' % decision['message'])
    if params['state'] == 'absent':
        result = lock_release(store, params['holder'])
        return dict(result, changed=result['released'])
    result = lock_acquire(store, params['holder'], params['lease_duration'], params['timeout'], params['poll_interval'],
                          utc_now, time.monotonic, time.sleep, renew_only=params['renew_only'],
                          seen=params['seen_version'])
    if result['warning']:
        module.warn(result['warning'])
    out = dict(result, changed=result['acquired'])
    out.pop('warning', None)
    if not result['acquired']:
        module.fail_json(msg=result['message'], **out)
    return out


def main():
    module = KubeModule(argument_spec=argument_spec(), supports_check_mode=True)
    params = module.params
    module.no_log_values.update(kubeconfig_secrets(params['kubeconfig']))
    for option in ('timeout', 'lease_duration', 'request_timeout'):
        minimum = 0 if option == 'timeout' else 1
        if params[option] < minimum:
            module.fail_json(msg='%s must be %d or more seconds, got %s' % (option, minimum, params[option]))
    if params['poll_interval'] <= 0:
        module.fail_json(msg='poll_interval must be more than 0 seconds, got %s' % params['poll_interval'])
    try:
        if params['backend'] == 'file':
            with FileStore(params['path'], params['name'], params['namespace']) as store:
                # The file lock is held while we wait: release it between reads, so the holder can release.
                direct = params['timeout'] == 0 or module.check_mode or params['state'] == 'absent'
                result = run(module, store) if direct else None
            if result is None:
                result = wait_for_file(module, params)
        else:
            if KUBERNETES_IMPORT_ERROR:
                module.fail_json(msg=missing_required_lib('kubernetes'), exception=KUBERNETES_IMPORT_ERROR)
            store = lease_store(params)
            result = run(module, store)
            result['api_retries'] = store.retried
            if store.retried:
                module.warn('the Kubernetes API failed %d time(s) in a way worth trying again (no answer, 429 or 5xx), '
                            'and was asked again' % store.retried)
    except K8sConnectionError as exc:
        module.fail_json(msg=exc.message, error=exc.kind, acquired=False, released=False)
    except LockConflict as exc:
        module.fail_json(msg='someone else wrote the maintenance lock at the same time: %s' % exc, acquired=False,
                         released=False)
    except (IOError, OSError) as exc:
        module.fail_json(msg='cannot use the lock file %s: %s' % (params['path'], to_text(exc)), acquired=False,
                         released=False)
    module.exit_json(**result)


def wait_for_file(module, params):
    """The file backend with a wait: each attempt holds the flock for one read-decide-write only."""
    start = time.monotonic()
    while True:
        remaining = max(0, params['timeout'] - int(time.monotonic() - start))
        with FileStore(params['path'], params['name'], params['namespace']) as store:
            current = store.get()
            decision = lease_decision(current, params['holder'], utc_now())
            waited = round(time.monotonic() - start, 1)
            if decision['action'] == 'wait' and remaining == 0:
                module.fail_json(msg='%s; waited %s s for it (timeout %s s). Let that run finish, or raise the lock '
                                     'timeout' % (decision['message'], waited, params['timeout']),
                                 acquired=False, action='wait', holder=decision['holder'], waited=waited)
            if decision['action'] != 'wait':
                module.params['timeout'] = 0
                result = run(module, store)
                result['waited'] = waited
                if result.get('acquired') and waited > 0:
                    result['stale'] = plan_staleness(params['seen_version'], current, waited)
                return result
        time.sleep(min(params['poll_interval'], max(remaining, 0.01)))


if __name__ == '__main__':
    main()
