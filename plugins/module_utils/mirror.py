# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Images from the site's own registry: the chart values that move every image a chart renders, and one image
reference moved.

A site registry (``cluster_addons_image_registry``, e.g. ``registry.site`` or ``registry.site:5000/mirror``) takes
the place of the public registry of each image and keeps the image's path: ``nvcr.io/nvidia/k8s-device-plugin``
becomes ``registry.site/nvidia/k8s-device-plugin``, ``quay.io/prometheus/prometheus`` becomes
``registry.site/prometheus/prometheus``, as kube-prometheus-stack's own ``global.imageRegistry`` does. A per-source
mapping (``cluster_addons_image_registry_map``, e.g. ``{nvcr.io: registry.site/nvcr}``) sends the images of one
source elsewhere; the registry takes the public sources the mapping does not name.

How each pinned chart is told: CHART_IMAGES, per chart, the values that name an image (their default is the chart's
own, checked against the real charts by tests/integration/test_charts.py) and where its pull secrets go.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

# The public registries the charts and the verify pod pull from, and those a site mirrors most; an image with no
# registry host is Docker Hub's (``busybox`` is ``docker.io/library/busybox``), which has other names too.
DOCKER_HUB = 'docker.io'
_DOCKER_HUB_ALIASES = ('registry-1.docker.io', 'index.docker.io')
PUBLIC_REGISTRIES = ('nvcr.io', DOCKER_HUB) + _DOCKER_HUB_ALIASES + (
    'quay.io', 'registry.k8s.io', 'k8s.gcr.io', 'gcr.io', 'ghcr.io', 'public.ecr.aws', 'mcr.microsoft.com')

# A registry as a container runtime takes it: a host (DNS name or IPv4) with an optional port (a mapping's source),
# then an optional path (a site registry); no scheme, no tag, no trailing slash.
_HOST_PATTERN = r'[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?(:[0-9]{1,5})?'
_HOST = re.compile(r'^%s$' % _HOST_PATTERN)
_REGISTRY = re.compile(r'^(?=.{1,253}$)%s(/[a-z0-9]+([._-][a-z0-9]+)*)*$' % _HOST_PATTERN)
_SECRET_NAME = re.compile(r'^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$')

# Per chart: the values that name an image ('repository': a path whose value is registry/path, rewritten whole;
# 'global_registry': the chart's global.imageRegistry, which its templates and subcharts put in front of every image;
# 'registry': a path whose value is one image's registry) with the chart's default, and where the pull secrets go
# ('names': a list of names, 'refs': a list of {name: ...}). tests/integration/test_charts.py reads the defaults in
# the real charts.
CHART_IMAGES = {
    'dcgm-exporter': {
        'repository': {'image.repository': 'nvcr.io/nvidia/k8s/dcgm-exporter'},
        'pull_secrets': {'imagePullSecrets': 'refs'},
    },
    'nvidia-device-plugin': {
        # GPU Feature Discovery runs the device plugin's image; NFD is a subchart (alias nfd).
        'repository': {'image.repository': 'nvcr.io/nvidia/k8s-device-plugin',
                       'nfd.image.repository': 'registry.k8s.io/nfd/node-feature-discovery'},
        'pull_secrets': {'imagePullSecrets': 'refs', 'nfd.imagePullSecrets': 'refs'},
    },
    'kube-prometheus-stack': {
        # global.imageRegistry reaches every image of the chart and its subcharts (Grafana and its sidecars, kube-state-
        # metrics, node-exporter), the operator's --prometheus-config-reloader and --thanos-default-base-image
        # arguments, Prometheus' and Alertmanager's images in their resources, the admission webhook's patch job. It
        # wins over each image's own registry, so a per-source mapping sets each image's registry instead
        # ('registry': the value that holds an image's registry, with the chart's default source).
        'global_registry': 'global.imageRegistry',
        'registry': {
            'crds.upgradeJob.image.busybox.registry': 'docker.io',
            'crds.upgradeJob.image.kubectl.registry': 'registry.k8s.io',
            'alertmanager.alertmanagerSpec.image.registry': 'quay.io',
            'prometheusOperator.admissionWebhooks.deployment.image.registry': 'quay.io',
            'prometheusOperator.admissionWebhooks.patch.image.registry': 'ghcr.io',
            'prometheusOperator.image.registry': 'quay.io',
            'prometheusOperator.prometheusConfigReloader.image.registry': 'quay.io',
            'prometheusOperator.thanosImage.registry': 'quay.io',
            'prometheus.prometheusSpec.image.registry': 'quay.io',
            'thanosRuler.thanosRulerSpec.image.registry': 'quay.io',
            'grafana.image.registry': 'docker.io',
            'grafana.testFramework.image.registry': 'docker.io',
            'grafana.downloadDashboardsImage.registry': 'docker.io',
            'grafana.initChownData.image.registry': 'docker.io',
            'grafana.sidecar.image.registry': 'quay.io',
            'grafana.imageRenderer.image.registry': 'docker.io',
            'kube-state-metrics.image.registry': 'registry.k8s.io',
            'kube-state-metrics.kubeRBACProxy.image.registry': 'quay.io',
            'prometheus-node-exporter.image.registry': 'quay.io',
            'prometheus-node-exporter.kubeRBACProxy.image.registry': 'quay.io',
            'prometheus-node-exporter.permissionInitContainer.image.registry': 'quay.io',
            'prometheus-windows-exporter.image.registry': 'ghcr.io',
        },
        'pull_secrets': {'global.imagePullSecrets': 'refs'},
    },
}


