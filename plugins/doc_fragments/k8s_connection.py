# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # The subset of kubernetes.core's k8s_auth_options that the kubernetes Python client this
    # collection targets supports, with the same names, aliases and K8S_AUTH_* variables.
    DOCUMENTATION = r"""
options:
  kubeconfig:
    description:
      - Path to a kubeconfig file, or a kubeconfig as a dictionary. When neither this, O(context) nor
        O(host) with credentials is given, the in-cluster configuration is tried and then C(~/.kube/config).
      - Can also be set with the E(K8S_AUTH_KUBECONFIG) environment variable.
      - As in M(kubernetes.core.k8s).
    type: raw
  context:
    description:
      - Name of a context in the kubeconfig. Can also be set with E(K8S_AUTH_CONTEXT).
    type: str
  host:
    description:
      - URL of the Kubernetes API, for example V(https://rke2-server:6443). Overrides the kubeconfig's.
        Can also be set with E(K8S_AUTH_HOST).
    type: str
  api_key:
    description:
      - Bearer token for the API. Can also be set with E(K8S_AUTH_API_KEY).
    type: str
  validate_certs:
    description:
      - Whether to verify the API server's TLS certificate. Can also be set with E(K8S_AUTH_VERIFY_SSL).
    type: bool
    aliases: [verify_ssl]
  ca_cert:
    description:
      - Path to the CA certificate (full chain) of the API server. Can also be set with E(K8S_AUTH_SSL_CA_CERT).
    type: path
    aliases: [ssl_ca_cert]
  client_cert:
    description:
      - Path to a client certificate. Can also be set with E(K8S_AUTH_CERT_FILE).
    type: path
    aliases: [cert_file]
  client_key:
    description:
      - Path to the client certificate's key. Can also be set with E(K8S_AUTH_KEY_FILE).
    type: path
    aliases: [key_file]
  proxy:
    description:
      - URL of an HTTP proxy for the API connection. Can also be set with E(K8S_AUTH_PROXY).
    type: str
notes:
  - The connection options carry the names, aliases and environment variables of
    kubernetes.core's C(kubernetes.core.k8s_auth_options). Basic auth (C(username)/C(password)),
    C(proxy_headers), C(no_proxy), C(persist_config) and impersonation are not offered.
"""
