# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Decisions of the cluster layer (RuntimeClass, device plugin, dcgm-exporter, dashboard), as pure functions.

Used by the filter plugins in plugins/filter/cluster_addons.py and plugins/filter/verify.py; unit-tested on recorded objects
and the real counters lists and dashboard carried by the roles.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.baremetal.gpu.plugins.module_utils import mig

DEVICE_LIST_STRATEGIES = ('envvar', 'volume-mounts', 'cdi-annotations', 'cdi-cri')
HELM_MANAGED_BY = 'Helm'
HELM_RELEASE_NAME = 'meta.helm.sh/release-name'
HELM_RELEASE_NAMESPACE = 'meta.helm.sh/release-namespace'
MANAGED_BY = 'app.kubernetes.io/managed-by'
# The ownership marker of the Helm releases this collection installs: a top-level key of the release's
# user-supplied values, which Helm stores in the release and `helm get values` (kubernetes.core.helm_info's
# status.values) reads back. kubernetes.core.helm sets no release labels; a values key needs no Helm
# feature and no chart support (Helm passes keys a chart does not use through untouched; none of the
# pinned charts has a values schema at the top level).
RELEASE_MARKER_KEY = 'baremetalGpu'
RELEASE_MARKER = {'managedBy': 'baremetal.gpu'}
_DCGM_NAME = re.compile(r'\bDCGM_[A-Z0-9_]+\b')


def _host_value(hostvars, host, name):
    """A host's variable or fact ``name`` (registered/set_fact first, then ansible_facts), or None."""
    try:
        hv = hostvars[host]
    except KeyError:
        return None
    value = hv.get(name) if hasattr(hv, 'get') else None
    if value in (None, '', {}):
        facts = hv.get('ansible_facts') if hasattr(hv, 'get') else None
        value = (facts or {}).get(name)
    return value


def gpu_node_products(hostvars, hosts, fact='nvidia_smi'):
    """GPU product names (``gpus[].name``) of the nvidia_smi result ``fact`` of ``hosts``, first seen first."""
    out = []
    for host in hosts or []:
        result = _host_value(hostvars, host, fact) or {}
        for gpu in (result.get('gpus') if hasattr(result, 'get') else None) or []:
            name = (gpu or {}).get('name') or ''
            if name and name not in out:
                out.append(name)
    return out


def gpu_class(products, geforce_regex):
    """'geforce' when any product matches ``geforce_regex``, 'datacenter' when none does, '' without products."""
    products = [p for p in (products or []) if p]
    if not products:
        return ''
    pattern = re.compile(geforce_regex)
    return 'geforce' if any(pattern.search(p) for p in products) else 'datacenter'


def counters_fields(csv_text):
    """The DCGM field names of a dcgm-exporter counters CSV (first column of every non-comment line)."""
    out = []
    for line in (csv_text or '').splitlines():
        line = line.strip()
        if not line or line.startswith('#'):
            continue
        out.append(line.split(',')[0].strip())
    return out


def dcgm_counters(gpu_class, base_text, ecc_metrics=None, health_metrics=None, custom_metrics=None,
                  ecc_enabled=True, health_enabled=True):
    """What dcgm-exporter's counters list holds for ``gpu_class`` (the one decision dcgm_exporter renders and
    kube_prometheus' dashboard and alerts follow, through dcgm_exporter's ``collectors`` entry point).

    ``base_text``: the class's list as carried by the role (dcp-metrics-included.csv, geforce-counters.csv);
    ``ecc_metrics``: the ECC counters added on the datacenter class when ``ecc_enabled``; ``health_metrics``: a dict
    class -> the metrics gpu_health's alerts need, added when ``health_enabled``; ``custom_metrics``: the user's.
    Returns ``{'base_lines': [...], 'added': [...]}``: the active lines of the list (trimmed, no comment, no empty
    line), then the metrics to add after them in that order, each name once and none the list already has. An
    unknown class ('': no GPU product found) gives two empty lists.
    """
    if not gpu_class:
        return {'base_lines': [], 'added': []}
    lines = [line.strip() for line in (base_text or '').splitlines()]
    lines = [line for line in lines if line and not line.startswith('#')]
    present = set(counters_fields('\n'.join(lines)))
    candidates = ((list(ecc_metrics or []) if gpu_class == 'datacenter' and ecc_enabled else [])
                  + (list((health_metrics or {}).get(gpu_class) or []) if health_enabled else [])
                  + list(custom_metrics or []))
    added, names = [], set()
    for metric in candidates:
        name = metric.get('name')
        if name in present or name in names:
            continue
        names.add(name)
        added.append(metric)
    return {'base_lines': lines, 'added': added}


def dcgm_names(data):
    """Every DCGM_* name used anywhere in ``data`` (a dashboard, a rule, a string), sorted."""
    text = data if isinstance(data, str) else json.dumps(data, sort_keys=True)
    return sorted(set(_DCGM_NAME.findall(text)))


