# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The Kubernetes connection options of baremetal.gpu's modules that talk to the API.

The options are those of kubernetes.core's C(AUTH_ARG_SPEC), which M(baremetal.gpu.gpu_node_capacity)
and M(baremetal.gpu.maintenance_lock) take whole (so one C(module_defaults) entry for C(group/baremetal.gpu.k8s)
sets them for both and for kubernetes.core's modules). They are documented here, in this collection, and not through
kubernetes.core's own doc fragment: a doc fragment of another collection is missing wherever this
collection is installed or imported without its dependencies (Galaxy's import runs C(ansible-doc)
that way), and one missing fragment made C(ansible-doc) drop the documentation of every module.
C(ansible-test sanity)'s validate-modules compares these options with the argument spec the module
really builds from kubernetes.core, so a drift fails sanity.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):

    # baremetal.gpu.kubernetes
    DOCUMENTATION = r"""
options:
  host:
    description:
      - URL of the Kubernetes API server. Also read from E(K8S_AUTH_HOST).
    type: str
  api_key:
    description:
      - Bearer token for the API. Also read from E(K8S_AUTH_API_KEY).
    type: str
  kubeconfig:
    description:
      - Path of a kubeconfig file, several paths separated by C(:), or a kubeconfig given as a dictionary.
        Also read from E(K8S_AUTH_KUBECONFIG).
      - Unset, and without O(host), the client loads C(~/.kube/config), or the in-cluster configuration of a pod.
    type: raw
  context:
    description:
      - Context of the kubeconfig to use; unset, its current context. Also read from E(K8S_AUTH_CONTEXT).
    type: str
  username:
    description:
      - User name for HTTP basic authentication (only for API servers that accept it; RKE2 does not by default).
        Also read from E(K8S_AUTH_USERNAME).
    type: str
  password:
    description:
      - Password for HTTP basic authentication, with O(username). Also read from E(K8S_AUTH_PASSWORD).
    type: str
  client_cert:
    description:
      - Path of the client certificate for the API. Also read from E(K8S_AUTH_CERT_FILE).
    type: path
    aliases: [cert_file]
  client_key:
    description:
      - Path of the key of O(client_cert). Also read from E(K8S_AUTH_KEY_FILE).
    type: path
    aliases: [key_file]
  ca_cert:
    description:
      - Path of the CA certificate (the whole chain) that signed the API server's certificate.
        Also read from E(K8S_AUTH_SSL_CA_CERT).
    type: path
    aliases: [ssl_ca_cert]
  validate_certs:
    description:
      - Whether to check the API server's certificate. Also read from E(K8S_AUTH_VERIFY_SSL).
    type: bool
    aliases: [verify_ssl]
  proxy:
    description:
      - URL of an HTTP proxy for the API connection. Also read from E(K8S_AUTH_PROXY); E(HTTP_PROXY) is not read.
    type: str
  no_proxy:
    description:
      - Comma-separated hosts, domains and CIDRs reached without O(proxy). Also read from E(K8S_AUTH_NO_PROXY).
    type: str
  proxy_headers:
    description:
      - Headers sent to O(proxy).
    type: dict
    suboptions:
      proxy_basic_auth:
        description:
          - C(user:password) for the proxy's basic authentication. Also read from
            E(K8S_AUTH_PROXY_HEADERS_PROXY_BASIC_AUTH).
        type: str
      basic_auth:
        description:
          - C(user:password) for a basic authentication header. Also read from E(K8S_AUTH_PROXY_HEADERS_BASIC_AUTH).
        type: str
      user_agent:
        description:
          - The C(User-Agent) header, for example C(foo/1.0). Also read from E(K8S_AUTH_PROXY_HEADERS_USER_AGENT).
        type: str
  persist_config:
    description:
      - Whether the client saves refreshed tokens back to the kubeconfig. Also read from E(K8S_AUTH_PERSIST_CONFIG).
    type: bool
  impersonate_user:
    description:
      - User to impersonate. Also read from E(K8S_AUTH_IMPERSONATE_USER).
    type: str
  impersonate_groups:
    description:
      - Groups to impersonate. Also read from E(K8S_AUTH_IMPERSONATE_GROUPS) (comma-separated).
    type: list
    elements: str
notes:
  - With O(validate_certs=true), the API server's whole certificate chain must be in O(ca_cert) or in the kubeconfig.
"""
