# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which Node an inventory host is, for the maintenance engine.

``map_node``: its name, then the kubernetes.io/hostname label, then an InternalIP; ``mapping_errors``: a node of a
cluster that cannot be mapped, or a cluster without a kubeconfig, is refused before any change.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.baremetal.gpu.plugins.module_utils.maintenance_nodes import (
    HOSTNAME_LABEL, node_labels, node_name)


def map_node(host, names, addresses, cluster_nodes):
    """The Node of inventory host ``host``: by name (``names``, in order: baremetal_gpu_node_name, the node's
    hostname, the inventory name), then by the kubernetes.io/hostname label, then by an InternalIP among
    ``addresses`` (the host's IPv4/IPv6 addresses). Returns {name, how} or None."""
    names = [str(n) for n in names or [] if n]
    addresses = set(str(a) for a in addresses or [] if a)
    nodes = list(cluster_nodes or [])
    for name in names:
        for node in nodes:
            if node_name(node) == name:
                return {'name': name, 'how': 'name %s' % name}
    for name in names:
        for node in nodes:
            if node_labels(node).get(HOSTNAME_LABEL) == name:
                return {'name': node['metadata']['name'], 'how': 'label %s=%s' % (HOSTNAME_LABEL, name)}
    for node in nodes:
        for address in ((node.get('status') or {}).get('addresses') or []):
            if address.get('type') == 'InternalIP' and address.get('address') in addresses:
                return {'name': node['metadata']['name'], 'how': 'InternalIP %s' % address.get('address')}
    return None


def mapping_errors(hosts, in_cluster, mapped, kubeconfig_found, kubeconfig_named=False, allow_without_api=False):
    """Refusals before any change. With a kubeconfig: a host that is a node of a cluster (its RKE2 unit is enabled)
    but that no Node maps to. Without one: hosts that run RKE2, so their reboots and restarts could not be cordoned
    or drained: refused when the user named a kubeconfig (cluster_kubeconfig) that no host has, and when none was
    found at the default place either, unless ``allow_without_api`` (node_maintenance_allow_without_cluster_api)
    says to go on with only the batching to protect the cluster.
    ``in_cluster``/``mapped``: host -> bool / host -> map_node() or None."""
    errors = []
    members = [h for h in hosts if in_cluster.get(h)]
    if kubeconfig_found:
        lost = [h for h in members if not mapped.get(h)]
        if lost:
            errors.append('%s run RKE2 but no Node of the cluster matches them by name, %s label or InternalIP: they '
                          'would be rebooted or restarted without a cordon. Set baremetal_gpu_node_name to the Node name '
                          'for each' % (', '.join(lost), HOSTNAME_LABEL))
    elif kubeconfig_named and members:
        errors.append('the kubeconfig named by cluster_kubeconfig was found on no host while %s run RKE2: their reboots '
                      'and restarts cannot be cordoned or drained. Fix cluster_kubeconfig' % ', '.join(members))
    elif members and not allow_without_api:
        errors.append('no kubeconfig was found on any host of k8s_control or gpu_nodes (cluster_kubeconfig is not set, '
                      'and the default, RKE2\'s own kubeconfig, is on none of them) while %s run RKE2: their reboots and restarts '
                      'could not be cordoned or drained. Set cluster_kubeconfig, or node_maintenance_allow_without_cluster_api: '
                      'true to go on with only the batching to protect the cluster' % ', '.join(members))
    return errors
