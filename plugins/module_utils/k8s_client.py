# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubernetes API connection for the collection's modules (kubernetes Python client only).

The options and their K8S_AUTH_* environment fallbacks follow kubernetes.core's
``k8s_auth_options`` (the subset documented in this collection's ``k8s_connection`` fragment),
and the resolution order is the same: host plus credentials, else kubeconfig/context,
else in-cluster config, else the default kubeconfig.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import traceback

KUBERNETES_IMPORT_ERROR = None
try:
    import kubernetes
    from kubernetes.client.rest import ApiException
    import urllib3
except ImportError:
    KUBERNETES_IMPORT_ERROR = traceback.format_exc()
    ApiException = None  # pylint: disable=invalid-name

# option name -> (environment variable, type) as in kubernetes.core
AUTH_ENV = {
    'kubeconfig': ('K8S_AUTH_KUBECONFIG', 'str'),
    'context': ('K8S_AUTH_CONTEXT', 'str'),
    'host': ('K8S_AUTH_HOST', 'str'),
    'api_key': ('K8S_AUTH_API_KEY', 'str'),
    'validate_certs': ('K8S_AUTH_VERIFY_SSL', 'bool'),
    'ca_cert': ('K8S_AUTH_SSL_CA_CERT', 'str'),
    'client_cert': ('K8S_AUTH_CERT_FILE', 'str'),
    'client_key': ('K8S_AUTH_KEY_FILE', 'str'),
    'proxy': ('K8S_AUTH_PROXY', 'str'),
}

AUTH_ARG_SPEC = dict(
    kubeconfig=dict(type='raw', no_log=True),
    context=dict(type='str'),
    host=dict(type='str'),
    api_key=dict(type='str', no_log=True),
    validate_certs=dict(type='bool', aliases=['verify_ssl']),
    ca_cert=dict(type='path', aliases=['ssl_ca_cert']),
    client_cert=dict(type='path', aliases=['cert_file']),
    client_key=dict(type='path', aliases=['key_file'], no_log=False),
    proxy=dict(type='str'),
)


class K8sConnectionError(Exception):
    """The API could not be reached or refused us; ``kind`` is one of the K8S_* values below."""

    def __init__(self, message, kind, status=None):
        super(K8sConnectionError, self).__init__(message)
        self.message = message
        self.kind = kind
        self.status = status


K8S_CONFIG = 'config'
K8S_UNREACHABLE = 'unreachable'
K8S_UNAUTHORIZED = 'unauthorized'
K8S_FORBIDDEN = 'forbidden'
K8S_NOT_FOUND = 'not_found'
K8S_API_ERROR = 'api_error'


def resolve_auth(params, environ=None):
    """Options with the K8S_AUTH_* environment variables as fallbacks (as kubernetes.core does)."""
    environ = os.environ if environ is None else environ
    auth = {}
    for name, (env, kind) in AUTH_ENV.items():
        value = params.get(name)
        if value is None and environ.get(env) is not None:
            value = environ[env]
            if kind == 'bool':
                value = value.lower() not in ('0', 'false', 'no')
        if value is not None:
            auth[name] = value
    return auth


def build_configuration(auth):
    """A kubernetes.client.Configuration for the resolved options; raises K8sConnectionError."""
    configuration = kubernetes.client.Configuration()
    host = auth.get('host')
    direct = host and (auth.get('api_key') or (auth.get('client_cert') and auth.get('client_key')))
    kubeconfig = auth.get('kubeconfig')
    try:
        if direct:
            pass
        elif kubeconfig or auth.get('context'):
            _load_kubeconfig(configuration, kubeconfig, auth.get('context'))
        else:
            try:
                kubernetes.config.load_incluster_config(client_configuration=configuration)
            except kubernetes.config.ConfigException:
                _load_kubeconfig(configuration, None, None)
    except (kubernetes.config.ConfigException, IOError, OSError, ValueError) as exc:
        raise K8sConnectionError('cannot load Kubernetes configuration (kubeconfig %s, context %s): %s'
                                 % (kubeconfig if isinstance(kubeconfig, str) or kubeconfig is None
                                    else '(dict)', auth.get('context'), exc), K8S_CONFIG)

    if host:
        configuration.host = host.rstrip('/')
    if auth.get('api_key'):
        configuration.api_key = {'authorization': 'Bearer %s' % auth['api_key']}
    if auth.get('validate_certs') is not None:
        configuration.verify_ssl = auth['validate_certs']
    if auth.get('ca_cert'):
        configuration.ssl_ca_cert = auth['ca_cert']
    if auth.get('client_cert'):
        configuration.cert_file = auth['client_cert']
    if auth.get('client_key'):
        configuration.key_file = auth['client_key']
    if auth.get('proxy'):
        configuration.proxy = auth['proxy']
    # fail fast on refused connections instead of urllib3's default retries
    configuration.retries = 1
    return configuration


def _load_kubeconfig(configuration, kubeconfig, context):
    if isinstance(kubeconfig, dict):
        kubernetes.config.load_kube_config_from_dict(config_dict=kubeconfig, context=context,
                                                     client_configuration=configuration)
    else:
        kubernetes.config.load_kube_config(config_file=kubeconfig, context=context,
                                           client_configuration=configuration, persist_config=False)


class NodeReader(object):
    """Reads Node objects as the plain JSON dicts the API server returns."""

    def __init__(self, configuration, request_timeout=30):
        self.host = configuration.host
        self.request_timeout = request_timeout
        self.api = kubernetes.client.CoreV1Api(kubernetes.client.ApiClient(configuration))

    def read_node(self, name):
        return self._call('node %s' % name, self.api.read_node, name)

    def list_nodes(self, label_selector):
        return self._call('nodes with label selector %r' % label_selector, self.api.list_node,
                          label_selector=label_selector)['items'] or []

    def _call(self, what, func, *args, **kwargs):
        try:
            response = func(*args, _preload_content=False, _request_timeout=self.request_timeout, **kwargs)
            return json.loads(response.data)
        except ApiException as exc:
            raise translate_api_exception(exc, what, self.host)
        except urllib3.exceptions.HTTPError as exc:
            raise K8sConnectionError('Kubernetes API at %s unreachable while reading %s: %s'
                                     % (self.host, what, exc), K8S_UNREACHABLE)
        except ValueError as exc:
            raise K8sConnectionError('Kubernetes API at %s returned a body that is not JSON for %s: %s'
                                     % (self.host, what, exc), K8S_API_ERROR)


def _status_message(exc):
    try:
        return json.loads(exc.body).get('message') or exc.reason
    except (TypeError, ValueError, AttributeError):
        return exc.reason


def translate_api_exception(exc, what, host):
    """An ApiException as a K8sConnectionError with a message naming what was asked and where."""
    message = _status_message(exc)
    if exc.status == 401:
        return K8sConnectionError('Kubernetes API at %s answered 401 Unauthorized reading %s (%s): the '
                                  'credentials (api_key, client certificate or kubeconfig user) were '
                                  'rejected' % (host, what, message), K8S_UNAUTHORIZED, 401)
    if exc.status == 403:
        return K8sConnectionError('Kubernetes API at %s answered 403 Forbidden reading %s (%s): the user '
                                  'needs get/list on nodes' % (host, what, message), K8S_FORBIDDEN, 403)
    if exc.status == 404:
        return K8sConnectionError('%s not found on the Kubernetes API at %s (%s)' % (what, host, message),
                                  K8S_NOT_FOUND, 404)
    if exc.status == 0 or exc.status is None:
        return K8sConnectionError('Kubernetes API at %s unreachable while reading %s: %s'
                                  % (host, what, message), K8S_UNREACHABLE)
    return K8sConnectionError('Kubernetes API at %s answered %s %s reading %s: %s'
                              % (host, exc.status, exc.reason, what, message), K8S_API_ERROR, exc.status)
