# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The facts that cross roles, defined once.

Everything here is data plus pure functions (no I/O), shared by the modules (gpu_node_facts),
the filter and lookup plugins the roles use (baremetal.gpu.support, baremetal.gpu.driver_branch_status,
baremetal.gpu.kernel_module_flavour, baremetal.gpu.gpu_generation) and scripts/role-docs.py, which
writes the README's support matrix and checks each role's meta/main.yml against OS_MATRIX:

- RUNTIME_CLASS_NAME: the RuntimeClass (and containerd runtime handler) every role and the
  verify pod use;
- OS_MATRIX: the operating systems the host layer supports, and which are tested on real nodes;
- DRIVER_SUPPORT: NVIDIA's driver branch support table (kind, end of life), with source and date;
- the rule that maps a PCI device ID to a GPU generation, and with it the choice between the open
  and the proprietary kernel modules.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import re

# --------------------------------------------------------------------------------------------
# The RuntimeClass. RKE2 (and K3s) name the runtime they detect "nvidia" and create a
# RuntimeClass "nvidia" with handler "nvidia" (rke2-runtimeclasses); the articles and the
# device plugin and dcgm-exporter charts use the same name.
RUNTIME_CLASS_NAME = 'nvidia'
RUNTIME_HANDLER = 'nvidia'
# The one variable that overrides RUNTIME_CLASS_NAME for every role (read by the lookup plugin).
RUNTIME_CLASS_VARIABLE = 'baremetal_gpu_runtime_class_name'
# The NVIDIA Container Toolkit's packages (container_toolkit installs them; the uninstall plan asks whether any is
# installed to tell whether taking the toolkit off disrupts the node).
TOOLKIT_PACKAGES = ('nvidia-container-toolkit', 'nvidia-container-toolkit-base', 'libnvidia-container-tools',
                    'libnvidia-container1')
# The host services that keep a GPU open (DCGM's host engine under either unit name, the persistence daemon, Fabric
# Manager): a driver change (roles/upgrade) and a GPU reset (gpu_health's remediation) stop those that run first and
# start them again after; nvidia-smi -r refuses a GPU one of them holds.
GPU_HOLDER_SERVICES = ('nvidia-dcgm', 'dcgm', 'nvidia-persistenced', 'nvidia-fabricmanager')
# The node's dcgm-exporter pod holds the GPU too (its embedded DCGM), and a drain leaves a DaemonSet's pod. dcgm_exporter's
# values keep the DaemonSet off a Node labelled EXPORTER_PAUSE (node affinity NotIn); gpu_health's GPU reset sets the
# label, waits until no pod of its selector is left on the Node, resets, and removes the label (the
# DaemonSet controller then starts the pod again). The GPU Operator pauses its operands the same way
# (nvidia.com/gpu.deploy.<operand> labels).
EXPORTER_PAUSE = {'label': 'baremetal.gpu/dcgm-exporter', 'value': 'paused',
                  'selector': 'app.kubernetes.io/name=dcgm-exporter'}
# The same for the pods of the nvidia-device-plugin chart (the device plugin, GFD and the MPS control daemon share the
# chart's name label and its affinity value): device_plugin's values keep them off a Node labelled DEVICE_PLUGIN_PAUSE,
# and a MIG layout change (roles/mig_manager) sets the label around its apply, as the GPU Operator's MIG manager
# pauses them (nvidia.com/gpu.deploy.device-plugin=paused-for-mig-change). Let back, the plugin starts again and sees
# the new MIG instances.
DEVICE_PLUGIN_PAUSE = {'label': 'baremetal.gpu/device-plugin', 'value': 'paused',
                       'selector': 'app.kubernetes.io/name=nvidia-device-plugin'}