def dcgm_dashboard(dashboard, exported=None, profiling=True):
    """The dashboard without the panels that cannot show data.

    ``exported``: the DCGM fields the exporter exports (None: unknown, keep everything it needs);
    ``profiling``: False drops every panel that queries a profiling field (DCGM_FI_PROF_*).
    Returns a new dict; the panels kept are unchanged, in order.
    """
    exported = None if exported is None else set(exported)
    kept = []
    for panel in dashboard.get('panels') or []:
        used = dcgm_names(panel)
        if not profiling and any(n.startswith('DCGM_FI_PROF_') for n in used):
            continue
        if exported is not None and not set(used) <= exported:
            continue
        kept.append(panel)
    out = dict(dashboard)
    out['panels'] = kept
    return out


def device_list_strategy(requested, hostvars=None, hosts=None, fact='container_toolkit_cdi',
                         runtime_fact='rke2_nvidia_runtime_cdi'):
    """The device plugin's deviceListStrategy for ``requested`` (a list or a comma-separated string).

    ``auto``: ``cdi-cri``, unless a host of ``hosts`` has the fact ``fact`` with ``enabled`` false (CDI switched off
    on that GPU node by the host layer) or the fact ``runtime_fact`` with ``reads_cdi`` false (the container runtime
    that runs its GPU pods, RKE2's containerd, reads no CDI specs): then ``envvar``, which works on every node, with
    the nodes and reasons. An explicit ``cdi-cri`` with such a node is refused (ValueError): every GPU pod there
    would fail to start.
    Returns {'strategies': [...], 'reason': '...'}; raises ValueError on a request the plugin refuses.
    """
    if isinstance(requested, str):
        requested = requested.split(',')
    names = [str(n).strip() for n in (requested or []) if str(n).strip()]
    if not names:
        raise ValueError('empty device list strategy')
    unknown = [n for n in names if n != 'auto' and n not in DEVICE_LIST_STRATEGIES]
    if unknown:
        raise ValueError('unknown device list strategy %s (known: auto, %s)' % (', '.join(unknown), ', '.join(DEVICE_LIST_STRATEGIES)))
    if 'auto' in names and len(names) > 1:
        raise ValueError('auto cannot be combined with other strategies')
    if 'cdi-cri' in names and 'cdi-annotations' in names:
        raise ValueError('cdi-cri and cdi-annotations cannot be combined (the plugin would pass each device twice)')
    off, unread = [], []
    for host in hosts or []:
        cdi = _host_value(hostvars or {}, host, fact)
        if hasattr(cdi, 'get') and 'enabled' in cdi and not _truthy(cdi.get('enabled')):
            off.append(host)
        runtime = _host_value(hostvars or {}, host, runtime_fact)
        if hasattr(runtime, 'get') and runtime.get('reads_cdi') is False:
            unread.append('%s (%s)' % (host, runtime.get('reason') or 'its runtime reads no CDI specs'))
    if names != ['auto']:
        if 'cdi-cri' in names and unread:
            raise ValueError('cdi-cri, but the container runtime of these GPU nodes reads no CDI specs, so every GPU pod '
                             'there would fail to start: %s (fact %s). Use envvar or auto, or let the runtime read CDI '
                             '(containerd 2, or enable_cdi = true on containerd 1.7)' % ('; '.join(unread), runtime_fact))
        return {'strategies': names, 'reason': 'as requested'}
    if off or unread:
        why = (['CDI is off on %s (fact %s)' % (', '.join(off), fact)] if off else []) + (
            ['the container runtime reads no CDI specs on %s (fact %s)' % ('; '.join(unread), runtime_fact)] if unread else [])
        return {'strategies': ['envvar'], 'reason': 'auto: envvar, because ' + '; '.join(why)}
    return {'strategies': ['cdi-cri'], 'reason': 'auto: no GPU node reports CDI off or a runtime that reads no CDI specs'}


def _truthy(value):
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in ('1', 'true', 'yes', 'on', 'y', 't')


def _owner(obj):
    meta = obj.get('metadata') or {}
    labels = meta.get('labels') or {}
    annotations = meta.get('annotations') or {}
    release = annotations.get(HELM_RELEASE_NAME)
    if labels.get(MANAGED_BY) == HELM_MANAGED_BY and release:
        return {'kind': 'helm', 'release': release, 'namespace': annotations.get(HELM_RELEASE_NAMESPACE, ''),
                'text': 'Helm release %s/%s' % (annotations.get(HELM_RELEASE_NAMESPACE, '?'), release)}
    if labels.get(MANAGED_BY):
        return {'kind': 'label', 'text': '%s=%s' % (MANAGED_BY, labels[MANAGED_BY])}
    return {'kind': 'none', 'text': 'no owner recorded (no %s label)' % MANAGED_BY}