def secret_names(value):
    """The pull secrets setting as a list of names: a list as it is, a string (``-e name=a,b``) split at commas."""
    if isinstance(value, str):
        return [name.strip() for name in value.split(',') if name.strip()]
    return value


def registry_map(value):
    """The per-source mapping as a dict: a mapping as it is, a string (``-e``) as JSON or ``source=target,...``;
    Docker Hub's other names count as docker.io."""
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return {}
        if text.startswith('{'):
            value = json.loads(text)
        else:
            value = dict(pair.split('=', 1) if '=' in pair else (pair, '') for pair in text.split(','))
    if not isinstance(value, dict):
        raise ValueError('not a mapping: %s' % type(value).__name__)
    return dict((DOCKER_HUB if key in _DOCKER_HUB_ALIASES else key, target) for key, target in value.items())


def registry_errors(registry, pull_secrets, mapping=None, var='cluster_addons_image_registry',
                    secrets_var='cluster_addons_image_pull_secrets', map_var='cluster_addons_image_registry_map'):
    """Why these settings cannot be used (a list of messages naming the variable), empty when they can."""
    errors = []
    try:
        mapping = registry_map(mapping or {})
    except (TypeError, ValueError) as exc:
        errors.append('%s must map a source registry to a registry of the site ({"nvcr.io": "registry.site/nvcr"}), '
                      'got %s' % (map_var, exc))
        mapping = {}
    for source, target in mapping.items():
        if not isinstance(source, str) or not _HOST.match(source):
            errors.append('%s: each key must be a source registry host such as nvcr.io, got "%s"' % (map_var, source))
        if not isinstance(target, str) or not _REGISTRY.match(target):
            errors.append('%s: "%s" must map to a registry host with an optional port and path (registry.site/nvcr), '
                          'without a scheme, a tag or a trailing slash, got "%s"' % (map_var, source, target))
    pull_secrets = secret_names(pull_secrets)
    if not isinstance(registry, str):
        errors.append('%s must be a registry such as registry.site or registry.site:5000/mirror, got a value of type %s'
                      % (var, type(registry).__name__))
    elif registry and not _REGISTRY.match(registry):
        errors.append('%s must be a registry host with an optional port and path (registry.site:5000/mirror), without '
                      'a scheme, a tag or a trailing slash, got "%s"' % (var, registry))
    if not isinstance(pull_secrets, list):
        errors.append('%s must be a list of Secret names, got a value of type %s' % (secrets_var, type(pull_secrets).__name__))
    else:
        for name in pull_secrets:
            if not isinstance(name, str) or not _SECRET_NAME.match(name):
                errors.append('%s must hold Secret names (lower case, digits, "-" and "."), got "%s"' % (secrets_var, name))
    return errors


