# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The maintenance engine's cluster-wide lock: a coordination.k8s.io/v1 Lease whose holder is the run (run id, host,
start time).

``lease_decision`` and ``lease_object`` say whether the lock is taken, renewed, waited for or taken over once
expired, and what to write; ``lock_acquire`` and ``lock_release`` run them against a store (lock_store.py: the API,
or a file) with the resourceVersion read, so that a write on a stale version (409) loses; ``plan_staleness`` says
why a plan made before the lock was taken may be out of date. The lock follows kured's.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
from datetime import datetime, timedelta

LEASE_NAME = 'baremetal-gpu-maintenance'
LEASE_NAMESPACE = 'kube-system'
TIME_FORMAT = '%Y-%m-%dT%H:%M:%S.%fZ'
RFC3339 = re.compile(r'^([0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2})(\.[0-9]+)?([Zz]|[+-][0-9]{2}:?[0-9]{2})?$')


def _parse_time(text):
    """An RFC 3339 time as the API server or a client writes it (MicroTime '...T10:00:00.000000Z', '+00:00' from a
    client's isoformat(), no fraction), as a naive UTC datetime; None when it is none of these."""
    match = RFC3339.match(str(text or '').strip())
    if not match:
        return None
    base = datetime.strptime(match.group(1).replace('t', 'T').replace(' ', 'T'), '%Y-%m-%dT%H:%M:%S')
    fraction = match.group(2) or ''
    if fraction:
        base += timedelta(microseconds=int((fraction[1:] + '000000')[:6]))
    zone = match.group(3) or 'Z'
    if zone not in ('Z', 'z'):
        sign = -1 if zone[0] == '-' else 1
        digits = zone[1:].replace(':', '')
        base -= sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
    return base


def holder_identity(run_id, host, started):
    """The Lease's holderIdentity: the run id, the host running Ansible, the start time."""
    return '%s@%s@%s' % (run_id, host, started)


def lease_object(identity, now, duration, namespace=LEASE_NAMESPACE, name=LEASE_NAME, current=None):
    """The Lease to write: a new one, or ``current`` updated (its metadata.resourceVersion kept, so the API server
    refuses the update with 409 Conflict when someone else wrote the Lease since it was read)."""
    spec = {'holderIdentity': identity, 'leaseDurationSeconds': int(duration), 'renewTime': now}
    if current:
        old = current.get('spec') or {}
        same = old.get('holderIdentity') == identity
        spec['acquireTime'] = old.get('acquireTime') if same and old.get('acquireTime') else now
        spec['leaseTransitions'] = int(old.get('leaseTransitions') or 0) + (0 if same else 1)
        meta = {'name': name, 'namespace': namespace,
                'resourceVersion': (current.get('metadata') or {}).get('resourceVersion')}
    else:
        spec['acquireTime'] = now
        spec['leaseTransitions'] = 0
        meta = {'name': name, 'namespace': namespace}
    meta['labels'] = {'app.kubernetes.io/managed-by': 'baremetal.gpu'}
    return {'apiVersion': 'coordination.k8s.io/v1', 'kind': 'Lease', 'metadata': meta, 'spec': spec}


def lease_decision(current, identity, now):
    """What to do with the Lease read now: create (none), renew (ours), take (released), take_over (expired; with
    a warning), or wait (held by another live run). ``now``: UTC time text. Returns {action, holder, expires,
    warning, message}."""
    if not current:
        return {'action': 'create', 'holder': '', 'expires': '', 'warning': '', 'message': 'no lock: taking it'}
    spec = current.get('spec') or {}
    holder = spec.get('holderIdentity') or ''
    if holder == identity:
        return {'action': 'renew', 'holder': holder, 'expires': '', 'warning': '', 'message': 'renewing our lock'}
    if not holder:
        return {'action': 'take', 'holder': '', 'expires': '', 'warning': '', 'message': 'the lock was released'}
    renewed = _parse_time(spec.get('renewTime') or spec.get('acquireTime'))
    duration = int(spec.get('leaseDurationSeconds') or 0)
    now_t = _parse_time(now)
    expires = renewed + timedelta(seconds=duration) if renewed else None
    if expires is None or now_t is None or now_t >= expires:
        warning = ('the maintenance lock held by %s expired (renewed %s, lease %d s): taken over. That run stopped '
                   'without releasing it; check the nodes it worked on' % (holder, spec.get('renewTime') or '?', duration))
        return {'action': 'take_over', 'holder': holder, 'expires': expires.strftime(TIME_FORMAT) if expires else '',
                'warning': warning, 'message': warning}
    return {'action': 'wait', 'holder': holder, 'expires': expires.strftime(TIME_FORMAT), 'warning': '',
            'message': 'the maintenance lock is held by %s until %s' % (holder, expires.strftime(TIME_FORMAT))}


def lease_release(current, identity):
    """The Lease with our hold released (holderIdentity emptied), or None when it is not ours."""
    if not current or (current.get('spec') or {}).get('holderIdentity') != identity:
        return None
    out = {'apiVersion': 'coordination.k8s.io/v1', 'kind': 'Lease', 'metadata': dict(current.get('metadata') or {}),
           'spec': dict(current.get('spec') or {})}
    out['spec'].pop('holderIdentity', None)
    return out


