# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Lease store's retries: one blip of the API server (no answer, 429, 5xx) does not end a rollout, a refusal
(401, 403, 409) is never retried, and a write made again after its answer was lost meets the 409 that the lock's
decisions read as "read again" (maintenance.lock_acquire)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from ansible_collections.baremetal.gpu.plugins.module_utils import lock_store
from ansible_collections.baremetal.gpu.plugins.module_utils.maintenance_lease import LockConflict, lock_acquire
from ansible_collections.baremetal.gpu.plugins.module_utils.node_reader import ApiException, K8sConnectionError


class Response(object):
    def __init__(self, obj):
        self.data = json.dumps(obj).encode('utf-8')


class FlakyApi(object):
    """CoordinationV1Api's three Lease calls, over one stored Lease, failing as told: ``failures`` is a list of
    (call name, HTTP status, reached) consumed in order; ``reached`` says whether the write took effect on the
    server before the failure was answered (a lost answer)."""

    def __init__(self, failures=()):
        self.failures = list(failures)
        self.lease = None
        self.version = 0
        self.calls = []

    def _fail(self, name, apply=None):
        self.calls.append(name)
        if self.failures and self.failures[0][0] == name:
            _name, status, reached = self.failures.pop(0)
            if reached and apply:
                apply()
            raise ApiException(status=status, reason='stand-in %s' % status)
        if apply:
            apply()

    def read_namespaced_lease(self, name, namespace, **_kw):
        self._fail('read')
        if self.lease is None:
            raise ApiException(status=404, reason='Not Found')
        return Response(self.lease)

    def _store(self, obj):
        self.version += 1
        self.lease = dict(obj, metadata=dict(obj.get('metadata') or {}, resourceVersion=str(self.version)))

    def create_namespaced_lease(self, namespace, obj, **_kw):
        def apply():
            if self.lease is not None:
                raise ApiException(status=409, reason='AlreadyExists')
            self._store(obj)
        self._fail('create', apply)
        return Response(self.lease)

    def replace_namespaced_lease(self, name, namespace, obj, **_kw):
        def apply():
            if (obj.get('metadata') or {}).get('resourceVersion') != self.lease['metadata']['resourceVersion']:
                raise ApiException(status=409, reason='Conflict')
            self._store(obj)
        self._fail('replace', apply)
        return Response(self.lease)


def store(api):
    """A LeaseStore over ``api`` (instead of the client's CoordinationV1Api); its sleeps are recorded, not slept."""
    sleeps = []
    lease = lock_store.LeaseStore(None, 'https://api', 'kube-system', 'l', 5, sleep=sleeps.append)
    lease.api = api
    return lease, sleeps


def test_a_read_is_tried_again_after_a_503_and_a_429():
    api = FlakyApi([('read', 503, False), ('read', 429, False)])
    lease, sleeps = store(api)
    assert lease.get() is None
    assert api.calls == ['read', 'read', 'read'] and sleeps == [1, 3] and lease.retried == 2


def test_a_refusal_is_never_tried_again():
    for status in (401, 403):
        api = FlakyApi([('read', status, False)])
        lease, sleeps = store(api)
        with pytest.raises(K8sConnectionError):
            lease.get()
        assert api.calls == ['read'] and sleeps == []


def test_four_failures_give_up_saying_how_often_it_was_tried():
    api = FlakyApi([('read', 500, False)] * 4)
    lease, sleeps = store(api)
    with pytest.raises(K8sConnectionError) as info:
        lease.get()
    assert sleeps == [1, 3, 6] and '(tried 4 times)' in info.value.message


def test_a_create_whose_answer_was_lost_is_refused_as_a_conflict_then_read_as_ours():
    # The create reached the server, its answer was a 503: made again, it gets 409 AlreadyExists; the lock reads
    # the Lease again and finds it is this run's.
    api = FlakyApi([('create', 503, True)])
    lease, sleeps = store(api)
    times = iter(['2026-11-28T10:00:00.000000Z'] * 10)
    result = lock_acquire(lease, 'run-a', 600, 0, 1, lambda: next(times), lambda: 0.0, lambda _s: None)
    assert result['acquired'] and result['holder'] == 'run-a', result
    assert api.lease['spec']['holderIdentity'] == 'run-a'
    # read, the create whose answer was lost, the same create refused (409), read again: its own, renewed.
    assert sleeps == [1] and api.calls == ['read', 'create', 'create', 'read', 'replace'] and api.version == 2


def test_a_replace_conflict_is_not_retried_by_the_store():
    api = FlakyApi()
    api._store({'metadata': {'name': 'l'}, 'spec': {'holderIdentity': 'x'}})
    lease, sleeps = store(api)
    with pytest.raises(LockConflict):
        lease.replace({'metadata': {'name': 'l', 'resourceVersion': '0'}, 'spec': {}})
    assert sleeps == [] and api.calls == ['replace']
