# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""baremetal.gpu.gpu_node_capacity end to end against a replaying HTTP server on 127.0.0.1.

No Kubernetes API can run here. The server (k8s_replay.py) answers with the recorded real
``kubectl get nodes -o json`` output in tests/fixtures/k8s-nodes (see SOURCE.md there): node
``nori`` (RKE2 v1.31.6, vGPU NVIDIA-A16-4Q, nvidia.com/gpu capacity and allocatable 1, GFD labels,
Ready) and three AKS nodes without GPU resources. The kubernetes client, kubernetes.core's client
(with its API discovery), kubeconfig loading, bearer-token auth and HTTP code run for real; only
exit_json/fail_json are patched (and not even those where the JSON the module prints is checked).
These tests use only the module's interface, so they also run against older versions of it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import os
import socket
import tempfile
import threading
import time

import pytest

from ansible.module_utils import basic

from ansible_collections.baremetal.gpu.tests.unit.plugins.modules.utils import (
    AnsibleExitJson,
    AnsibleFailJson,
    exit_json,
    fail_json,
    set_module_args,
)

kubernetes = pytest.importorskip('kubernetes')

from ansible_collections.baremetal.gpu.plugins.modules import gpu_node_capacity  # noqa: E402
from ansible_collections.baremetal.gpu.tests.unit.plugins.modules.k8s_replay import (  # noqa: E402
    ReplayServer,
    write_kubeconfig,
)

# the real ones, which apply no_log to what the module prints
REAL_EXIT_JSON, REAL_FAIL_JSON = basic.AnsibleModule.exit_json, basic.AnsibleModule.fail_json
FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'k8s-nodes')
TOKEN = 'test-token'


