"""The API double answers writes as the API server does: Lease create/get/update, 409 AlreadyExists on a
second create, 409 Conflict on an update with a stale or missing resourceVersion, resourceVersion bumped on every
write. The Lease bodies are written by the collection's own planner (maintenance_lease.lease_object)."""
import json
import os
import sys
import urllib.error
import urllib.request

import pytest

from conftest import ROOT, pod
from k8s_api_double import ApiDouble

sys.path.insert(0, os.path.join(ROOT, '.ansible', 'collections'))
from ansible_collections.baremetal.gpu.plugins.module_utils import maintenance_lease  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.baremetal.gpu.plugins.module_utils import maintenance_nodes  # noqa: E402  pylint: disable=wrong-import-position

TOKEN = 'double-token'
LEASES = '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases'


@pytest.fixture
def api():
    double = ApiDouble(token=TOKEN).start()
    yield double
    double.stop()


def call(api, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(api.url + path, data=data, method=method,
                                 headers={'Authorization': 'Bearer ' + TOKEN, 'Content-Type': 'application/json'})
    try:
        with urllib.request.urlopen(req, timeout=10) as res:
            return res.status, json.loads(res.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_lease_create_get_update_and_conflicts(api):
    first = maintenance_lease.lease_object('run-1@ctl@t', '2026-11-24T10:00:00.000000Z', 60)
    code, created = call(api, 'POST', LEASES, first)
    assert code == 201 and created['metadata']['resourceVersion']
    code, again = call(api, 'POST', LEASES, maintenance_lease.lease_object('run-2@ctl2@t', '2026-11-24T10:00:01.000000Z', 60))
    assert code == 409 and again['reason'] == 'AlreadyExists'
    code, read = call(api, 'GET', LEASES + '/' + maintenance_lease.LEASE_NAME)
    assert code == 200 and read['spec']['holderIdentity'] == 'run-1@ctl@t'
    renew = maintenance_lease.lease_object('run-1@ctl@t', '2026-11-24T10:00:30.000000Z', 60, current=read)
    code, renewed = call(api, 'PUT', LEASES + '/' + maintenance_lease.LEASE_NAME, renew)
    assert code == 200 and int(renewed['metadata']['resourceVersion']) > int(read['metadata']['resourceVersion'])
    # A second run that read the Lease before the renewal writes with a stale resourceVersion: 409 Conflict.
    stale = maintenance_lease.lease_object('run-2@ctl2@t', '2026-11-24T10:02:00.000000Z', 60, current=read)
    code, refused = call(api, 'PUT', LEASES + '/' + maintenance_lease.LEASE_NAME, stale)
    assert code == 409 and refused['reason'] == 'Conflict' and 'the object has been modified' in refused['message']
    # Without a resourceVersion an update is refused too (never a blind overwrite).
    blind = maintenance_lease.lease_object('run-2@ctl2@t', '2026-11-24T10:02:00.000000Z', 60)
    assert call(api, 'PUT', LEASES + '/' + maintenance_lease.LEASE_NAME, blind)[0] == 409
    assert api.conflicts == 2
    code, now = call(api, 'GET', LEASES + '/' + maintenance_lease.LEASE_NAME)
    assert now['spec']['holderIdentity'] == 'run-1@ctl@t'


def test_node_patch_with_a_stale_resource_version_is_a_conflict(api):
    api.add_node({'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': 'n1', 'labels': {}},
                  'spec': {}, 'status': {'conditions': [{'type': 'Ready', 'status': 'True'}]}})
    code, node = call(api, 'GET', '/api/v1/nodes/n1')
    rv = node['metadata']['resourceVersion']
    assert call(api, 'PATCH', '/api/v1/nodes/n1', {'spec': {'unschedulable': True}})[0] == 200
    code, body = call(api, 'PATCH', '/api/v1/nodes/n1', {'metadata': {'resourceVersion': rv}, 'spec': {'unschedulable': False}})
    assert code == 409 and body['reason'] == 'Conflict'
    assert api.nodes['n1']['spec']['unschedulable'] is True
    # The budget counts the cordoned Node from the Node objects.
    assert maintenance_nodes.unavailable(list(api.nodes.values())) == [{'name': 'n1', 'why': 'unschedulable'}]


def test_a_server_side_dry_run_changes_nothing(api):
    """?dryRun=All (kubernetes.core's check mode) is answered as the write would be, and nothing is stored or removed,
    as the API server does: a Node patch, a Pod deletion, a Pod eviction."""
    api.add_node({'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': 'n1', 'labels': {}}, 'spec': {}, 'status': {}})
    api.add_pod(pod('train-0', 'ml', {'nvidia.com/gpu': '1'}, node='n1'))
    code, patched = call(api, 'PATCH', '/api/v1/nodes/n1?dryRun=All', {'spec': {'unschedulable': True}})
    assert code == 200 and patched['spec']['unschedulable'] is True
    assert 'unschedulable' not in api.nodes['n1']['spec']
    assert call(api, 'DELETE', '/api/v1/namespaces/ml/pods/train-0?dryRun=All')[0] == 200
    assert call(api, 'POST', '/api/v1/namespaces/ml/pods/train-0/eviction?dryRun=All', {})[0] == 201
    assert ('ml', 'train-0') in api.pods
    assert call(api, 'DELETE', '/api/v1/namespaces/ml/pods/train-0')[0] == 200
    assert ('ml', 'train-0') not in api.pods