def split_image(ref):
    """(registry, path) of an image reference; Docker Hub's when the first component is no host."""
    first, sep, rest = ref.partition('/')
    if sep and ('.' in first or ':' in first or first == 'localhost'):
        return first, rest
    return DOCKER_HUB, ref if sep else 'library/' + ref


def is_public(ref):
    """Whether the image comes from one of PUBLIC_REGISTRIES."""
    return split_image(ref)[0] in PUBLIC_REGISTRIES


def target_registry(source, registry, mapping=None):
    """Where the images of ``source`` go: the mapping's entry for it, else ``registry`` for a public source; None
    when they stay."""
    mapping = registry_map(mapping or {})
    source = DOCKER_HUB if source in _DOCKER_HUB_ALIASES else source
    if mapping.get(source):
        return mapping[source]
    if registry and source in PUBLIC_REGISTRIES:
        return registry
    return None


def mirror_image(ref, registry, mapping=None):
    """The image from where target_registry sends its source, with the same path; as it is when it stays."""
    source, path = split_image(ref)
    target = target_registry(source, registry, mapping)
    return '%s/%s' % (target, path) if target else ref


def _set(values, dotted, value):
    keys = dotted.split('.')
    node = values
    for key in keys[:-1]:
        node = node.setdefault(key, {})
    node[keys[-1]] = value


def mirror_values(chart, registry, pull_secrets=None, mapping=None):
    """The values that move every image of ``chart`` to ``registry`` (or where ``mapping`` sends its source) and
    give its pods ``pull_secrets``."""
    if chart not in CHART_IMAGES:
        raise ValueError('no image table for chart %s (known: %s)' % (chart, ', '.join(sorted(CHART_IMAGES))))
    table = CHART_IMAGES[chart]
    pull_secrets = secret_names(pull_secrets or [])
    mapping = registry_map(mapping or {})
    values = {}
    for path, default in table.get('repository', {}).items():
        moved = mirror_image(default, registry, mapping)
        if moved != default:
            _set(values, path, moved)
    if mapping:
        for path, source in table.get('registry', {}).items():
            target = target_registry(source, registry, mapping)
            if target:
                _set(values, path, target)
    elif registry and table.get('global_registry'):
        _set(values, table['global_registry'], registry)
    if pull_secrets:
        for path, style in table['pull_secrets'].items():
            _set(values, path, [{'name': n} for n in pull_secrets] if style == 'refs' else list(pull_secrets))
    return values


# ---- the list of what to mirror ----------------------------------------------------------------------------------
# An argument that names an image to pull later (the Prometheus Operator's --prometheus-config-reloader=<image> and
# --thanos-default-base-image=<image>): --<name>=<value> whose value has a registry host and a tag or digest.
_IMAGE_ARG = re.compile(r'^--[a-z0-9-]+=(?P<ref>[A-Za-z0-9][-A-Za-z0-9.]*(:[0-9]+)?/[^\s=,]+([:@][^\s=,/]+))$')


def rendered_images(objects):
    """Every image the rendered objects name: each string of an ``image`` key (pods, Prometheus and Alertmanager
    resources) and each argument that names an image (see _IMAGE_ARG)."""
    found = set()

    def walk(node, key=None):
        if isinstance(node, dict):
            for child_key, value in node.items():
                walk(value, child_key)
        elif isinstance(node, list):
            for value in node:
                walk(value, key)
        elif isinstance(node, str):
            if key == 'image' and node:
                found.add(node)
            elif key in ('args', 'command'):
                match = _IMAGE_ARG.match(node)
                if match and '.' in match.group('ref').split('/', 1)[0]:
                    found.add(match.group('ref'))

    for obj in objects:
        walk(obj)
    return sorted(found)