def sharing_capacity(plan, hosts):
    """Per GPU host, what its sharing profile makes the device plugin advertise (``plan``: sharing_plan's result):
    {host: {'replicas', 'resource', 'profile'}}; nvidia.com/gpu.shared when the profile renames by default. Empty
    without profiles."""
    if not (plan or {}).get('configs'):
        return {}
    out = {}
    for host in hosts or []:
        name = plan['labels'].get(host, plan['default'])
        sharing = (plan['configs'].get(name) or {}).get('sharing') or {}
        kind = (sharing.get('timeSlicing') or sharing.get('mps') or {})
        replicas = (kind.get('resources') or [{}])[0].get('replicas', 1)
        out[host] = {'replicas': int(replicas), 'profile': name,
                     'resource': 'nvidia.com/gpu.shared' if kind.get('renameByDefault') else 'nvidia.com/gpu'}
        if name in (plan.get('mig_layouts') or {}):
            out[host].update(mig_strategy=plan['configs'][name]['flags']['migStrategy'],
                             mig_layout=plan['mig_layouts'][name], layouts=plan.get('layouts') or {})
    return out


def _mig_pool_rows(row, seen, pool):
    """The rows of a host of a MIG pool, from its layout (what the inventory asks) rather than from what the node
    has: with the single strategy its instances as nvidia.com/gpu, with the mixed one each profile as
    nvidia.com/mig-<profile> and its GPUs with MIG off as nvidia.com/gpu. ``mig_mismatch`` says where nvidia-smi's
    instances per GPU are not the layout's (verify fails the node)."""
    layout = pool['mig_layout']
    ids = list(seen.get('gpu_device_ids') or [])
    want = mig.expected_instances(pool.get('layouts') or {}, layout, ids)
    if want['unmatched']:
        row.update(refused=True, reason='MIG layout %s selects no entry for GPU %s (mig-parted refuses such a node)'
                   % (layout, ', '.join(map(str, want['unmatched']))))
        return [row]
    have = list(seen.get('mig_devices_per_gpu') or [])
    differ = ['GPU %d: %d instance(s), layout %s has %d' % (g['index'], have[g['index']], layout, sum(g['devices'].values()))
              for g in want['gpus'] if g['index'] < len(have) and have[g['index']] != sum(g['devices'].values())]
    row['mig_mismatch'] = '; '.join(differ)
    row['mig_layout'] = layout
    single = pool['mig_strategy'] == 'single'
    if single and want['mig_gpus'] and want['whole_gpus']:
        row.update(refused=True, reason='MIG layout %s keeps MIG off on some GPUs: the single strategy refuses such '
                                        'a node; use mig_strategy mixed for its profile' % layout)
        return [row]
    rows = [dict(row, check=True, units=a['count'], expected=a['count'], gfd_count=a['count'] if single else None,
                 replicas=1, resource=a['resource'])
            for a in mig.advertised(want, pool['mig_strategy'])]
    return rows or [dict(row, reason='MIG layout %s creates no instance here' % layout)]


def expected_capacity(hostvars, hosts, mig_strategy, replicas, resource='nvidia.com/gpu', per_host=None):
    """What each GPU node must advertise (verify's cluster checks), from what nvidia-smi showed on it (its
    ``verify_observed`` fact): ``device_plugin_gpus[mig_strategy]`` (GPUs, or MIG devices with the single strategy)
    times ``replicas``. One row per host: ``host``, ``node``, ``check`` (compare the node's capacity), ``refused``
    (the device plugin refuses such a node), ``gpus``, ``units``, ``expected``, ``gfd_count`` (the
    nvidia.com/gpu.count label GFD sets; None with the mixed strategy), ``replicas``, ``resource`` (the host's,
    from ``per_host`` (sharing_capacity) when its pool has a profile, else ``replicas`` and ``resource``),
    ``mig_strategy``, ``reason`` when not checked. A host of a MIG pool is expected what its layout makes
    (_mig_pool_rows: a row per resource with the mixed strategy, and ``mig_mismatch``)."""
    rows = []
    for host in hosts or []:
        host_vars = hostvars[host] if host in hostvars else {}
        seen = host_vars.get('verify_observed')
        pool = (per_host or {}).get(host) or {}
        host_replicas = int(pool.get('replicas', replicas))
        row = {'host': host, 'check': False, 'refused': False, 'gpus': 0, 'units': None, 'expected': None,
               'gfd_count': None, 'replicas': host_replicas, 'resource': pool.get('resource', resource)}
        if seen is None:
            row.update(node=host_vars.get('baremetal_gpu_node_name') or host,
                       reason='nvidia-smi was not read there (the node checks did not run on it)')
            rows.append(row)
            continue
        gpus = int(seen['gpu_count']) if seen['status'] == 'ok' else 0
        host_strategy = pool.get('mig_strategy', mig_strategy)
        units = seen['device_plugin_gpus'][host_strategy]
        row.update(node=seen['node_name'], gpus=gpus, units=units, mig_strategy=host_strategy)
        if gpus and pool.get('mig_layout') and seen.get('gpu_device_ids') is not None:
            rows.extend(_mig_pool_rows(row, seen, pool))
            continue
        if gpus == 0:
            row['reason'] = ('it shows no GPU through nvidia-smi (%s), so no %s is expected of it'
                             % (seen['summary'], resource))
        elif units is None:
            row.update(refused=True, reason='MIG is on for only some of its GPUs, or a GPU has MIG on without MIG '
                                            'devices: the device plugin refuses such a node with verify_mig_strategy='
                                            '%s (%s)' % (host_strategy, seen['summary']))
        elif int(units) == 0:
            row['reason'] = ('every GPU has MIG on; with verify_mig_strategy=mixed its MIG devices are advertised as '
                             'nvidia.com/mig-<profile>, which is not checked')
        else:
            row.update(check=True, expected=int(units) * host_replicas,
                       gfd_count=None if host_strategy == 'mixed' else int(units))
        rows.append(row)
    return rows


