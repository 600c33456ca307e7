# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Images from the site's own registry: the chart values that move every image a chart renders, and one image
reference moved.

A site registry (``cluster_addons_image_registry``, e.g. ``registry.site`` or ``registry.site:5000/mirror``) takes
the place of the public registry of each image and keeps the image's path: ``nvcr.io/nvidia/k8s-device-plugin``
becomes ``registry.site/nvidia/k8s-device-plugin``, ``quay.io/prometheus/prometheus`` becomes
``registry.site/prometheus/prometheus``, as kube-prometheus-stack's own ``global.imageRegistry`` does.

How each pinned chart is told: CHART_IMAGES, per chart, the values that name an image (their default is the chart's
own, checked against the real charts by tests/integration/test_charts.py) and where its pull secrets go.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# The public registries the charts and the verify pod pull from, and those a site mirrors most; an image with no
# registry host is Docker Hub's (``busybox`` is ``docker.io/library/busybox``).
PUBLIC_REGISTRIES = ('nvcr.io', 'docker.io', 'registry-1.docker.io', 'index.docker.io', 'quay.io', 'registry.k8s.io',
                     'k8s.gcr.io', 'gcr.io', 'ghcr.io', 'public.ecr.aws', 'mcr.microsoft.com')
DOCKER_HUB = 'docker.io'

# A registry as a container runtime takes it: a host (DNS name or IPv4), an optional port, an optional path; no
# scheme, no tag, no trailing slash.
_REGISTRY = re.compile(r'^(?=.{1,253}$)[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?(:[0-9]{1,5})?(/[a-z0-9]+([._-][a-z0-9]+)*)*$')
_SECRET_NAME = re.compile(r'^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$')

# Per chart: the values that name an image ('repository': a path whose value is registry/path, rewritten whole;
# 'global_registry': the chart's global.imageRegistry, which its templates and subcharts put in front of every image)
# and where the pull secrets go ('names': a list of names, 'refs': a list of {name: ...}).
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
        # arguments, Prometheus' and Alertmanager's images in their resources, the admission webhook's patch job.
        'global_registry': 'global.imageRegistry',
        'pull_secrets': {'global.imagePullSecrets': 'refs'},
    },
}


def secret_names(value):
    """The pull secrets setting as a list of names: a list as it is, a string (``-e name=a,b``) split at commas."""
    if isinstance(value, str):
        return [name.strip() for name in value.split(',') if name.strip()]
    return value


def registry_errors(registry, pull_secrets, var='cluster_addons_image_registry',
                    secrets_var='cluster_addons_image_pull_secrets'):
    """Why these settings cannot be used (a list of messages naming the variable), empty when they can."""
    errors = []
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


def mirror_image(ref, registry):
    """The image from ``registry`` when it comes from a public registry; as it is otherwise or without a registry."""
    if not registry or not is_public(ref):
        return ref
    return '%s/%s' % (registry, split_image(ref)[1])


def _set(values, dotted, value):
    keys = dotted.split('.')
    node = values
    for key in keys[:-1]:
        node = node.setdefault(key, {})
    node[keys[-1]] = value


def mirror_values(chart, registry, pull_secrets=None):
    """The values that move every image of ``chart`` to ``registry`` and give its pods ``pull_secrets``."""
    if chart not in CHART_IMAGES:
        raise ValueError('no image table for chart %s (known: %s)' % (chart, ', '.join(sorted(CHART_IMAGES))))
    table = CHART_IMAGES[chart]
    pull_secrets = secret_names(pull_secrets or [])
    values = {}
    if registry:
        for path, default in table.get('repository', {}).items():
            _set(values, path, mirror_image(default, registry))
        if table.get('global_registry'):
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


def mirror_list(releases, extra_images=(), registry=''):
    """What a site mirrors: ``releases``, a list of {chart, version, chart_ref, repository, objects} with each
    release's objects rendered without a site registry; ``extra_images`` the images pulled outside a chart (the verify
    smoke-test pod); ``registry`` the site's registry, where each public image goes (mirror_image).
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
        images.append({'image': image, 'source': source, 'path': path, 'mirror': mirror_image(image, registry),
                       'used_by': sorted(used_by[image])})
    return {'images': images, 'charts': sorted(charts, key=lambda c: c['chart'])}


def mirror_list_text(data):
    """The list as text: one image a line (``<image> <where it goes>`` when that differs), then one chart a line
    (``<chart> <version> <from>``)."""
    lines = ['# images (%d)' % len(data['images'])]
    lines += [i['image'] if i['mirror'] == i['image'] else '%s %s' % (i['image'], i['mirror']) for i in data['images']]
    lines += ['# charts (%d)' % len(data['charts'])]
    lines += ['%s %s %s' % (c['chart'], c['version'], c['from']) for c in data['charts']]
    return '\n'.join(lines) + '\n'