def mirror_list(releases, extra_images=(), registry='', mapping=None):
    """What a site mirrors: ``releases``, a list of {chart, version, chart_ref, repository, objects} with each
    release's objects rendered without a site registry; ``extra_images`` the images pulled outside a chart (the verify
    smoke-test pod); ``registry`` and ``mapping`` where each image goes (mirror_image).
    Returns {images: [{image, source, path, mirror, used_by}], charts: [{chart, version, from}]}, sorted."""
    used_by = {}
    charts = []
    for release in releases:
        ref = str(release.get('chart_ref') or '')
        charts.append({'chart': release['chart'], 'version': str(release['version']),
                       'from': ref if ref.startswith('oci://') else release.get('repository') or ref})
        for image in rendered_images(release['objects']):
            used_by.setdefault(image, set()).add(release['chart'])
    for image in extra_images:
        if image:
            used_by.setdefault(image, set()).add('verify')
    images = []
    for image in sorted(used_by):
        source, path = split_image(image)
        images.append({'image': image, 'source': source, 'path': path, 'mirror': mirror_image(image, registry, mapping),
                       'used_by': sorted(used_by[image])})
    return {'images': images, 'charts': sorted(charts, key=lambda c: c['chart'])}


def mirror_list_text(data):
    """The list as text: one image a line (``<image> <where it goes>`` when that differs), then one chart a line
    (``<chart> <version> <from>``), then per operating system (host_mirror_list) one package a line
    (``<name>=<version> <where from>``)."""
    lines = ['# images (%d)' % len(data['images'])]
    lines += [i['image'] if i['mirror'] == i['image'] else '%s %s' % (i['image'], i['mirror']) for i in data['images']]
    lines += ['# charts (%d)' % len(data['charts'])]
    lines += ['%s %s %s' % (c['chart'], c['version'], c['from']) for c in data['charts']]
    for group in data.get('host_packages') or []:
        archive = group['archive']
        toolkit = group['toolkit']
        lines.append('# host packages of %s (%s): %d from the OS archive (suites %s, components %s), %d from %s%s' % (
            group['os'], ', '.join(group['hosts']), len(archive['packages']), ' '.join(archive['suites']) or '-',
            ' '.join(archive['components']) or '-', len(toolkit['packages']),
            toolkit['repository'] or "NVIDIA's repository (none: container_toolkit_install false)",
            ' (mirrored at %s)' % toolkit['mirror'] if toolkit.get('mirror') else ''))
        lines += ['%s archive' % p for p in archive['packages']]
        lines += ['%s %s' % (p, toolkit['repository']) for p in toolkit['packages']]
        mig = group.get('mig_manager') or {}
        if mig.get('hosts'):
            lines.append('# nvidia-mig-manager for the MIG layouts of %s: %d file(s) of %s' % (
                ', '.join(mig['hosts']), len(mig['files']), MIG_MANAGER_RELEASES))
            lines += ['%s %s' % (f['file'], f['checksum']) for f in mig['files']]
            if mig['unnamed']:
                lines.append('# %s: no mig_manager_package, nvidia-mig-manager must be installed there already' % (
                    ', '.join(mig['unnamed'])))
        lines += ['# error on %s' % e for e in group['errors']]
    return '\n'.join(lines) + '\n'


def _pinned(name, candidates):
    """``name`` as ``name=<apt's candidate>`` when apt named one (a name that is pinned already stays as it is)."""
    if '=' in name:
        return name
    candidate = ((candidates or {}).get(name) or {}).get('candidate')
    return '%s=%s' % (name, candidate) if candidate else name


