# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
name: support
short_description: The facts that cross the collection's roles, from one place
version_added: 0.2.0
description:
  - Returns data defined once in C(plugins/module_utils/support.py) and used by every role that needs it,
    so that the roles, the modules, the README and C(meta/main.yml) cannot disagree.
  - "V(runtime_class_name), the RuntimeClass every role and the verify pod use: C(nvidia), or the value of the one
    collection-wide variable C(baremetal_gpu_runtime_class_name) when set. A name that is not a DNS label, or
    that of a built-in runtime (C(runc), C(crun), ...), fails naming that variable."
  - "V(runtime_handler), the containerd runtime the RuntimeClass points at: C(nvidia), the name RKE2 gives the
    NVIDIA runtime it detects."
  - V(supported_os), the list of C(<distribution>-<major version>) keys the host layer supports;
    V(os_matrix), the rows of that matrix (name, codename, family, whether a test node runs it).
  - V(architectures), the CPU architectures the host layer supports.
  - V(driver_support), NVIDIA's driver branch support table with its source and date.
  - "V(node_name), the Kubernetes node name of the current host: the host variable C(baremetal_gpu_node_name) when
    set (refused, naming it, when Kubernetes would refuse the name), else the machine's node name (C(uname -n)),
    else the inventory name."
  - "V(node_names), the names the current host's Node may have, in the order the maintenance engine tries them
    (filter C(baremetal.gpu.maintenance_node_name)): C(baremetal_gpu_node_name) when set (checked as for V(node_name)),
    the machine's node name, the inventory name."
  - V(dcgm_exporter), what must agree with the pinned dcgm-exporter release (its chart version, the label that
    carries the node name), shared by the dcgm_exporter and kube_prometheus roles and the verification.
  - V(toolkit_packages), the NVIDIA Container Toolkit's packages, shared by the container_toolkit role and the
    uninstall's plan.
  - "V(cluster_components), the cluster layer's components in install order (C(role), C(switch), C(title),
    C(chart): whether it installs a Helm chart), each with C(enabled), the value of its switch variable (true unless
    set; a string such as C(false) given with C(-e) is read as a boolean): C(playbooks/cluster_addons.yml) installs
    the enabled ones in this order, the uninstall takes them off in reverse."
  - V(gpu_holder_services), the host services that keep a GPU open, which a driver change and a GPU reset stop first
    and start again after (the defaults of C(upgrade_stop_services) and C(gpu_health_reset_stop_services)).
  - V(exporter_pause), the Node label that keeps the dcgm-exporter DaemonSet of C(baremetal.gpu.dcgm_exporter) off a
    node (C(label), C(value)) and the label selector of the exporter's pods (C(selector)); a GPU reset sets the
    label, waits for the pod to leave, and removes the label after.
  - V(device_plugin_pause), the same for the pods of C(baremetal.gpu.device_plugin)'s chart (the device plugin, GFD
    and the MPS control daemon); a MIG layout change sets the label around its apply.
  - V(device_plugin_release), V(kube_prometheus_release), V(dcgm_exporter_release), the Helm release of that chart
    role as C(baremetal.gpu.cluster_addons)' install and uninstall take it (C(release_name), C(namespace),
    C(chart_name), C(chart_version), C(chart_repo_url), C(chart_path), C(extra_values), C(adopt)), read from the
    role's variables C(<role>_release_name), C(<role>_namespace), C(<role>_chart_name), C(<role>_chart_version),
    C(<role>_chart_repo_url), C(<role>_chart_path), C(<role>_extra_values) and C(<role>_adopt_release).
  - V(toolkit_record), the file where container_toolkit records the toolkit packages it installed (before installing
    them), read by its uninstall and the uninstall's plan, which purge only those.
  - V(rke2_restart_record), the file where rke2_nvidia_runtime records an RKE2 restart its change needs (before the
    change; cleared once RKE2 restarted), read by the maintenance engine's day-1 and uninstall plans.
author:
  - baremetal.gpu maintainers (@baremetal-gpu)
options:
  _terms:
    description: The names of the data to return.
    required: true
    type: list
    elements: str
    choices: [runtime_class_name, runtime_handler, supported_os, os_matrix, architectures, driver_support, dcgm_exporter,
              node_name, node_names, toolkit_packages, toolkit_record, rke2_restart_record, cluster_components,
              gpu_holder_services, exporter_pause, device_plugin_pause, device_plugin_release, kube_prometheus_release,
              dcgm_exporter_release]