# Where container_toolkit records the toolkit packages it installed (before installing them); its uninstall and the
# uninstall plan purge only those.
TOOLKIT_RECORD = '/var/lib/baremetal-gpu/container_toolkit/installed.json'
# Where rke2_nvidia_runtime records an RKE2 restart its change needs, before the change (cleared once RKE2 restarted);
# the maintenance engine's plans read it, so that a restart a killed run owed puts the node in a batch of its own.
RKE2_RESTART_RECORD = '/var/lib/baremetal-gpu/rke2_nvidia_runtime/restart-pending.json'
# The cluster layer's components, in install order: playbooks/cluster_addons.yml installs the enabled ones in this
# order, playbooks/uninstall.yml takes them off in reverse; cluster_addons' argument_specs choices and the tests read it
# (scripts/role-docs.py --check fails when the choices differ). Each is a role of the collection, switched by its
# variable (true unless set); ``chart``: it installs a pinned Helm chart (docs/charts.md's pins table lists those).
# The order: the RuntimeClass first (device_plugin and dcgm_exporter refuse to install without it), kube_prometheus
# before dcgm_exporter (its ServiceMonitor needs the CRD). Adding a component: a row here, its role, its scenario.
CLUSTER_COMPONENTS = (
    {'role': 'runtime_class', 'switch': 'cluster_addons_runtimeclass_enabled', 'title': 'RuntimeClass', 'chart': False},
    {'role': 'kube_prometheus', 'switch': 'cluster_addons_kube_prometheus_enabled', 'title': 'Kube-prometheus-stack',
     'chart': True},
    {'role': 'device_plugin', 'switch': 'cluster_addons_device_plugin_enabled',
     'title': 'NVIDIA device plugin and GPU Feature Discovery', 'chart': True},
    {'role': 'dcgm_exporter', 'switch': 'cluster_addons_dcgm_exporter_enabled', 'title': 'DCGM exporter', 'chart': True},
)


def cluster_components(switches=None):
    """CLUSTER_COMPONENTS in install order, each with ``enabled``: the value of its switch in ``switches`` (a
    mapping of variable name to value, already a boolean; missing means true)."""
    switches = switches or {}
    return [dict(row, enabled=bool(switches.get(row['switch'], True))) for row in CLUSTER_COMPONENTS]


# The Helm release of a chart component (a CLUSTER_COMPONENTS row with chart true), as cluster_addons' install and
# uninstall take it: each field and the suffix of the role's variable that gives it (<role>_<suffix>). The chart roles
# read it through the support lookup (term <role>_release) instead of restating the mapping.
CHART_RELEASE_FIELDS = (('release_name', 'release_name'), ('namespace', 'namespace'), ('chart_name', 'chart_name'),
                        ('chart_version', 'chart_version'), ('chart_repo_url', 'chart_repo_url'),
                        ('chart_path', 'chart_path'), ('extra_values', 'extra_values'), ('adopt', 'adopt_release'))


def chart_roles():
    """The roles of the chart components, in install order."""
    return [row['role'] for row in CLUSTER_COMPONENTS if row['chart']]


def chart_release(role, value_of):
    """The release of chart role ``role``: {field: value_of('<role>_<suffix>')} for CHART_RELEASE_FIELDS."""
    if role not in chart_roles():
        raise ValueError('%s is not a chart role (%s)' % (role, ', '.join(chart_roles())))
    return dict((field, value_of('%s_%s' % (role, suffix))) for field, suffix in CHART_RELEASE_FIELDS)


# Runtime names containerd and CRI-O already use for something else: never the NVIDIA runtime's.
BUILTIN_RUNTIMES = ('runc', 'crun', 'runsc', 'kata', 'kata-containers', 'youki', 'gvisor', 'default')
_DNS_LABEL = re.compile(r'^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$')


def runtime_class_name(override=None):
    """The RuntimeClass name: ``override`` (the value of baremetal_gpu_runtime_class_name) or RUNTIME_CLASS_NAME.

    Raises ValueError, naming the variable, for a name Kubernetes refuses (not a DNS label) or one of
    the built-in runtimes (runc, crun, ...), which would silently run GPU pods without the NVIDIA runtime.
    """
    if override is None or str(override).strip() == '':
        return RUNTIME_CLASS_NAME
    name = str(override)
    if not _DNS_LABEL.match(name):
        raise ValueError('%s must be a DNS label (lower case letters, digits and "-", at most 63), got %r'
                         % (RUNTIME_CLASS_VARIABLE, name))
    if name in BUILTIN_RUNTIMES:
        raise ValueError('%s must name the NVIDIA runtime\'s RuntimeClass, not the built-in runtime %r (pods would run '
                         'without the NVIDIA runtime); the default is %r' % (RUNTIME_CLASS_VARIABLE, name, RUNTIME_CLASS_NAME))
    return name


# The Kubernetes node name of a host: this host variable, else the machine's node name (uname -n).
NODE_NAME_VARIABLE = 'baremetal_gpu_node_name'
_DNS_SUBDOMAIN = re.compile(r'^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')


def node_name(override, nodename, inventory_hostname):
    """The Kubernetes node name: ``override`` (baremetal_gpu_node_name) or ``nodename`` or the inventory name.

    Raises ValueError, naming the variable, for a value Kubernetes would refuse as a node name.
    """
    if override is not None and str(override).strip() != '':
        name = str(override)
        if len(name) > 253 or not _DNS_SUBDOMAIN.match(name):
            raise ValueError('%s must be a Kubernetes node name (a lower case DNS name such as gpu-01.example.internal), '
                             'got %r' % (NODE_NAME_VARIABLE, name))
        return name
    return str(nodename or inventory_hostname)