# An NFD worker DaemonSet: node-feature-discovery's own deployment names it nfd-worker, its chart (and the NFD
# subchart of nvidia-device-plugin) <release>-node-feature-discovery-worker, labelled with the app name.
NFD_WORKER_NAME = re.compile(r'nfd-worker|node-feature-discovery-worker')
NFD_APP_NAME = 'node-feature-discovery'


def external_nfd(daemonsets, namespace, release):
    """``namespace/name`` of every NFD worker DaemonSet (k8s_info ``resources``) that is not the NFD of the
    device plugin's own release (``release`` in ``namespace``): an NFD already running, which the release then
    uses instead of installing its own (device_plugin_nfd: auto)."""
    found = []
    for daemonset in daemonsets or []:
        meta = (daemonset or {}).get('metadata') or {}
        labels = meta.get('labels') or {}
        if not (NFD_WORKER_NAME.search(meta.get('name') or '') or labels.get('app.kubernetes.io/name') == NFD_APP_NAME):
            continue
        if meta.get('namespace') == namespace and labels.get('app.kubernetes.io/instance') == release:
            continue
        found.append('%s/%s' % (meta.get('namespace'), meta.get('name')))
    return found


def paused_affinity(affinity, pause):
    """``affinity`` (a pod's, as a chart's values give it) that also keeps the pods off a Node labelled
    ``pause['label']``=``pause['value']``: the NotIn expression joins every term of the required node affinity (the
    terms are alternatives, so each must carry it); without required terms, one term of that expression alone. The
    rest of ``affinity`` is kept as it is; an expression already there is not added twice."""
    if not isinstance(affinity, dict):
        raise TypeError('affinity must be a dictionary, got %s' % type(affinity).__name__)
    keep_off = {'key': pause['label'], 'operator': 'NotIn', 'values': [pause['value']]}
    result = json.loads(json.dumps(affinity))
    node_affinity = result.setdefault('nodeAffinity', {})
    required = node_affinity.get('requiredDuringSchedulingIgnoredDuringExecution') or {}
    terms = required.get('nodeSelectorTerms') or [{}]
    for term in terms:
        expressions = term.setdefault('matchExpressions', [])
        if keep_off not in expressions:
            expressions.append(dict(keep_off, values=list(keep_off['values'])))
    required['nodeSelectorTerms'] = terms
    node_affinity['requiredDuringSchedulingIgnoredDuringExecution'] = required
    return result


def runtime_class_decision(existing, name, handler, managed_by='baremetal.gpu'):
    """What to do with the RuntimeClass ``name`` given ``existing`` (k8s_info resources: [] or [object]).

    Returns {'action', 'owner', 'handler', 'message'} where action is
      - 'create': none exists;
      - 'apply': ours (managed-by ``managed_by``) or unowned, same handler;
      - 'leave': managed by a Helm release (RKE2 adopts a RuntimeClass "nvidia" into rke2-runtimeclasses),
        same handler: never fight another owner;
      - 'refuse': the handler differs (a RuntimeClass's handler is immutable, and pods would run on another runtime).
    """
    items = [o for o in (existing or []) if o]
    if not items:
        return {'action': 'create', 'owner': '', 'handler': '', 'message': 'RuntimeClass %s does not exist: creating it' % name}
    obj = items[0]
    found = obj.get('handler') or ''
    owner = _owner(obj)
    if found != handler:
        if owner['kind'] == 'helm':
            todo = ('change the handler in that release (RKE2: the rke2-runtimeclasses chart, after the runtime it '
                    'names exists on the nodes)')
        else:
            todo = 'delete it (kubectl delete runtimeclass %s) so that it is recreated' % name
        return {'action': 'refuse', 'owner': owner['text'], 'handler': found,
                'message': ('RuntimeClass %s exists with handler "%s", not "%s", owned by %s. Pods would run on another '
                            'runtime and the handler of a RuntimeClass cannot be changed: %s, or set '
                            'baremetal_gpu_runtime_class_name to another name.'
                            % (name, found, handler, owner['text'], todo))}
    if owner['kind'] == 'helm':
        return {'action': 'leave', 'owner': owner['text'], 'handler': found,
                'message': ('RuntimeClass %s (handler %s) is managed by %s: left alone, it is what the GPU pods use'
                            % (name, found, owner['text']))}
    if owner['kind'] == 'label' and owner['text'] != '%s=%s' % (MANAGED_BY, managed_by):
        return {'action': 'leave', 'owner': owner['text'], 'handler': found,
                'message': 'RuntimeClass %s (handler %s) is managed by %s: left alone' % (name, found, owner['text'])}
    return {'action': 'apply', 'owner': owner['text'], 'handler': found,
            'message': 'RuntimeClass %s (handler %s) exists, %s: applying ours' % (name, found, owner['text'])}