def recorded(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return json.load(handle)


RKE2 = recorded('edgexr__rke2-vgpu-A16-4Q-nodes.json')
AKS = recorded('edgexr__aks-no-gpu-nodes.json')
NORI = RKE2['items'][0]


def _free_port():
    sock = socket.socket()
    sock.bind(('127.0.0.1', 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def _warm_up():
    """Import what the kubernetes client imports lazily (about 250 modules, 1.5 s) once, here.

    ansible-test runs every test in a forked child; without this each child pays for the imports.
    One run of the module against a port where nothing listens does it.
    """
    config = {'apiVersion': 'v1', 'kind': 'Config', 'current-context': 'w',
              'clusters': [{'name': 'w', 'cluster': {'server': 'http://127.0.0.1:%d' % _free_port()}}],
              'users': [{'name': 'w', 'user': {'token': 'w'}}],
              'contexts': [{'name': 'w', 'context': {'cluster': 'w', 'user': 'w'}}]}
    saved = basic.AnsibleModule.exit_json, basic.AnsibleModule.fail_json
    basic.AnsibleModule.exit_json, basic.AnsibleModule.fail_json = exit_json, fail_json
    try:
        with set_module_args({'name': 'warm-up', 'kubeconfig': config, 'timeout': 0}):
            gpu_node_capacity.main()
    except (AnsibleExitJson, AnsibleFailJson):
        pass
    finally:
        basic.AnsibleModule.exit_json, basic.AnsibleModule.fail_json = saved


_warm_up()


def nori_without_plugin():
    """nori as it is before the device plugin registered: no nvidia.com/gpu at all (derived from the recording)."""
    node = copy.deepcopy(NORI)
    del node['status']['capacity']['nvidia.com/gpu']
    del node['status']['allocatable']['nvidia.com/gpu']
    return node


def nori_registering():
    """nori while the plugin registers: capacity 1, allocatable 0 (derived from the recording)."""
    node = copy.deepcopy(NORI)
    node['status']['allocatable']['nvidia.com/gpu'] = '0'
    return node


@pytest.fixture
def server():
    srv = ReplayServer(token=TOKEN).start()
    yield srv
    srv.stop()


def fresh_process_state(monkeypatch, tmp_path):
    """What a new module process starts with; these tests run many modules in one process.

    kubernetes.core's client caches the API discovery in the temporary directory, and the kubernetes
    client keeps the last kubeconfig loaded as its default configuration, with a hook that puts that
    kubeconfig's server back at the next request (which would send a later host/api_key run there).
    """
    monkeypatch.setattr(tempfile, 'tempdir', str(tmp_path))
    kubernetes.client.Configuration.set_default(None)


@pytest.fixture(autouse=True)
def patched(monkeypatch, tmp_path):
    fresh_process_state(monkeypatch, tmp_path)
    for var in ('K8S_AUTH_KUBECONFIG', 'K8S_AUTH_CONTEXT', 'K8S_AUTH_HOST', 'K8S_AUTH_API_KEY',
                'K8S_AUTH_VERIFY_SSL', 'K8S_AUTH_SSL_CA_CERT', 'K8S_AUTH_CERT_FILE', 'K8S_AUTH_KEY_FILE',
                'K8S_AUTH_PROXY', 'KUBERNETES_SERVICE_HOST', 'KUBERNETES_SERVICE_PORT'):
        monkeypatch.delenv(var, raising=False)


def run(args, expect=AnsibleExitJson):
    args = dict(args)
    args.setdefault('poll_interval', 0.05)
    with set_module_args(args):
        with pytest.raises(expect) as err:
            gpu_node_capacity.main()
    return err.value.result


def kubeconfig(tmp_path, server, token=TOKEN):
    return write_kubeconfig(tmp_path / 'kubeconfig', server.url, token)


def test_recorded_node_meets_expectations(server, tmp_path):
    server.add_nodes(RKE2)
    result = run({'name': 'nori', 'kubeconfig': kubeconfig(tmp_path, server), 'expected_per_node': 1,
                  'comparison': '==', 'timeout': 5,
                  'gfd_labels': {'present': True, 'count': 1, 'product': 'A16'}})
    assert result['changed'] is False
    assert result['attempts'] == 1
    assert result['expected'] == 1
    assert result['resource'] == 'nvidia.com/gpu'
    assert result['nodes'] == [{
        'name': 'nori', 'resource': 'nvidia.com/gpu', 'expected': 1, 'comparison': '==',
        'capacity': 1, 'allocatable': 1,
        'labels': {'nvidia.com/gpu.present': 'true', 'nvidia.com/gpu.count': '1',
                   'nvidia.com/gpu.product': 'NVIDIA-A16-4Q'},
        'ready': {'status': 'True', 'reason': 'KubeletReady', 'message': 'kubelet is posting ready status',
                  'last_transition_time': '2025-03-19T20:41:10Z'},
        'problems': [],
    }]
    assert server.node_requests() == ['/api/v1/nodes/nori']
    method, path, headers = [r for r in server.requests if r[1] == '/api/v1/nodes/nori'][0]
    assert headers['authorization'] == 'Bearer %s' % TOKEN
    assert headers['user-agent'].startswith('OpenAPI-Generator/')


def test_host_and_api_key_without_kubeconfig(server):
    server.add_nodes(RKE2)
    result = run({'name': ['nori'], 'host': server.url + '/', 'api_key': TOKEN, 'timeout': 0})
    assert result['nodes'][0]['allocatable'] == 1
    assert all(headers['authorization'] == 'Bearer %s' % TOKEN for method, path, headers in server.requests)


def test_environment_fallback_and_context(server, tmp_path, monkeypatch):
    server.add_nodes(RKE2)
    monkeypatch.setenv('K8S_AUTH_KUBECONFIG', kubeconfig(tmp_path, server))
    monkeypatch.setenv('K8S_AUTH_CONTEXT', 'other')
    result = run({'name': 'nori', 'timeout': 0})
    assert result['nodes'][0]['capacity'] == 1


def test_node_gains_capacity_during_the_wait(server, tmp_path):
    server.set_timeline('nori', [nori_without_plugin(), nori_without_plugin(), nori_registering(), NORI])
    result = run({'name': 'nori', 'kubeconfig': kubeconfig(tmp_path, server), 'timeout': 30})
    assert result['attempts'] == 4
    assert server.served['nori'] == 4
    assert result['nodes'][0]['allocatable'] == 1
    assert result['nodes'][0]['problems'] == []
    assert 0 < result['elapsed'] < 30


def test_capacity_not_reached_in_time(server, tmp_path):
    server.set_timeline('nori', [nori_without_plugin(), nori_registering()])
    # (a timeout long enough for a second read on a loaded machine: connecting reads the discovery first; 4 s was
    # not, at load average 15-20 on 2 cores)
    result = run({'name': 'nori', 'kubeconfig': kubeconfig(tmp_path, server), 'timeout': 10,
                  'expected_per_node': 1}, AnsibleFailJson)
    # The message describes the last Node read. How many reads fit in 10 s depends on the machine's load, so the
    # expectation follows what the server really served (1: the plugin never registered; 2+: registering).
    if server.served['nori'] >= 2:
        assert result['msg'] == 'node nori reports nvidia.com/gpu allocatable 0, expected at least 1 after 10 s'
    else:
        assert result['msg'] == ('node nori reports nvidia.com/gpu capacity 0 (not advertised; device plugin not '
                                 'registered?), expected at least 1 after 10 s; node nori reports nvidia.com/gpu '
                                 'allocatable 0 (not advertised; device plugin not registered?), expected at least 1 '
                                 'after 10 s')
    assert result['error'] == 'not_met'
    assert result['attempts'] >= 2
    assert result['nodes'][0]['capacity'] == 1 and result['nodes'][0]['allocatable'] == 0


def test_time_slicing_replicas_exact(server, tmp_path):
    server.add_nodes(RKE2)
    result = run({'name': 'nori', 'kubeconfig': kubeconfig(tmp_path, server), 'timeout': 0,
                  'gpu_count': 1, 'replicas': 4, 'comparison': '=='}, AnsibleFailJson)
    assert result['expected'] == 4
    assert result['msg'] == ('node nori reports nvidia.com/gpu capacity 1, expected 4 after 0 s; '
                             'node nori reports nvidia.com/gpu allocatable 1, expected 4 after 0 s')


def test_shared_resource_not_advertised(server, tmp_path):
    server.add_nodes(RKE2)
    result = run({'name': 'nori', 'kubeconfig': kubeconfig(tmp_path, server), 'timeout': 0,
                  'resource': 'nvidia.com/gpu.shared'}, AnsibleFailJson)
    assert result['msg'].startswith('node nori reports nvidia.com/gpu.shared capacity 0 (not advertised; '
                                    'device plugin not registered?), expected at least 1 after 0 s; ')


def test_gfd_label_mismatch(server, tmp_path):
    server.add_nodes(RKE2)
    result = run({'name': 'nori', 'kubeconfig': kubeconfig(tmp_path, server), 'timeout': 0,
                  'gfd_labels': {'count': 8, 'product': 'H100'}}, AnsibleFailJson)
    assert result['msg'] == ("node nori label nvidia.com/gpu.count: expected 8, found '1'; "
                             "node nori label nvidia.com/gpu.product: expected to match 'H100', "
                             "found 'NVIDIA-A16-4Q'")


def test_label_selector(server, tmp_path):
    server.add_nodes(RKE2)
    server.add_nodes(AKS)
    result = run({'label_selector': 'nvidia.com/gpu.present=true', 'kubeconfig': kubeconfig(tmp_path, server),
                  'timeout': 0})
    assert [n['name'] for n in result['nodes']] == ['nori']
    assert server.node_requests() == ['/api/v1/nodes?labelSelector=nvidia.com/gpu.present%3Dtrue']


def test_label_selector_matching_nothing(server, tmp_path):
    server.add_nodes(AKS)
    result = run({'label_selector': 'nvidia.com/gpu.present=true', 'kubeconfig': kubeconfig(tmp_path, server),
                  'timeout': 1}, AnsibleFailJson)
    assert result['msg'] == "no node matches label selector 'nvidia.com/gpu.present=true' after 1 s"
    assert result['error'] == 'no_nodes'


def test_recorded_nodes_without_gpu(server, tmp_path):
    server.add_nodes(AKS)
    result = run({'label_selector': 'kubernetes.azure.com/role=agent', 'kubeconfig': kubeconfig(tmp_path, server),
                  'timeout': 0, 'gfd_labels': {'present': True}}, AnsibleFailJson)
    assert len(result['nodes']) == 3
    assert result['nodes'][0]['problems'] == [
        'node aks-agentpool-30520393-vmss000000 reports nvidia.com/gpu capacity 0 (not advertised; device '
        'plugin not registered?), expected at least 1 after 0 s',
        'node aks-agentpool-30520393-vmss000000 reports nvidia.com/gpu allocatable 0 (not advertised; device '
        'plugin not registered?), expected at least 1 after 0 s',
        'node aks-agentpool-30520393-vmss000000 label nvidia.com/gpu.present: expected true, found no such label',
    ]


def test_node_not_found(server, tmp_path):
    server.add_nodes(RKE2)
    result = run({'name': ['nori', 'gpu-01'], 'kubeconfig': kubeconfig(tmp_path, server), 'timeout': 30},
                 AnsibleFailJson)
    assert result['msg'] == ('node gpu-01 not found on the Kubernetes API at %s (nodes "gpu-01" not found)'
                             % server.url)
    assert result['error'] == 'not_found'
    assert result['attempts'] == 1


def test_unauthorized(server, tmp_path):
    server.add_nodes(RKE2)
    result = run({'name': 'nori', 'kubeconfig': kubeconfig(tmp_path, server, token='wrong'), 'timeout': 30},
                 AnsibleFailJson)
    # kubernetes.core's client reads the API discovery first; the credentials are refused there
    assert result['msg'].startswith('Kubernetes API at the server of kubeconfig %s answered 401 Unauthorized '
                                    'reading the API discovery (Unauthorized): the credentials'
                                    % (tmp_path / 'kubeconfig'))
    assert result['error'] == 'unauthorized'
    assert result['attempts'] == 1
    assert server.requests[0][2]['authorization'] == 'Bearer wrong'


def test_forbidden(server, tmp_path):
    server.add_nodes(RKE2)
    server.forbidden = True
    result = run({'name': 'nori', 'kubeconfig': kubeconfig(tmp_path, server), 'timeout': 30}, AnsibleFailJson)
    assert result['msg'] == ('Kubernetes API at %s answered 403 Forbidden reading node nori (nodes "nori" is '
                             'forbidden: User "system:serviceaccount:default:reader" cannot get resource "nodes" '
                             'in API group "" at the cluster scope): the user needs get/list on nodes' % server.url)
    assert result['error'] == 'forbidden'


def test_connection_refused_until_the_timeout(tmp_path):
    url = 'http://127.0.0.1:%d' % _free_port()
    result = run({'name': 'nori', 'kubeconfig': write_kubeconfig(tmp_path / 'kc', url, TOKEN), 'timeout': 3,
                  'poll_interval': 0.2}, AnsibleFailJson)
    assert result['msg'].startswith('Kubernetes API at the server of kubeconfig %s unreachable while reading the '
                                    'API discovery: ' % (tmp_path / 'kc'))
    assert 'Connection refused' in result['msg'] and "port=%s" % url.rsplit(':', 1)[1] in result['msg']
    assert result['msg'].endswith('(still failing after %d attempt(s) in %s s; timeout 3 s)'
                                  % (result['attempts'], result['elapsed']))
    assert result['attempts'] >= 2
    assert result['error'] == 'unreachable'


def test_missing_kubeconfig(tmp_path):
    result = run({'name': 'nori', 'kubeconfig': str(tmp_path / 'absent'), 'timeout': 0}, AnsibleFailJson)
    assert result['msg'].startswith('cannot load Kubernetes configuration (kubeconfig %s' % (tmp_path / 'absent'))
    assert result['error'] == 'config'


def test_conflicting_expectations(tmp_path):
    result = run({'name': 'nori', 'expected_per_node': 8, 'gpu_count': 8}, AnsibleFailJson)
    assert 'mutually exclusive' in result['msg']


def test_replicas_need_gpu_count(tmp_path):
    result = run({'name': 'nori', 'replicas': 4}, AnsibleFailJson)
    assert 'replicas' in result['msg'] and 'gpu_count' in result['msg']


def test_name_or_selector_required():
    result = run({}, AnsibleFailJson)
    assert 'one of the following is required: name, label_selector' in result['msg']


def test_invalid_product_regex():
    result = run({'name': 'nori', 'gfd_labels': {'product': 'H100('}}, AnsibleFailJson)
    assert result['msg'].startswith("gfd_labels.product 'H100(' is not a valid regular expression")


# --- retries within the timeout, request_timeout, kubeconfig in messages ---

@pytest.mark.parametrize('codes', [[503, 503], [429], [500, 502, 504]])
def test_retries_5xx_then_reads_the_recorded_node(server, tmp_path, codes):
    server.add_nodes(RKE2)
    server.failures = list(codes)
    result = run({'name': 'nori', 'kubeconfig': kubeconfig(tmp_path, server), 'expected_per_node': 1,
                  'comparison': '==', 'timeout': 30})
    assert result['attempts'] == len(codes) + 1
    assert server.node_requests() == ['/api/v1/nodes/nori'] * (len(codes) + 1)
    assert result['nodes'][0]['allocatable'] == 1 and result['nodes'][0]['problems'] == []


def test_503_until_the_timeout(server, tmp_path):
    server.add_nodes(RKE2)
    server.failures = [503] * 1000
    # 10 s: at least two attempts must fit even when building the client takes seconds (a loaded machine).
    result = run({'name': 'nori', 'kubeconfig': kubeconfig(tmp_path, server), 'timeout': 10,
                  'poll_interval': 0.2}, AnsibleFailJson)
    assert result['msg'].startswith('Kubernetes API at %s answered 503 Service Unavailable reading node nori: '
                                    'the server is currently unable to handle the request (still failing after '
                                    % server.url)
    assert result['error'] == 'api_error'
    assert result['attempts'] >= 2


def test_api_server_that_comes_up_during_the_wait(tmp_path):
    port = _free_port()
    late = {}

    def start():
        late['server'] = ReplayServer(token=TOKEN, port=port).start()
        late['server'].add_nodes(RKE2)

    timer = threading.Timer(1.0, start)
    timer.start()
    try:
        config = write_kubeconfig(tmp_path / 'kc', 'http://127.0.0.1:%d' % port, TOKEN)
        result = run({'name': 'nori', 'kubeconfig': config, 'timeout': 20, 'poll_interval': 0.2})
    finally:
        timer.join()
        late['server'].stop()
    assert result['attempts'] >= 2
    assert 1.0 <= result['elapsed'] < 20
    assert result['nodes'][0]['capacity'] == 1


def test_api_that_never_answers_is_bounded_by_request_timeout(server, tmp_path):
    server.add_nodes(RKE2)
    server.delay = 4
    start = time.monotonic()
    result = run({'name': 'nori', 'kubeconfig': kubeconfig(tmp_path, server), 'timeout': 1,
                  'request_timeout': 1, 'poll_interval': 0.2}, AnsibleFailJson)
    took = time.monotonic() - start
    assert result['msg'].startswith('Kubernetes API at the server of kubeconfig %s gave no answer within '
                                    'request_timeout (1 s) while reading the API discovery'
                                    % (tmp_path / 'kubeconfig'))
    assert result['error'] == 'unreachable'
    # the wait ends at timeout; a request in flight then may take up to request_timeout more
    assert took < 1 + 1 + 3, took  # (3 s of slack for a loaded machine; without the limit the discovery alone waits 3 x 4 s)


def test_request_timeout_zero_is_refused(server, tmp_path):
    server.add_nodes(RKE2)
    result = run({'name': 'nori', 'kubeconfig': kubeconfig(tmp_path, server), 'request_timeout': 0},
                 AnsibleFailJson)
    assert result['msg'] == 'request_timeout must be at least 1 second, got 0 (0 does not mean "no limit")'
    assert server.requests == []


def printed_result(capsys, args):
    """Run the module with the real exit_json/fail_json and return the JSON it printed."""
    with set_module_args(args):
        with pytest.raises(SystemExit):
            gpu_node_capacity.main()
    return json.loads(capsys.readouterr().out)


def test_kubeconfig_path_is_not_masked(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(basic.AnsibleModule, 'exit_json', REAL_EXIT_JSON)
    monkeypatch.setattr(basic.AnsibleModule, 'fail_json', REAL_FAIL_JSON)
    path = str(tmp_path / 'rke2.yaml')
    result = printed_result(capsys, {'name': 'nori', 'kubeconfig': path, 'timeout': 0})
    assert result['failed'] is True
    assert '********' not in result['msg']
    assert result['msg'].startswith('cannot load Kubernetes configuration (kubeconfig %s, context None' % path)
    assert result['invocation']['module_args']['kubeconfig'] == path


def test_kubeconfig_dictionary_secrets_stay_hidden(server, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(basic.AnsibleModule, 'exit_json', REAL_EXIT_JSON)
    monkeypatch.setattr(basic.AnsibleModule, 'fail_json', REAL_FAIL_JSON)
    server.add_nodes(RKE2)
    with open(kubeconfig(tmp_path, server)) as handle:
        config = json.load(handle)
    config['users'][0]['user']['token'] = 'wrong-secret-token-value'
    result = printed_result(capsys, {'name': 'nori', 'kubeconfig': config, 'timeout': 0})
    assert result['error'] == 'unauthorized'
    assert 'wrong-secret-token-value' not in json.dumps(result)
    assert result['invocation']['module_args']['kubeconfig']['clusters'][0]['cluster']['server'] == server.url


def test_kubeconfig_dictionary_secrets_stay_out_of_the_nodes_journal(server, tmp_path, capsys, monkeypatch):
    # AnsibleModule logs every invocation to the journal (or syslog) of the host it runs on, from its __init__:
    # the secrets of a kubeconfig dictionary must be known by then, not only for the result.
    logged = []
    monkeypatch.setattr(basic.AnsibleModule, 'log', lambda self, msg, log_args=None: logged.append((msg, log_args)))
    monkeypatch.setattr(basic.AnsibleModule, 'exit_json', REAL_EXIT_JSON)
    monkeypatch.setattr(basic.AnsibleModule, 'fail_json', REAL_FAIL_JSON)
    server.add_nodes(RKE2)
    with open(kubeconfig(tmp_path, server)) as handle:
        config = json.load(handle)
    config['users'][0]['user']['token'] = 'journal-secret-token-value'
    printed_result(capsys, {'name': 'nori', 'kubeconfig': config, 'timeout': 0})
    assert logged, 'the invocation was not logged at all'
    assert 'journal-secret-token-value' not in repr(logged)
    assert server.url in repr(logged)          # the rest of the kubeconfig is still logged