def node_names(override, nodename, inventory_hostname):
    """The names a host's Node may have, in the order the maintenance engine tries them (maintenance_node_name):
    ``override`` (baremetal_gpu_node_name, checked as node_name() does), the machine's node name, the inventory name."""
    first = node_name(override, None, None) if override is not None and str(override).strip() != '' else ''
    return [str(n) for n in (first, nodename, inventory_hostname) if n is not None and str(n) != '']


# --------------------------------------------------------------------------------------------
# dcgm-exporter: what changes between exporter releases and must agree across the dcgm_exporter
# chart pin, the Grafana dashboard revision, the GPU alerts and the verify role's Prometheus
# query (FIELD.md A.1: 4.8.3 renamed the label Hostname to hostname; 4.9.0 renames fields and units).
DCGM_EXPORTER = {
    'chart_version': '4.8.2',
    # The label that carries the node's name on every DCGM series of this exporter.
    'node_label': 'Hostname',
    # Grafana dashboard 12239 at the revision written for this exporter's field names and labels:
    # roles/kube_prometheus/files/<file>, from NVIDIA/dcgm-exporter grafana/dcgm-exporter-dashboard.json
    # at commit <revision> (changes listed in <file without .json>.SOURCE.md); sha256 of the file as carried.
    'dashboard': {
        'gnet_id': 12239,
        'revision': 'cffaeb8102bc50ba90fed17c2a9cad8900c3f5fa',
        'file': 'nvidia-dcgm-exporter-dashboard.json',
        'sha256': '1bfb625de1d9397e05b9482771c211215c54d0f09345b9f19030a55f9ef33569',
    },
    # The DCGM fields the GPU alerts of kube_prometheus query (4.9.0 renames fields: they change with the pin).
    'alert_metrics': {
        'xid': 'DCGM_FI_DEV_XID_ERRORS',
        'temperature': 'DCGM_FI_DEV_GPU_TEMP',
        'ecc_dbe': 'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL',
        # The GPU health alerts (the conditions of the gpu_health module). The clock event reasons keep the
        # name of the captured series (tests/fixtures/dcgm-metrics); the pinned exporter's go-dcgm resolves it
        # as the legacy alias of DCGM_FI_DEV_CLOCKS_EVENT_REASONS (field 112).
        'ecc_dbe_aggregate': 'DCGM_FI_DEV_ECC_DBE_AGG_TOTAL',
        'retired_pending': 'DCGM_FI_DEV_RETIRED_PENDING',
        'row_remap_pending': 'DCGM_FI_DEV_ROW_REMAP_PENDING',
        'row_remap_failure': 'DCGM_FI_DEV_ROW_REMAP_FAILURE',
        'clock_events': 'DCGM_FI_DEV_CLOCK_THROTTLE_REASONS',
        'pcie_replay': 'DCGM_FI_DEV_PCIE_REPLAY_COUNTER',
        'nvlink_crc_flit': 'DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL',
        'nvlink_crc_data': 'DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL',
        'nvlink_replay': 'DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL',
        'nvlink_recovery': 'DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL',
    },
}


# --------------------------------------------------------------------------------------------
# Operating systems of the host layer (nvidia_driver, container_toolkit, rke2_nvidia_runtime)
# and of preflight. "key" is "<ansible_facts.distribution>-<distribution_major_version>".
# tested: a test node of this OS runs in `make test` (test_node is its name in scripts/build-images.sh; which
# molecule scenarios use it, scripts/role-docs.py reads from molecule/*/molecule.yml for the README); untested rows
# are implemented from the vendors' documentation.
OS_MATRIX = (
    {'key': 'Debian-12', 'name': 'Debian 12', 'codename': 'bookworm', 'family': 'Debian',
     'galaxy_platform': 'Debian', 'galaxy_version': 'bookworm', 'tested': True, 'test_node': 'debian12'},
    {'key': 'Debian-13', 'name': 'Debian 13', 'codename': 'trixie', 'family': 'Debian',
     'galaxy_platform': 'Debian', 'galaxy_version': 'trixie', 'tested': True, 'test_node': 'debian13'},
    {'key': 'Ubuntu-22', 'name': 'Ubuntu 22.04', 'codename': 'jammy', 'family': 'Debian',
     'galaxy_platform': 'Ubuntu', 'galaxy_version': 'jammy', 'tested': True, 'test_node': 'ubuntu2204'},
    {'key': 'Ubuntu-24', 'name': 'Ubuntu 24.04', 'codename': 'noble', 'family': 'Debian',
     'galaxy_platform': 'Ubuntu', 'galaxy_version': 'noble', 'tested': True, 'test_node': 'ubuntu2404'},
    {'key': 'Ubuntu-26', 'name': 'Ubuntu 26.04', 'codename': 'resolute', 'family': 'Debian',
     'galaxy_platform': 'Ubuntu', 'galaxy_version': 'resolute', 'tested': True, 'test_node': 'ubuntu2604'},
    {'key': 'RedHat-9', 'name': 'RHEL 9', 'codename': '', 'family': 'RedHat',
     'galaxy_platform': 'EL', 'galaxy_version': '9', 'tested': False, 'test_node': ''},
    {'key': 'Rocky-9', 'name': 'Rocky Linux 9', 'codename': '', 'family': 'RedHat',
     'galaxy_platform': 'EL', 'galaxy_version': '9', 'tested': False, 'test_node': ''},
    {'key': 'AlmaLinux-9', 'name': 'AlmaLinux 9', 'codename': '', 'family': 'RedHat',
     'galaxy_platform': 'EL', 'galaxy_version': '9', 'tested': False, 'test_node': ''},
)
ARCHITECTURES = ('x86_64', 'aarch64')