# Where NVIDIA publishes nvidia-mig-manager's .deb (not an apt repository): what a site copies for mig_manager_package.
MIG_MANAGER_RELEASES = "NVIDIA's mig-parted releases (https://github.com/NVIDIA/mig-parted/releases)"


def host_mirror_list(entries):
    """The host packages a site mirrors, per operating system: ``entries``, one per host, each
    {host, os: {distribution, version, release, architecture}, driver: nvidia_driver's mirror_list fact,
    toolkit: container_toolkit's mirror_list fact (or {} where that role is not applied), mig: mig_manager's
    mirror_list fact ({layout, package, checksum}; absent or {} where that role is not applied)}.

    Returns a list sorted by operating system of {os, hosts, archive: {suites, components, packages},
    toolkit: {repository (NVIDIA's, what a site copies), mirror (the site's, where the role takes them; '' for none),
    packages}, mig_manager: {hosts (those with a MIG layout), files ([{file, checksum}]: mig_manager_package, a URL or
    a controller file), unnamed (hosts with a layout and no mig_manager_package)}, errors}: the packages of the hosts
    of one operating system together, each with apt's candidate version where apt named one (Fabric Manager's
    packages, on a system that needs it, by name: the role pins them to the driver's version when it installs them),
    the archive suites and components they come from, and each host's refusal (a host whose driver decision failed lists it)."""
    groups = {}
    for entry in entries:
        facts = entry.get('os') or {}
        key = '%s %s (%s) %s' % tuple(facts.get(field) or '?'
                                      for field in ('distribution', 'version', 'release', 'architecture'))
        group = groups.setdefault(key, {'os': key, 'hosts': [], 'suites': [], 'components': [], 'packages': set(),
                                        'repository': '', 'mirror': '', 'toolkit': set(), 'errors': [],
                                        'mig_hosts': [], 'mig_files': set(), 'mig_unnamed': []})
        group['hosts'].append(entry['host'])
        driver = entry.get('driver') or {}
        toolkit = entry.get('toolkit') or {}
        for field in ('suites', 'components'):
            group[field] += [item for item in driver.get(field) or [] if item not in group[field]]
        candidates = driver.get('candidates') or {}
        group['packages'].update(_pinned(name, candidates) for name in driver.get('packages') or [])
        group['packages'].update(_pinned(name, candidates) for name in driver.get('fabric_manager') or [])
        group['errors'] += ['%s: %s' % (entry['host'], error) for error in driver.get('errors') or []]
        if toolkit.get('repository'):
            for field in ('repository', 'mirror'):
                if group['toolkit'] and group[field] != (toolkit.get(field) or ''):
                    group['errors'].append('%s: the toolkit %s %s differs from %s of the other hosts of %s' % (
                        entry['host'], field, toolkit.get(field) or '(none)', group[field] or '(none)', key))
                elif not group['toolkit']:
                    group[field] = toolkit.get(field) or ''
            group['toolkit'].update(toolkit.get('packages') or [])
        mig = entry.get('mig') or {}
        if mig.get('layout'):
            group['mig_hosts'].append(entry['host'])
            if mig.get('package'):
                group['mig_files'].add((mig['package'], mig.get('checksum') or ''))
            else:
                group['mig_unnamed'].append(entry['host'])
    return [{'os': g['os'], 'hosts': sorted(g['hosts']),
             'archive': {'suites': g['suites'], 'components': g['components'], 'packages': sorted(g['packages'])},
             'toolkit': {'repository': g['repository'], 'mirror': g['mirror'], 'packages': sorted(g['toolkit'])},
             'mig_manager': {'hosts': sorted(g['mig_hosts']), 'unnamed': sorted(g['mig_unnamed']),
                             'files': [{'file': f, 'checksum': c} for f, c in sorted(g['mig_files'])]},
             'errors': g['errors']}
            for _key, g in sorted(groups.items())]