seealso:
  - plugin: baremetal.gpu.driver_branch_status
    plugin_type: filter
  - plugin: baremetal.gpu.kernel_module_flavour
    plugin_type: filter
"""

EXAMPLES = r"""
- name: The RuntimeClass every role uses
  ansible.builtin.debug:
    msg: "{{ lookup('baremetal.gpu.support', 'runtime_class_name') }}"

- name: Refuse an OS the host layer does not support
  ansible.builtin.assert:
    that: (ansible_facts['distribution'] ~ '-' ~ ansible_facts['distribution_major_version'])
          in query('baremetal.gpu.support', 'supported_os')
"""

RETURN = r"""
_raw:
  description:
    - One entry per term. V(supported_os), V(os_matrix), V(architectures), V(node_names), V(toolkit_packages) and
      V(cluster_components) are lists; with C(query()) their items are returned as the list. V(driver_support),
      V(dcgm_exporter), V(exporter_pause), V(device_plugin_pause) and the V(<role>_release) terms are dictionaries.
  type: raw
"""

from ansible.errors import AnsibleLookupError
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.lookup import LookupBase

from ansible_collections.baremetal.gpu.plugins.module_utils import support


def _runtime_class_name(variables, templar):
    override = variables.get(support.RUNTIME_CLASS_VARIABLE)
    if override is not None:
        override = templar.template(override)
    return support.runtime_class_name(override)


def _node_args(variables, templar):
    """(baremetal_gpu_node_name templated, the machine's node name, the inventory name) of the current host."""
    override = variables.get(support.NODE_NAME_VARIABLE)
    if override is not None:
        override = templar.template(override)
    facts = variables.get('ansible_facts') or {}
    return override, facts.get('nodename'), variables.get('inventory_hostname')


def _cluster_components(variables, templar):
    switches = {}
    for row in support.CLUSTER_COMPONENTS:
        if row['switch'] in variables:
            value = templar.template(variables[row['switch']])
            try:
                switches[row['switch']] = boolean(value, strict=True)
            except TypeError:
                raise ValueError('%s must be a boolean; got %r' % (row['switch'], value))
    return support.cluster_components(switches)


def _chart_release(role):
    def release(variables, templar):
        def value_of(name):
            if name not in variables:
                raise ValueError('%s is not defined (the release of %s)' % (name, role))
            return templar.template(variables[name])
        return support.chart_release(role, value_of)
    return release


def _node_name(variables, templar):
    return support.node_name(*_node_args(variables, templar))


def _node_names(variables, templar):
    return support.node_names(*_node_args(variables, templar))


DATA = {
    'runtime_class_name': _runtime_class_name,
    'runtime_handler': lambda variables, templar: support.RUNTIME_HANDLER,
    'supported_os': lambda variables, templar: support.supported_os_keys(),
    'os_matrix': lambda variables, templar: [dict(row) for row in support.OS_MATRIX],
    'architectures': lambda variables, templar: list(support.ARCHITECTURES),
    'driver_support': lambda variables, templar: dict(support.DRIVER_SUPPORT),
    'dcgm_exporter': lambda variables, templar: dict(support.DCGM_EXPORTER),
    'node_name': _node_name,
    'node_names': _node_names,
    'toolkit_packages': lambda variables, templar: list(support.TOOLKIT_PACKAGES),
    'toolkit_record': lambda variables, templar: support.TOOLKIT_RECORD,
    'rke2_restart_record': lambda variables, templar: support.RKE2_RESTART_RECORD,
    'gpu_holder_services': lambda variables, templar: list(support.GPU_HOLDER_SERVICES),
    'exporter_pause': lambda variables, templar: dict(support.EXPORTER_PAUSE),
    'device_plugin_pause': lambda variables, templar: dict(support.DEVICE_PLUGIN_PAUSE),
    'cluster_components': _cluster_components,
}
DATA.update(('%s_release' % role, _chart_release(role)) for role in support.chart_roles())


class LookupModule(LookupBase):

    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        out = []
        for term in terms:
            if term not in DATA:
                raise AnsibleLookupError('baremetal.gpu.support: unknown term %r (known: %s)'
                                         % (term, ', '.join(sorted(DATA))))
            try:
                value = DATA[term](variables or {}, self._templar)
            except ValueError as exc:
                raise AnsibleLookupError(str(exc))
            if isinstance(value, list):
                out.extend(value)
            else:
                out.append(value)
        return out