def supported_os_keys():
    """['Debian-12', 'Debian-13', ...]: the keys of OS_MATRIX, in order."""
    return [row['key'] for row in OS_MATRIX]


def os_row(distribution, major_version):
    """The OS_MATRIX row of an OS (ansible_facts distribution and distribution_major_version), or None."""
    key = '%s-%s' % (distribution, major_version)
    for row in OS_MATRIX:
        if row['key'] == key:
            return dict(row)
    return None


# --------------------------------------------------------------------------------------------
# NVIDIA's driver branch support table. Branches absent from NVIDIA's table are not supported by
# NVIDIA (any more, or never were datacenter branches), and are treated like a branch past its
# end of life. "branches" holds NVIDIA's rows; "archive_branches" the branches the archives the
# collection is tested against still offer that NVIDIA's table does not list (each with where it was
# seen), so that a branch a node can get is never unknown here: tests/unit/plugins/module_utils/
# test_support.py fails when a branch seen in the captured apt outputs (tests/fixtures/apt, dkms) is
# in neither. "confirmed": False marks a row NVIDIA's table does not state (kind and end of life unknown).
# The captures the older branches of archive_branches were read from (apt-cache depends of every nvidia-driver-<B>).
_JAMMY_DEPENDS = 'tests/fixtures/apt/ubuntu2204-depends-nvidia-driver.txt'
_RESOLUTE_DEPENDS = 'tests/fixtures/apt/ubuntu2604-depends-nvidia-driver.txt'
DRIVER_SUPPORT = {
    'source': ('NVIDIA, "Supported Drivers and CUDA Toolkit Versions" (R615 documentation, '
               'https://docs.nvidia.com/datacenter/tesla/drivers/615/supported-drivers-and-cuda-toolkit-versions.html: '
               'R535, R580, R595, R610; R620 documentation, '
               'https://docs.nvidia.com/datacenter/tesla/drivers/620/supported-drivers-and-cuda-toolkit-versions.html: '
               'R580, R595, R620, "Only Long Term Support and Production branches are listed. New Feature Branches are '
               'short-lived and do not have an end-of-life date"); '
               'last branch for Maxwell, Pascal and Volta: NVIDIA "CUDA Toolkit, driver and architecture matrix", '
               'https://docs.nvidia.com/datacenter/tesla/drivers/cuda-toolkit-driver-and-architecture-matrix.html'),
    'as_of': '2026-11-24',
    # kind: LTSB = Long Term Support Branch, PB = Production Branch, NFB = New Feature Branch.
    # eol: the month NVIDIA's table gives as end of life; supported through the end of that month.
    'branches': {
        '535': {'kind': 'LTSB', 'eol': '2026-06', 'confirmed': True},
        '580': {'kind': 'LTSB', 'eol': '2028-06', 'confirmed': True},
        '595': {'kind': 'PB', 'eol': '2027-03', 'confirmed': True},
        '610': {'kind': 'NFB', 'eol': '2026-08', 'confirmed': True},
        # UNCONFIRMED: NVIDIA publishes R615 documentation and Ubuntu noble-updates ships 615.71.09 (server
        # flavour and Fabric Manager included), but neither the R615 nor the R620 table has a R615 row, and
        # the R620 table lists only LTSB and PB branches: R615's kind and end of life are not stated.
        '615': {'kind': None, 'eol': None, 'confirmed': False},
        '620': {'kind': 'LTSB', 'eol': '2029-09', 'confirmed': True},
    },
    # Branches the tested archives offer that NVIDIA's table does not list (status "unlisted"), with
    # where they were seen. Ubuntu: restricted/multiverse, 2026-11-23/24 (roles/nvidia_driver/vars/Ubuntu.yml,
    # FIELD.md C.1); Debian: packages.debian.org and the captured simulations in tests/fixtures/apt.
    'archive_branches': {
        '525': 'Ubuntu 22.04 (transitional: 525 -> 535 -> 580, tests/fixtures/apt/ubuntu2204-simulate-525.txt)',
        '550': 'Debian 13 (nvidia-open-kernel-dkms 550.163.01, tests/fixtures/apt/debian13-simulate-open.txt); '
               'Ubuntu 24.04 (transitional to 580; nvidia-fabricmanager-550 in noble-updates)',
        '570': 'Ubuntu 24.04 (transitional to 580; nvidia-fabricmanager-570 in noble-updates)',
        '575': 'Ubuntu 24.04 noble-updates (nvidia-fabricmanager-575)',
        '590': 'Ubuntu 24.04 noble-updates (nvidia-fabricmanager-590; 590 is transitional to 595 in the archive)',
        '390': 'Ubuntu 22.04 (nvidia-driver-390 a real package, ' + _JAMMY_DEPENDS + ')',
        '418': 'Ubuntu 22.04 (nvidia-driver-418-server real; 418 transitional to 430, ' + _JAMMY_DEPENDS + ')',
        '430': 'Ubuntu 22.04 (transitional: 430 -> 440 -> 450 -> 460 -> 470, ' + _JAMMY_DEPENDS + ')',
        '435': 'Ubuntu 22.04 (transitional: 435 -> 455 -> 460 -> 470, ' + _JAMMY_DEPENDS + ')',
        '440': 'Ubuntu 22.04 (transitional to 450, ' + _JAMMY_DEPENDS + ')',
        '450': 'Ubuntu 22.04 (transitional to 460 and 470, ' + _JAMMY_DEPENDS + ')',
        '455': 'Ubuntu 22.04 (transitional to 460, ' + _JAMMY_DEPENDS + ')',
        '460': 'Ubuntu 22.04 (transitional to 470, ' + _JAMMY_DEPENDS + ')',
        '465': 'Ubuntu 22.04 (transitional to 470, ' + _JAMMY_DEPENDS + ')',
        '470': 'Ubuntu 22.04 (nvidia-driver-470 and -470-server real packages, ' + _JAMMY_DEPENDS + ')',
        '495': 'Ubuntu 22.04 (transitional: 495 -> 510 -> 535, ' + _JAMMY_DEPENDS + ')',
        '510': 'Ubuntu 22.04 (transitional to 535, -server to 515-server, ' + _JAMMY_DEPENDS + ')',
        '515': 'Ubuntu 22.04 (transitional to 535, ' + _JAMMY_DEPENDS + ')',
        '520': 'Ubuntu 22.04 (transitional to 535, ' + _JAMMY_DEPENDS + ')',
        '530': 'Ubuntu 22.04 (transitional to 535, ' + _JAMMY_DEPENDS + ')',
        '545': 'Ubuntu 22.04 (nvidia-driver-545 a real package, ' + _JAMMY_DEPENDS + ')',
        '560': 'Ubuntu 26.04 (transitional to 580, ' + _RESOLUTE_DEPENDS + ')',
        '565': 'Ubuntu 22.04 (nvidia-driver-565-server transitional to 580-server, ' + _JAMMY_DEPENDS + ')',
    },
    # R580 is the last branch that supports Maxwell, Pascal and Volta GPUs.
    'last_branch_pre_turing': 580,
    # Blackwell GPUs are supported from R570 (CUDA 12.8).
    'first_branch_blackwell': 570,
    # Open kernel modules: published from R515; NVIDIA's default and recommended flavour from R560.
    'first_open_branch': 515,
    'open_default_from': 560,
}
KIND_NAMES = {'LTSB': 'Long Term Support Branch', 'PB': 'Production Branch', 'NFB': 'New Feature Branch'}