def release_marked(values):
    """``values`` (a release's values) with this collection's marker set: the marker wins over anything in them."""
    if not hasattr(values or {}, 'items'):
        raise ValueError('values must be a mapping, got %s' % type(values).__name__)
    out = dict(values or {})
    out[RELEASE_MARKER_KEY] = dict(RELEASE_MARKER)
    return out


def release_is_ours(values):
    """Whether the user-supplied ``values`` of a release carry this collection's marker."""
    mark = (values or {}).get(RELEASE_MARKER_KEY) if hasattr(values or {}, 'get') else None
    return hasattr(mark, 'get') and mark.get('managedBy') == RELEASE_MARKER['managedBy']


def release_ownership(status, release, namespace, adopt=False, adopt_var='', purpose='install'):
    """What to do with the Helm release ``namespace``/``release`` given kubernetes.core.helm_info's ``status``.

    ``status`` is helm_info's C(status) ({} or absent when no release of that name is in the namespace; else
    the release with its user-supplied C(values)). ``purpose`` is C(install) or C(uninstall). Returns
    {'action', 'ours', 'message'}; action is
      - install: 'install' (none exists), 'upgrade' (ours), 'adopt' (not ours and ``adopt`` is true: the
        upgrade marks it ours), 'refuse' (not ours: another tool's or a person's release is never taken over
        without ``adopt_var``);
      - uninstall: 'absent' (none), 'remove' (ours), 'leave' (not ours: never removed).
    """
    if purpose not in ('install', 'uninstall'):
        raise ValueError('purpose must be install or uninstall, got %r' % (purpose,))
    where = '%s/%s' % (namespace, release)
    if not status:
        if purpose == 'install':
            return {'action': 'install', 'ours': False, 'message': 'Helm release %s does not exist: installing it' % where}
        return {'action': 'absent', 'ours': False, 'message': 'Helm release %s does not exist: nothing to remove' % where}
    chart = status.get('chart') or '?'
    ours = release_is_ours(status.get('values'))
    if purpose == 'uninstall':
        if ours:
            return {'action': 'remove', 'ours': True, 'message': 'Helm release %s (%s) is ours: removing it' % (where, chart)}
        return {'action': 'leave', 'ours': False,
                'message': ('Helm release %s (%s) was not installed by baremetal.gpu (its values carry no %s.managedBy): '
                            'left alone' % (where, chart, RELEASE_MARKER_KEY))}
    if ours:
        return {'action': 'upgrade', 'ours': True, 'message': 'Helm release %s (%s) is ours: upgrading it' % (where, chart)}
    if _truthy(adopt):
        return {'action': 'adopt', 'ours': False,
                'message': ('Helm release %s (%s) was not installed by baremetal.gpu; %s is true: upgrading it with our '
                            'values, which marks it ours' % (where, chart, adopt_var))}
    return {'action': 'refuse', 'ours': False,
            'message': ('Helm release %s (%s) exists and was not installed by baremetal.gpu (its values carry no %s.managedBy).'
                        ' Upgrading it would replace its values with ours. Set %s: true to take it over, or give ours '
                        'another name or namespace.' % (where, chart, RELEASE_MARKER_KEY, adopt_var))}


def crds_served(crd_names, api_versions):
    """The CRDs of ``crd_names`` (plural.group) whose group appears in ``api_versions`` (group/version[/Kind])."""
    groups = set(str(v).split('/', 1)[0] for v in (api_versions or []) if '/' in str(v))
    return [n for n in (crd_names or []) if n.split('.', 1)[-1] in groups]


def crd_api_versions(crds):
    """group/version of every served version of the CustomResourceDefinition objects ``crds``, sorted."""
    out = set()
    for crd in crds or []:
        spec = (crd or {}).get('spec') or {}
        for version in spec.get('versions') or []:
            if version.get('served', True):
                out.add('%s/%s' % (spec.get('group'), version.get('name')))
    return sorted(out)


