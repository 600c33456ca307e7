# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Decisions of the cluster layer (RuntimeClass, device plugin, dcgm-exporter, dashboard), as pure functions.

Used by the filter plugins in plugins/filter/cluster_addons.py; unit-tested on recorded objects
and the real counters lists and dashboard carried by the roles.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

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


def expected_capacity(hostvars, hosts, mig_strategy, replicas, resource='nvidia.com/gpu'):
    """What each GPU node must advertise (verify's cluster checks), from what nvidia-smi showed on it (its
    ``verify_observed`` fact): ``device_plugin_gpus[mig_strategy]`` (GPUs, or MIG devices with the single strategy)
    times ``replicas``. One row per host: ``host``, ``node``, ``check`` (compare the node's capacity), ``refused``
    (the device plugin refuses such a node), ``gpus``, ``units``, ``expected``, ``gfd_count`` (the
    nvidia.com/gpu.count label GFD sets; None with the mixed strategy), ``reason`` when not checked."""
    replicas = int(replicas)
    rows = []
    for host in hosts or []:
        host_vars = hostvars[host] if host in hostvars else {}
        seen = host_vars.get('verify_observed')
        row = {'host': host, 'check': False, 'refused': False, 'gpus': 0, 'units': None, 'expected': None,
               'gfd_count': None}
        if seen is None:
            row.update(node=host_vars.get('baremetal_gpu_node_name') or host,
                       reason='nvidia-smi was not read there (the node checks did not run on it)')
            rows.append(row)
            continue
        gpus = int(seen['gpu_count']) if seen['status'] == 'ok' else 0
        units = seen['device_plugin_gpus'][mig_strategy]
        row.update(node=seen['node_name'], gpus=gpus, units=units)
        if gpus == 0:
            row['reason'] = ('it shows no GPU through nvidia-smi (%s), so no %s is expected of it'
                             % (seen['summary'], resource))
        elif units is None:
            row.update(refused=True, reason='MIG is on for only some of its GPUs, or a GPU has MIG on without MIG '
                                            'devices: the device plugin refuses such a node with verify_mig_strategy='
                                            '%s (%s)' % (mig_strategy, seen['summary']))
        elif int(units) == 0:
            row['reason'] = ('every GPU has MIG on; with verify_mig_strategy=mixed its MIG devices are advertised as '
                             'nvidia.com/mig-<profile>, which is not checked')
        else:
            row.update(check=True, expected=int(units) * replicas,
                       gfd_count=None if mig_strategy == 'mixed' else int(units))
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