def _month_end(year_month):
    year, month = [int(p) for p in year_month.split('-')]
    if month == 12:
        return datetime.date(year, 12, 31)
    return datetime.date(year, month + 1, 1) - datetime.timedelta(days=1)


def _as_date(today):
    if today is None:
        return datetime.date.today()
    if isinstance(today, datetime.date):
        return today
    return datetime.datetime.strptime(str(today)[:10], '%Y-%m-%d').date()


def known_branches():
    """Every branch the table knows: NVIDIA's rows and the archive branches NVIDIA no longer lists."""
    return sorted(set(DRIVER_SUPPORT['branches']) | set(DRIVER_SUPPORT['archive_branches']))


def driver_branch_status(branch, today=None):
    """Where a driver branch stands in NVIDIA's support table on ``today`` (a date or 'YYYY-MM-DD').

    Returns a dict: branch, listed (in NVIDIA's table), kind, kind_name, eol ('YYYY-MM' or None),
    confirmed (False for a row NVIDIA's table does not state), archive (where the tested archives offer
    a branch NVIDIA no longer lists, else None), supported (listed, confirmed and not past its end of
    life), status ('supported', 'eol', 'unlisted' or 'unconfirmed'), message (one sentence for the play
    output and the preflight report), source, as_of.
    """
    branch = str(branch)
    day = _as_date(today)
    row = DRIVER_SUPPORT['branches'].get(branch)
    out = {'branch': branch, 'listed': row is not None, 'kind': None, 'kind_name': None, 'eol': None,
           'confirmed': bool(row and row.get('confirmed')), 'archive': DRIVER_SUPPORT['archive_branches'].get(branch),
           'source': DRIVER_SUPPORT['source'], 'as_of': DRIVER_SUPPORT['as_of']}
    if row is None:
        listed = ', '.join('R%s (%s, end of life %s)' % (b, r['kind'], r['eol'])
                           for b, r in sorted(DRIVER_SUPPORT['branches'].items()) if r.get('confirmed'))
        seen = (' (the archives still offer it: %s)' % out['archive']) if out['archive'] else ''
        out.update(supported=False, status='unlisted',
                   message='driver branch R%s is not in NVIDIA\'s support table (as of %s: %s): NVIDIA no longer '
                           'supports it%s' % (branch, DRIVER_SUPPORT['as_of'], listed, seen))
        return out
    if not row.get('confirmed'):
        out.update(supported=False, status='unconfirmed',
                   message='driver branch R%s has NVIDIA documentation and packages, but NVIDIA\'s support table (as '
                           'of %s) states neither its kind nor its end of life: support is UNCONFIRMED; R580 (Long '
                           'Term Support Branch) and R595 (Production Branch) are confirmed' % (branch, DRIVER_SUPPORT['as_of']))
        return out
    out.update(kind=row['kind'], kind_name=KIND_NAMES[row['kind']], eol=row['eol'])
    if day > _month_end(row['eol']):
        out.update(supported=False, status='eol',
                   message='driver branch R%s (%s) reached NVIDIA\'s end of life in %s'
                           % (branch, KIND_NAMES[row['kind']], row['eol']))
    else:
        out.update(supported=True, status='supported',
                   message='driver branch R%s is an NVIDIA %s, supported until %s'
                           % (branch, KIND_NAMES[row['kind']], row['eol']))
    return out