def promql_value_in(selector, values):
    """A PromQL expression that keeps the series of ``selector`` whose value is one of the integers ``values``.

    PromQL compares values but has no set test: each run of consecutive values is one range filter
    (``sel >= 15 <= 24``: both comparisons filter, the value stays), each lone value ``sel == 12``, joined by
    ``or``. An empty ``values`` is refused: the alert it would build could never fire.
    """
    try:
        codes = sorted(set(int(v) for v in values or []))
    except (TypeError, ValueError):
        raise ValueError('values must be integers, got %r' % (values,))
    if not codes:
        raise ValueError('values must not be empty')
    runs = []
    for code in codes:
        if runs and code == runs[-1][1] + 1:
            runs[-1][1] = code
        else:
            runs.append([code, code])
    terms = []
    for low, high in runs:
        if low == high:
            terms.append('%s == %d' % (selector, low))
        else:
            terms.append('%s >= %d <= %d' % (selector, low, high))
    return ' or '.join(terms)


# ---- GPU sharing per node pool (device_plugin_sharing_profiles) --------------------------------------------------

# What a profile may share a GPU as: whole GPUs, time-slicing, MPS. Named configs of the device plugin's config file
# (version v1), one per profile, in the chart's config.map; each Node picks one by SHARING_LABEL, the rest take
# config.default (the chart's config-manager sidecar switches the plugin live when the label changes).
SHARING_KINDS = ('none', 'time-slicing', 'mps', 'mig')
SHARING_LABEL = 'nvidia.com/device-plugin.config'
SHARING_HOST_VAR = 'baremetal_gpu_sharing_profile'
SHARING_DEFAULT_NAME = 'whole'
_PROFILE_KEYS = ('sharing', 'replicas', 'rename_by_default', 'fail_requests_greater_than_one', 'mig_layout',
                 'mig_strategy')
# The settings of a MIG profile (sharing mig): the layout of the site's layouts (mig.LAYOUTS_VAR) its nodes get, and
# how the device plugin advertises the instances (single: all alike, as nvidia.com/gpu; mixed: nvidia.com/mig-<profile>).
_MIG_KEYS = ('mig_layout', 'mig_strategy')
MIG_STRATEGIES = ('single', 'mixed')
# A label value (the profile name is one): 63 characters at most, alphanumerics at both ends.
_LABEL_VALUE = re.compile(r'^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$')


def _int(value):
    if isinstance(value, bool):
        raise ValueError(value)
    return int(str(value).strip())


def sharing_config(profile, mig_strategy):
    """The device plugin's config file (version v1) for one validated profile."""
    kind = profile.get('sharing', 'none')
    if kind == 'mig':
        mig_strategy = mig.profile_strategy(profile)
    config = {'version': 'v1', 'flags': {'migStrategy': mig_strategy}}
    resources = [{'name': 'nvidia.com/gpu', 'replicas': _int(profile.get('replicas'))}] if kind not in ('none', 'mig') else []
    if kind == 'time-slicing':
        config['sharing'] = {'timeSlicing': {
            'renameByDefault': _truthy(profile.get('rename_by_default', False)),
            'failRequestsGreaterThanOne': _truthy(profile.get('fail_requests_greater_than_one', False)),
            'resources': resources}}
    elif kind == 'mps':
        config['sharing'] = {'mps': {'renameByDefault': _truthy(profile.get('rename_by_default', False)),
                                     'resources': resources}}
    return config


def _mig_profile_errors(where, profile, layouts):
    """Why a MIG profile (sharing mig) cannot work with the site's layouts (``layouts``: mig.LAYOUTS_VAR)."""
    name = profile.get('mig_layout')
    strategy = mig.profile_strategy(profile)
    if strategy not in MIG_STRATEGIES:
        return ['%s.mig_strategy must be one of %s, got %s' % (where, ', '.join(MIG_STRATEGIES), strategy)]
    if name in (None, ''):
        return ['%s.mig_layout must name a layout of %s for sharing mig' % (where, mig.LAYOUTS_VAR)]
    if not isinstance(layouts, dict) or str(name) not in mig.layout_file(layouts)['mig-configs']:
        return ['%s.mig_layout is %s, which %s does not define (defined: %s)' % (
            where, name, mig.LAYOUTS_VAR, ', '.join(sorted(map(str, mig.layout_file(layouts)['mig-configs'])))
            if isinstance(layouts, dict) else 'none')]
    errors = []
    for key in ('replicas', 'rename_by_default', 'fail_requests_greater_than_one'):
        if key in profile:
            errors.append('%s.%s: a MIG profile advertises each MIG instance once (no %s with sharing mig)'
                          % (where, key, key))
    created = mig.layout_profiles(layouts, str(name))
    if strategy == 'single' and len(created) > 1:
        errors.append('%s: layout %s creates several MIG profiles (%s), which mig_strategy single refuses (the '
                      'device plugin advertises nothing on such a node): use mig_strategy mixed, or a layout of one '
                      'profile' % (where, name, ', '.join(created)))
    return errors