class LockConflict(Exception):
    """A write of the lock refused because someone else wrote it since we read it (the API server's 409
    Conflict on a stale resourceVersion, or 409 AlreadyExists on a create): someone else took it."""


def lock_acquire(store, identity, duration, timeout, poll, now, clock, sleep, renew_only=False, seen=None):
    """Take (or renew) the lock held in ``store`` for ``identity``; wait up to ``timeout`` seconds while another
    live run holds it; take over an expired one with a warning. Every write carries the resourceVersion that was
    read: a 409 (``LockConflict``) means someone else took it in between, and the lock is read and decided again,
    never overwritten. ``store``: get() -> object or None, create(obj), replace(obj) (both raise LockConflict).
    ``now``/``clock``/``sleep``: the UTC time text, a monotonic clock, a sleep (injected for the tests).
    ``renew_only``: the run must hold the lock already (a renewal per batch); anything else is a loss.
    ``seen``: the lock's resourceVersion when the caller's plan began ('' when there was none), or None.
    Returns {acquired, action, holder, waited, conflicts, warning, message, lease, stale}: ``stale`` (a reason, or '')
    when another run may have changed the nodes since the plan was made: this one waited for it, or someone wrote the
    lock between ``seen`` and the take (a run that finished, or worked, while the plan was being made)."""
    if timeout < 0:
        raise ValueError('the lock timeout must be 0 or more seconds, got %r' % (timeout,))
    start = clock()
    conflicts = 0
    last = None
    while True:
        current = store.get()
        decision = lease_decision(current, identity, now())
        waited = round(clock() - start, 1)
        if renew_only and decision['action'] != 'renew':
            holder = decision['holder'] or 'nobody'
            return {'acquired': False, 'action': 'lost', 'holder': decision['holder'], 'waited': waited,
                    'conflicts': conflicts, 'warning': '', 'lease': current,
                    'message': 'this run (%s) no longer holds the maintenance lock: it is held by %s now. The rollout '
                               'stops; nothing more is changed' % (identity, holder)}
        if decision['action'] == 'wait':
            last = decision
            if waited >= timeout:
                return {'acquired': False, 'action': 'wait', 'holder': decision['holder'], 'waited': waited,
                        'conflicts': conflicts, 'warning': '', 'lease': current,
                        'message': '%s; waited %s s for it (timeout %s s). Let that run finish, or raise the lock '
                                   'timeout' % (decision['message'], waited, timeout)}
            sleep(max(0.01, min(poll, timeout - waited)))
            continue
        body = lease_object(identity, now(), duration,
                            namespace=((current or {}).get('metadata') or {}).get('namespace') or LEASE_NAMESPACE,
                            name=((current or {}).get('metadata') or {}).get('name') or LEASE_NAME,
                            current=current if decision['action'] != 'create' else None)
        try:
            written = store.create(body) if decision['action'] == 'create' else store.replace(body)
        except LockConflict:
            # Someone else wrote the lock since we read it: read it again and decide again.
            conflicts += 1
            continue
        message = decision['message']
        if last:
            message = '%s (after waiting %s s: %s)' % (message, waited, last['message'])
        return {'acquired': True, 'action': decision['action'], 'holder': identity, 'waited': waited,
                'conflicts': conflicts, 'warning': decision['warning'], 'message': message, 'lease': written,
                'stale': plan_staleness(seen, current, waited)}


def plan_staleness(seen, current, waited):
    """Why a plan made before the lock was taken may be out of date, or ''. ``seen``: the lock's resourceVersion
    when the plan began ('' for no lock, None when unknown); ``current``: the lock read just before this run wrote
    it; ``waited``: seconds this run waited for another one."""
    if waited and waited > 0:
        return 'this run waited %s s for another run, which may have changed the nodes' % waited
    version = ((current or {}).get('metadata') or {}).get('resourceVersion') or ''
    if seen is not None and str(seen) != str(version):
        holder = ((current or {}).get('spec') or {}).get('holderIdentity') or 'another run'
        return ('the lock was written while the plan was made (version %s, now %s, last by %s)'
                % (seen or 'none', version or 'none', holder))
    return ''


def lock_release(store, identity):
    """Release our hold of the lock (holderIdentity emptied, with the resourceVersion read). A lock held by someone
    else, or written by someone else in between (409), is left alone. Returns {released, holder, message}."""
    current = store.get()
    body = lease_release(current, identity)
    if body is None:
        holder = ((current or {}).get('spec') or {}).get('holderIdentity') or ''
        return {'released': False, 'holder': holder,
                'message': 'the maintenance lock is not held by this run (%s): left alone' % (holder or 'nobody holds it')}
    try:
        store.replace(body)
    except LockConflict:
        return {'released': False, 'holder': '', 'message': 'someone else wrote the maintenance lock in between: left alone'}
    return {'released': True, 'holder': '', 'message': 'released the maintenance lock (%s)' % identity}