def archive_default_branch(real, today=None):
    """The default driver branch of an OS whose archive names its driver packages by branch (Ubuntu), chosen from
    ``real``, the branches the archive really ships (apt.real_branches: not a transitional package for another
    branch): the newest NVIDIA Long Term Support Branch among them that is supported on ``today``, else the newest
    supported branch of another kind; '' when none of them is supported (the caller keeps its own default).
    Returns {branch, real (sorted), reason}: reason is one clause for the play output and the plan's branch reason."""
    real = sorted(set(str(b) for b in real or []), key=int)
    supported = [driver_branch_status(b, today) for b in real]
    supported = [s for s in supported if s['supported']]
    ltsb = [s for s in supported if s['kind'] == 'LTSB']
    pick = (ltsb or supported or [None])[-1]
    if pick is None:
        return {'branch': '', 'real': real, 'reason': ''}
    what = ('the newest NVIDIA %s' % KIND_NAMES['LTSB']) if ltsb else (
        'the newest supported NVIDIA branch (no Long Term Support Branch is a real package here; this one is a %s)'
        % pick['kind_name'])
    return {'branch': pick['branch'], 'real': real,
            'reason': '%s, %s that the archive ships (real packages: %s; the other branch numbers it lists are '
                      'transitional packages for another branch)' % (pick['branch'], what, ', '.join(real))}


