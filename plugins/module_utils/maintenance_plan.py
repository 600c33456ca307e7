# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The maintenance engine's plan and budget: the one batch planner of every playbook that can disrupt a GPU node.

Pure functions over plain data, used by the filters in plugins/filter/maintenance.py through node_maintenance's
rollout_plan (playbooks/rollout.yml).
- The plan (``plan``): nodes outside a cluster never share a batch with nodes of a cluster; quiet nodes run in
  parallel; RKE2 servers one at a time first; then agents node_maintenance_batch_size at a time, within
  node_maintenance_max_unavailable, a count or a share of the cluster's GPU Nodes, counted from the cluster
  (maintenance_nodes.py's ``unavailable``).
- The budget before each batch (``batch_gate``): counted again from the cluster, the batch shrinks so that
  node_maintenance_max_unavailable holds whoever else is working.
The knobs follow NVIDIA GPU Operator's driver upgrade policy (maxParallelUpgrades, maxUnavailable), the server/agent
split Rancher's system-upgrade-controller's.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.baremetal.gpu.plugins.module_utils.maintenance_nodes import (
    STATE_LABELS, gpu_scope, node_labels, node_name, quarantined, unavailable)


def parse_count(value, total, variable):
    """A node count given as a number or a percentage ('25%') of ``total``; at least 1.

    Raises ValueError naming ``variable`` for 0, a negative number, more than 100 % or anything else.
    A percentage is rounded down, but never to 0 (25 % of 2 nodes is 1 node).
    """
    text = str(value).strip()
    match = re.match(r'^([0-9]+)(%?)$', text)
    if not match:
        raise ValueError('%s must be a number of nodes or a percentage such as "25%%", got %r' % (variable, value))
    number = int(match.group(1))
    if match.group(2):
        if number < 1 or number > 100:
            raise ValueError('%s must be a percentage between 1%% and 100%%, got %r' % (variable, value))
        return max(1, total * number // 100)
    if number < 1:
        raise ValueError('%s must be at least 1, got %r' % (variable, value))
    return number


def plan(batch_size, max_unavailable, hosts, nodes, cluster_nodes=None, host_nodes=None, what='changed',
         count_all_nodes=False):
    """THE batch plan of every playbook that can disrupt a GPU node (day 1, a driver change, the uninstall).

    ``hosts``: the GPU nodes in inventory order. ``nodes``: host -> node() or upgrade_node() (in_cluster, role,
    disruptive, skip, node_name). ``cluster_nodes``: every Node object of the cluster, or None without a cluster.
    ``host_nodes`` is unused (kept for callers).
    The budget belongs to the cluster: a percentage of node_maintenance_max_unavailable or node_maintenance_batch_size
    is of the cluster's GPU Nodes (gpu_scope: Nodes with a GPU resource or GPU Feature Discovery's
    nvidia.com/gpu.present=true, and the Nodes the inventory's hosts map to), never of the play; without a cluster
    view, of the play's hosts in a cluster. The Nodes out of service that count against it are those GPU Nodes
    (unschedulable or NotReady), or every Node with ``count_all_nodes``. Hosts outside a cluster have
    their own batches (node_maintenance_batch_size of them) and never widen the cluster's room.
    Batches, in order: the nodes outside a cluster (those to change in batches, the quiet ones with the first of
    them; never with a node of a cluster); the quiet nodes of the cluster, all at once (their reboots and restarts
    are held back); the disruptive RKE2 servers one at a time; the disruptive agents in batches of
    min(node_maintenance_batch_size, node_maintenance_max_unavailable minus the Nodes out of service). Skipped hosts
    are in no batch. Returns order, serial, batches, outside, quiet, servers, agents, skip, pending,
    already_unavailable, agent_batch, limit, scope (the Node names the budget counts, None for all), base (how many
    Nodes a percentage is of), noop, reason. Raises ValueError naming the variable for bad knobs, or when the cluster
    has no room for a disruptive node.
    """
    outside_busy, outside_quiet, quiet, servers, agents, skip = [], [], [], [], [], []
    for host in hosts:
        info = nodes.get(host) or {}
        if info.get('skip'):
            skip.append(host)
        elif not info.get('in_cluster'):
            (outside_busy if info.get('disruptive') else outside_quiet).append(host)
        elif not info.get('disruptive'):
            quiet.append(host)
        elif info.get('role') == 'server':
            servers.append(host)
        else:
            agents.append(host)
    in_cluster = quiet + servers + agents
    if cluster_nodes is not None:
        gpu_names = gpu_scope(cluster_nodes, [(nodes.get(h) or {}).get('node_name') for h in in_cluster])
        scope = None if count_all_nodes else gpu_names
        base = max(len(gpu_names), 1)
    else:
        scope = None
        base = max(len(in_cluster), 1)
    batch = parse_count(batch_size, base, 'node_maintenance_batch_size')
    outside_batch = parse_count(batch_size, max(len(outside_busy) + len(outside_quiet), 1), 'node_maintenance_batch_size')
    limit = parse_count(max_unavailable, base, 'node_maintenance_max_unavailable')
    # The nodes a stopped run left out of service come back first (stable: inventory order otherwise).
    servers.sort(key=lambda h: not (nodes.get(h) or {}).get('resume'))
    agents.sort(key=lambda h: not (nodes.get(h) or {}).get('resume'))
    # A node a run of ours left cordoned and labelled failed, which this plan takes through a batch again, does not
    # count against the room for its own retry (it would block it whenever node_maintenance_max_unavailable is 1; the gate
    # before its batch excludes the batch's own nodes too). A node someone else cordoned still counts.
    # Likewise a quarantined Node this plan takes through a batch (its remediation): it is out of service for the
    # reason the plan is there to fix, and counting it would leave no room to remediate it.
    retried = set((nodes.get(h) or {}).get('node_name') for h in servers + agents) - set([None, ''])
    own = set(node_name(n) for n in cluster_nodes or []
              if node_name(n) in retried
              and (quarantined(n) or any(node_labels(n).get(label) == 'failed' for label in STATE_LABELS)))
    counted = 'GPU Node(s)' if scope is not None else 'Node(s)'
    counted_base = ('%d GPU Node(s) of the cluster' % base) if cluster_nodes is not None else (
        '%d host(s) of the play in a cluster, no cluster view' % base)
    already = [n['name'] for n in unavailable(cluster_nodes, exclude=own, scope=scope)]
    batches = []
    if outside_busy:
        batches.extend(outside_busy[i:i + outside_batch] for i in range(0, len(outside_busy), outside_batch))
        batches[0] = outside_quiet + batches[0]
    elif outside_quiet:
        batches.append(outside_quiet)
    if quiet:
        batches.append(quiet)
    step = 0
    # A quarantined Node this plan remediates is out of service already: its batch takes no room of the budget.
    quarantined_own = set(node_name(n) for n in cluster_nodes or [] if node_name(n) in own and quarantined(n))
    needs_room = [h for h in servers + agents if (nodes.get(h) or {}).get('node_name') not in quarantined_own]
    if servers or agents:
        room = limit - len(already)
        if room < 1 and not needs_room:
            room = batch
        if room < 1:
            raise ValueError('node_maintenance_max_unavailable allows %d unavailable node(s) (of %s), but %d %s of the '
                             'cluster are out of service already (unschedulable, NotReady or quarantined: %s): no node of '
                             'the cluster can be taken out. Bring them back, or raise node_maintenance_max_unavailable'
                             % (limit, counted_base, len(already), counted, ', '.join(already)))
        step = min(batch, room)
        batches.extend([s] for s in servers)
        batches.extend(agents[i:i + step] for i in range(0, len(agents), step))
    pending = outside_busy + servers + agents
    reason = ('%d node(s) to be %s: %d outside a cluster (in batches of %d, never with a node of a cluster), RKE2 '
              'servers one at a time (%s), then agents (%s) in batches of %d (node_maintenance_batch_size %s = %d; '
              'node_maintenance_max_unavailable %s = %d of %s, minus %d %s already out of service); %d quiet '
              'node(s) in parallel'
              % (len(pending), what, len(outside_busy), outside_batch, ', '.join(servers) or 'none',
                 ', '.join(agents) or 'none', step, batch_size, batch, max_unavailable, limit, counted_base,
                 len(already), counted, len(outside_quiet) + len(quiet)))
    if not pending:
        reason = 'nothing disruptive to do: every GPU node runs at once, in parallel (%s)' % (
            ', '.join(outside_quiet + quiet) or 'no node')
    return {'order': [h for b in batches for h in b], 'serial': [len(b) for b in batches] or [1], 'batches': batches,
            'outside': outside_busy + outside_quiet, 'quiet': quiet, 'servers': servers, 'agents': agents,
            'skip': skip, 'pending': pending, 'already_unavailable': already, 'agent_batch': step, 'limit': limit,
            'scope': scope, 'base': base, 'noop': not pending, 'reason': reason}


def batch_gate(batch, host_nodes, disruptive, cluster_nodes, limit, scope=None):
    """The budget before a batch, counted again from the cluster: which hosts of ``batch`` may go now.

    ``host_nodes``: host -> Node name (or None outside the cluster). ``disruptive``: host -> bool. ``limit``: the
    plan's node_maintenance_max_unavailable in nodes; ``scope``: the plan's scope (the GPU Nodes the budget counts), None
    for every Node. Nodes out of service (unschedulable or NotReady, taken out by anyone else) count
    against it; the disruptive hosts of the batch beyond the room left are deferred (the next
    run takes them). The plan puts the nodes a stopped run left out of service (``resume``) first, so that they
    come back before the budget is spent on others. Returns {go, defer, room, unavailable, message}.
    """
    mine = set(n for n in (host_nodes.get(h) for h in batch) if n)
    # A quarantined Node of this plan (one a later batch remediates) does not take the room of the batch before it;
    # any other quarantined Node counts.
    planned = set(n for n in host_nodes.values() if n)
    mine |= set(node_name(n) for n in cluster_nodes or [] if node_name(n) in planned and quarantined(n))
    # Every Node out of service outside this batch counts, a node labelled upgrading too: with the lock held it is
    # out of service all the same (a crashed run of ours, or another run that lost its lock).
    out_now = unavailable(cluster_nodes, exclude=mine, count_ours=True, scope=scope)
    room = limit - len(out_now)
    go, defer = [], []
    out_already = set(node_name(n) for n in cluster_nodes or [] if quarantined(n))
    for host in batch:
        if not disruptive.get(host) or not host_nodes.get(host):
            go.append(host)
        elif host_nodes.get(host) in out_already:
            # Quarantined: out of service already, so its remediation takes no room.
            go.append(host)
        elif room > 0:
            go.append(host)
            room -= 1
        else:
            defer.append(host)
    busy = ', '.join('%s (%s)' % (n['name'], n['why']) for n in out_now) or 'none'
    message = ('node_maintenance_max_unavailable %d; out of service in the cluster now: %s' % (limit, busy)
               + ('; deferred to the next run: %s' % ', '.join(defer) if defer else ''))
    return {'go': go, 'defer': defer, 'room': limit - len(out_now), 'unavailable': out_now, 'message': message}