def sharing_plan(profiles, default_profile, mig_strategy, gfd_enabled, hostvars=None, hosts=None,
                 time_slicing_enabled=False, mig_layouts=None):
    """The device plugin's configuration per node pool, from ``device_plugin_sharing_profiles`` (name -> {sharing:
    none|time-slicing|mps|mig, replicas, rename_by_default, fail_requests_greater_than_one, mig_layout,
    mig_strategy}), the default profile of a GPU node that names none (``device_plugin_sharing_default_profile``, ''
    for whole GPUs), each GPU host's ``baremetal_gpu_sharing_profile`` and the site's MIG layouts (``mig_layouts``:
    mig.LAYOUTS_VAR, which a MIG profile names its layout from).

    Returns {configs: {name: config}, default, labels: {host: profile}, mps, errors}; ``errors`` name the variable
    and are refused before any change by the caller. No profiles: nothing ({configs: {}}; the cluster-wide
    device_plugin_time_slicing_* still apply)."""
    profiles = profiles or {}
    errors = []
    if not isinstance(profiles, dict):
        return {'configs': {}, 'default': '', 'labels': {}, 'mps': False,
                'errors': ['device_plugin_sharing_profiles must be a dict of profile name -> settings, got %s'
                           % type(profiles).__name__]}
    hosts = list(hosts or [])
    named = {}
    for host in hosts:
        value = _host_value(hostvars or {}, host, SHARING_HOST_VAR)
        if value not in (None, ''):
            named[host] = str(value)
    if not profiles:
        if named or default_profile:
            errors.append('%s names a sharing profile, but device_plugin_sharing_profiles defines none'
                          % ('device_plugin_sharing_default_profile' if default_profile and not named
                             else '%s of %s' % (SHARING_HOST_VAR, ', '.join(sorted(named)))))
        return {'configs': {}, 'default': '', 'labels': {}, 'mps': False, 'errors': errors}
    if _truthy(time_slicing_enabled):
        errors.append('device_plugin_time_slicing_enabled (one sharing for the whole cluster) and '
                      'device_plugin_sharing_profiles (sharing per node pool) cannot be combined: give the time-slicing '
                      'as a profile')
    if mig_layouts not in (None, {}) or any(isinstance(p, dict) and p.get('sharing') == 'mig' for p in profiles.values()):
        errors.extend(mig.layouts_errors(mig_layouts if mig_layouts is not None else {}))
    configs = {}
    for name in sorted(profiles, key=str):
        profile = profiles[name]
        where = 'device_plugin_sharing_profiles.%s' % name
        if not _LABEL_VALUE.match(str(name)):
            errors.append('%s: a profile name is a Kubernetes label value (at most 63 letters, digits, -, _ or ., '
                          'starting and ending with a letter or digit)' % where)
            continue
        if not isinstance(profile, dict):
            errors.append('%s must be a dict (sharing, replicas, ...), got %s' % (where, type(profile).__name__))
            continue
        unknown = sorted(set(profile) - set(_PROFILE_KEYS))
        if unknown:
            errors.append('%s: unknown setting %s (known: %s)' % (where, ', '.join(unknown), ', '.join(_PROFILE_KEYS)))
        kind = str(profile.get('sharing', 'none'))
        if kind not in SHARING_KINDS:
            errors.append('%s.sharing must be one of %s, got %s' % (where, ', '.join(SHARING_KINDS), kind))
            continue
        if kind == 'mig':
            mig_errors = _mig_profile_errors(where, profile, mig_layouts)
            if mig_errors:
                errors.extend(mig_errors)
                continue
        elif any(key in profile for key in _MIG_KEYS):
            errors.append('%s: %s are settings of a MIG profile (sharing mig), not of sharing %s'
                          % (where, ' and '.join(k for k in _MIG_KEYS if k in profile), kind))
            continue
        if kind not in ('none', 'mig'):
            try:
                replicas = _int(profile.get('replicas'))
            except (TypeError, ValueError):
                replicas = None
            if replicas is None or replicas < 2:
                errors.append('%s.replicas must be a number, 2 or more, for %s, got %s'
                              % (where, kind, profile.get('replicas')))
                continue
        if kind == 'mps' and mig_strategy != 'none':
            errors.append('%s: MPS does not work on MIG devices (device_plugin_mig_strategy is %s): use time-slicing, '
                          'or whole GPUs for this pool' % (where, mig_strategy))
            continue
        if kind == 'mps' and not _truthy(gfd_enabled):
            errors.append('%s: MPS needs GPU Feature Discovery (device_plugin_gfd_enabled): the MPS control daemon runs '
                          'only on the nodes GFD labels nvidia.com/mps.capable' % where)
            continue
        if kind == 'time-slicing' and mig_strategy == 'mixed':
            errors.append('%s: time-slicing shares nvidia.com/gpu only; with device_plugin_mig_strategy=mixed the '
                          'resources are nvidia.com/mig-*' % where)
            continue
        configs[str(name)] = sharing_config(profile, mig_strategy)
    default = str(default_profile or '')
    if default and default not in profiles:
        errors.append('device_plugin_sharing_default_profile is %s, which device_plugin_sharing_profiles does not '
                      'define (defined: %s)' % (default, ', '.join(sorted(map(str, profiles)))))
    if not default:
        default = SHARING_DEFAULT_NAME
        if default in profiles and str(profiles[default].get('sharing', 'none') if isinstance(profiles[default], dict)
                                       else '') != 'none':
            errors.append('device_plugin_sharing_profiles.%s is not whole GPUs (sharing none), but it is the name of the '
                          'default for nodes that name no profile: set device_plugin_sharing_default_profile, or '
                          'rename it' % default)
        configs.setdefault(default, sharing_config({'sharing': 'none'}, mig_strategy))
    for host, name in sorted(named.items()):
        if name not in profiles:
            errors.append('%s of %s is %s, which device_plugin_sharing_profiles does not define (defined: %s)'
                          % (SHARING_HOST_VAR, host, name, ', '.join(sorted(map(str, profiles)))))
    used = set(named.values()) | {default}
    mps = any('mps' in (configs.get(name) or {}).get('sharing', {}) for name in used)
    pools = dict((str(n), str(p['mig_layout'])) for n, p in profiles.items()
                 if str(n) in configs and isinstance(p, dict) and p.get('sharing') == 'mig')
    return {'configs': configs, 'default': default, 'labels': named, 'mps': mps, 'errors': errors,
            'mig_layouts': pools,
            'layouts': mig.layout_file(mig_layouts)['mig-configs'] if pools and isinstance(mig_layouts, dict) else {}}