# --------------------------------------------------------------------------------------------
# GPU generation from the PCI device ID.
#
# The rule: NVIDIA's open kernel modules README ("Compatible GPUs", NVIDIA/open-gpu-kernel-modules
# README.md) lists every GPU the open modules support, sorted by PCI device ID, and says they
# "can be used on any Turing or later GPU". Its first entry is TITAN RTX, 0x1E02 (Turing); the
# last Ada entry is RTX 2000 Ada Embedded, 0x28F8; every entry from B200, 0x2901, on is a
# Blackwell GPU (B200, GB200, RTX 50xx, RTX PRO Blackwell, GB10, B300, GB300), the generation
# that only the open modules run. Hence, for an NVIDIA display controller (PCI class 0x03xx):
#   device ID <  0x1E00          pre-Turing (Maxwell, Pascal, Volta or older): proprietary modules only
#   0x1E00 <= device ID < 0x2900 Turing, Ampere, Hopper, Ada: open or proprietary
#   device ID >= 0x2900          Blackwell or newer: open modules only
# The family names below are informative (same table, by product name); the decision uses only
# the two thresholds. Checked against the <product_architecture> nvidia-smi reports in the real
# captures of tests/fixtures/nvidia-smi-xml (tests/unit/plugins/module_utils/test_support.py).
TURING_FIRST_DEVICE_ID = 0x1E00
BLACKWELL_FIRST_DEVICE_ID = 0x2900
NVIDIA_VENDOR_ID = 0x10DE

_FAMILIES = (
    # (first, last, family) for device IDs at or above 0x1E00
    (0x1E00, 0x1FFF, 'Turing'),
    (0x2000, 0x20FF, 'Ampere'),
    (0x2100, 0x21FF, 'Turing'),
    (0x2200, 0x22FF, 'Ampere'),
    (0x2300, 0x23FF, 'Hopper'),
    (0x2400, 0x25FF, 'Ampere'),
    (0x2600, 0x28FF, 'Ada Lovelace'),
)
_PRE_TURING_FAMILIES = (
    (0x1D80, 0x1DFF, 'Volta'),
    (0x1B00, 0x1D7F, 'Pascal'),
    (0x1500, 0x15FF, 'Pascal'),
    (0x1700, 0x17FF, 'Maxwell'),
    (0x1300, 0x14FF, 'Maxwell'),
)


def parse_device_id(value):
    """A PCI device ID as an int: 0x2330, '0x2330', '2330', or nvidia-smi's '0x233010DE'; None if not one."""
    if value is None:
        return None
    if isinstance(value, int):
        return value
    text = str(value).strip().lower()
    if text.startswith('0x'):
        text = text[2:]
    if not re.match(r'^[0-9a-f]{1,8}$', text):
        return None
    number = int(text, 16)
    if len(text) == 8:
        # nvidia-smi's pci_device_id: device ID in the upper 16 bits, vendor in the lower.
        number >>= 16
    return number


def gpu_generation(device_id):
    """Classify an NVIDIA GPU by PCI device ID (see the rule above).

    Returns a dict: device_id ('0x2330'), generation ('pre-turing', 'turing-to-ada' or
    'blackwell-or-newer'), family (informative name), open_supported, open_required,
    proprietary_supported. Raises ValueError for a value that is not a device ID.
    """
    number = parse_device_id(device_id)
    if number is None:
        raise ValueError('not a PCI device ID: %r' % (device_id,))
    if number >= BLACKWELL_FIRST_DEVICE_ID:
        generation, family = 'blackwell-or-newer', 'Blackwell or newer'
    elif number >= TURING_FIRST_DEVICE_ID:
        generation = 'turing-to-ada'
        family = next(name for first, last, name in _FAMILIES if first <= number <= last)
    else:
        generation = 'pre-turing'
        family = next((name for first, last, name in _PRE_TURING_FAMILIES if first <= number <= last),
                      'older than Maxwell')
    return {
        'device_id': '0x%04x' % number,
        'generation': generation,
        'family': family,
        'open_supported': generation != 'pre-turing',
        'open_required': generation == 'blackwell-or-newer',
        'proprietary_supported': generation != 'blackwell-or-newer',
    }


def _describe(gpu):
    name = gpu.get('name') or 'NVIDIA GPU'
    return '%s %s (device ID %s, %s)' % (gpu.get('address') or '', name, gpu['device_id'], gpu['family'])