# Our mark on a Node whose SHARING_LABEL this collection set: only such a label is changed or removed later.
SHARING_MARK = 'baremetal.gpu/device-plugin-config'


def _host_node_names(hostvars, host):
    """The names a GPU host's Node may have, in order: baremetal_gpu_node_name, the host's node name (facts), the
    inventory name (as the maintenance engine maps hosts, without the addresses)."""
    names = [_host_value(hostvars or {}, host, 'baremetal_gpu_node_name'), _host_value(hostvars or {}, host, 'nodename'),
             host]
    return [str(n) for n in names if n]


def sharing_label_changes(nodes, labels, hostvars, hosts):
    """The Node label changes that make each GPU host's Node carry its profile (``labels``: host -> profile, from
    sharing_plan) as SHARING_LABEL, from the Nodes as read (``nodes``).

    Only the Nodes of ``hosts`` are touched. A label we set (SHARING_MARK on the Node) is changed or removed as the
    inventory says; a label someone else set is never changed: a different value is refused (error), the same value
    is left as it is, unmarked. Returns {patches: [{node, host, labels, annotations}], errors, unmapped}: a patch is a
    JSON merge patch of metadata (null removes)."""
    from ansible_collections.baremetal.gpu.plugins.module_utils.maintenance_mapping import map_node  # pylint: disable=import-outside-toplevel
    nodes = list(nodes or [])
    by_name = dict(((n.get('metadata') or {}).get('name'), n) for n in nodes)
    patches, errors, unmapped = [], [], []
    for host in hosts or []:
        mapped = map_node(host, _host_node_names(hostvars, host), [], nodes)
        if not mapped:
            if host in labels:
                unmapped.append(host)
            continue
        meta = by_name[mapped['name']].get('metadata') or {}
        current = (meta.get('labels') or {}).get(SHARING_LABEL)
        ours = (meta.get('annotations') or {}).get(SHARING_MARK) == 'true'
        wanted = labels.get(host)
        if current == wanted and (ours or wanted is None):
            continue
        if current is not None and not ours:
            if wanted is not None and current != wanted:
                errors.append('Node %s (host %s) has %s=%s, set by someone else; the inventory asks for %s. Remove that '
                              'label, or set baremetal_gpu_sharing_profile of %s to %s'
                              % (mapped['name'], host, SHARING_LABEL, current, wanted, host, current))
            continue
        if wanted is None:
            patches.append({'node': mapped['name'], 'host': host, 'labels': {SHARING_LABEL: None},
                            'annotations': {SHARING_MARK: None}})
        else:
            patches.append({'node': mapped['name'], 'host': host, 'labels': {SHARING_LABEL: wanted},
                            'annotations': {SHARING_MARK: 'true'}})
    return {'patches': patches, 'errors': errors, 'unmapped': unmapped}


def sharing_label_removals(nodes):
    """The uninstall's patches: SHARING_LABEL and SHARING_MARK off every Node that carries our mark (whoever's host it
    is now); a Node without the mark is left alone. The patches have the shape of sharing_label_changes' (host None)."""
    patches = []
    for node in nodes or []:
        meta = node.get('metadata') or {}
        if SHARING_MARK in (meta.get('annotations') or {}):
            patches.append({'node': meta.get('name'), 'host': None, 'labels': {SHARING_LABEL: None},
                            'annotations': {SHARING_MARK: None}})
    return patches