def kernel_module_flavour(requested, branch, gpus):
    """Choose the kernel module flavour: ``requested`` is auto, open or proprietary.

    ``gpus`` is a list of dicts with at least ``device_id`` (and optionally ``address``, ``name``), for
    example gpu_node_facts' ``gpus``. Returns a dict: flavour ('open' or 'proprietary', None on error),
    reason (one sentence), error (None, or the refusal naming the GPU and the rule), gpus (classified).
    The rule: open needs branch >= 515 and Turing or newer; proprietary does not run Blackwell or
    newer; auto picks open for branch >= 560 when every GPU is Turing or newer (or none is visible),
    proprietary otherwise. It also refuses a branch the GPUs cannot run: > 580 on pre-Turing GPUs,
    < 570 on Blackwell.
    """
    if requested not in ('auto', 'open', 'proprietary'):
        return {'flavour': None, 'gpus': [], 'reason': '',
                'error': 'nvidia_driver_kernel_module must be auto, open or proprietary, got %r' % (requested,)}
    branch_number = int(str(branch))
    classified = []
    for gpu in gpus or []:
        row = dict(gpu)
        row.update(gpu_generation(gpu.get('device_id')))
        classified.append(row)
    pre_turing = [g for g in classified if g['generation'] == 'pre-turing']
    blackwell = [g for g in classified if g['generation'] == 'blackwell-or-newer']
    rule = ('rule: PCI device ID < 0x1E00 is pre-Turing (proprietary only), >= 0x2900 is Blackwell or newer '
            '(open only), per NVIDIA open-gpu-kernel-modules README "Compatible GPUs"')
    out = {'flavour': None, 'gpus': classified, 'reason': '', 'error': None}

    if pre_turing and branch_number > DRIVER_SUPPORT['last_branch_pre_turing']:
        out['error'] = ('driver branch R%s does not support %s: R%s is the last branch for Maxwell, Pascal and Volta '
                        'GPUs. Set nvidia_driver_branch to %s or lower'
                        % (branch, '; '.join(_describe(g) for g in pre_turing),
                           DRIVER_SUPPORT['last_branch_pre_turing'], DRIVER_SUPPORT['last_branch_pre_turing']))
        return out
    if blackwell and branch_number < DRIVER_SUPPORT['first_branch_blackwell']:
        out['error'] = ('driver branch R%s does not support %s: Blackwell GPUs need R%s or later. Set '
                        'nvidia_driver_branch to 580 or later' % (branch, '; '.join(_describe(g) for g in blackwell),
                                                                  DRIVER_SUPPORT['first_branch_blackwell']))
        return out
    if pre_turing and blackwell:
        out['error'] = ('this node has pre-Turing GPUs (%s), which need the proprietary modules, and Blackwell GPUs '
                        '(%s), which need the open modules: no kernel module flavour runs both (%s)'
                        % ('; '.join(_describe(g) for g in pre_turing), '; '.join(_describe(g) for g in blackwell), rule))
        return out

    if requested == 'open':
        if pre_turing:
            out['error'] = ('nvidia_driver_kernel_module is open, but the open kernel modules do not run %s (%s). '
                            'Set nvidia_driver_kernel_module to proprietary or auto'
                            % ('; '.join(_describe(g) for g in pre_turing), rule))
        elif branch_number < DRIVER_SUPPORT['first_open_branch']:
            out['error'] = ('nvidia_driver_kernel_module is open, but driver branch R%s has no open kernel modules '
                            '(they start with R%s)' % (branch, DRIVER_SUPPORT['first_open_branch']))
        else:
            out.update(flavour='open', reason='open kernel modules, as asked (nvidia_driver_kernel_module=open)')
        return out
    if requested == 'proprietary':
        if blackwell:
            out['error'] = ('nvidia_driver_kernel_module is proprietary, but the proprietary kernel modules do not run '
                            '%s (%s). Set nvidia_driver_kernel_module to open or auto'
                            % ('; '.join(_describe(g) for g in blackwell), rule))
        else:
            out.update(flavour='proprietary',
                       reason='proprietary kernel modules, as asked (nvidia_driver_kernel_module=proprietary)')
        return out

    # auto
    if blackwell:
        out.update(flavour='open', reason='auto: open, because %s only run with the open modules'
                   % '; '.join(_describe(g) for g in blackwell))
    elif pre_turing:
        out.update(flavour='proprietary', reason='auto: proprietary, because %s cannot run the open modules'
                   % '; '.join(_describe(g) for g in pre_turing))
    elif branch_number < DRIVER_SUPPORT['open_default_from']:
        out.update(flavour='proprietary', reason='auto: proprietary, because branch R%s is older than R%s, from which '
                   'NVIDIA makes the open modules the default' % (branch, DRIVER_SUPPORT['open_default_from']))
    elif classified:
        out.update(flavour='open', reason='auto: open, because branch R%s >= R%s and every GPU is Turing or newer (%s)'
                   % (branch, DRIVER_SUPPORT['open_default_from'], '; '.join(_describe(g) for g in classified)))
    else:
        out.update(flavour='open', reason='auto: open, because branch R%s >= R%s (NVIDIA\'s default) and no NVIDIA GPU '
                   'is visible to check' % (branch, DRIVER_SUPPORT['open_default_from']))
    return out
