# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filters host_rollout_node and host_rollout_plan: arguments passed through, errors as filter errors.

The decisions themselves are tested in tests/unit/plugins/module_utils/test_host_rollout.py.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.baremetal.gpu.plugins.filter import hostvars as hostvars_filters
from ansible_collections.baremetal.gpu.plugins.filter import maintenance as filters

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'rke2')
with open(os.path.join(FIXTURES, 'config.toml.before')) as handle:
    BEFORE = handle.read()

FACTS = {'container': True, 'gpus': [], 'nouveau_loaded': False, 'nvidia_loaded_version': '',
         'driver_installed_versions': [],
         'rke2': {'present': True, 'unit': 'rke2-server', 'role': 'server', 'role_reason': 'only rke2-server is installed',
                  'units_installed': ['rke2-server'], 'units_enabled': ['rke2-server']}}


def test_node_filter():
    got = filters.FilterModule().filters()['maintenance_node'](FACTS, None, BEFORE, True, None, None, '/c.toml')
    assert got['restart'] == ['the nvidia runtime is missing from /c.toml']
    assert got['disruptive'] is True and got['role'] == 'server'


def test_plan_filter_and_its_errors():
    plan = filters.FilterModule().filters()['maintenance_plan']
    got = plan(['s1', 'x'], 1, '25%', {'s1': {'in_cluster': True, 'role': 'server', 'disruptive': True},
                                       'x': {'in_cluster': False}}, None)
    # A node outside the cluster never shares a batch with a node of the cluster.
    assert got['batches'] == [['x'], ['s1']]
    with pytest.raises(AnsibleFilterError, match='node_maintenance_batch_size must be at least 1'):
        plan(['s1'], 0, '25%', {}, None)


@pytest.mark.parametrize('run_tags, skip_tags, restart', [
    (['all'], [], True),
    (['rke2_nvidia_runtime'], [], True),
    (['rke2_nvidia_runtime_service'], [], True),
    (['nvidia_driver'], [], False),
    (['all'], ['rke2_nvidia_runtime'], False),
])
def test_only_the_reasons_of_roles_that_run_count(run_tags, skip_tags, restart):
    facts = dict(FACTS, nouveau_loaded=True)
    got = filters.FilterModule().filters()['maintenance_node'](facts, None, BEFORE, True, None, None, 'c', run_tags, skip_tags)
    assert bool(got['restart']) is restart
    driver_runs = 'nvidia_driver' in run_tags or 'all' in run_tags
    assert got['reboot'] == (['nouveau is loaded'] if driver_runs else [])


@pytest.mark.parametrize('run_tags, skip_tags, counts', [
    (['all'], [], True),
    (['mig_manager'], [], True),
    (['nvidia_driver'], [], False),
    (['all'], ['mig_manager'], False),
])
def test_a_mig_layout_to_apply_takes_a_node_of_a_cluster_out_of_service(run_tags, skip_tags, counts):
    """mig_manager's decide step says why the GPUs must change: a mode change resets them, so the node is disruptive
    (in a batch of its own) when the play's tags let mig_manager run."""
    reasons = ['the GPUs do not have MIG layout all-1g.10gb (nvidia-mig-parted assert)']
    got = filters.FilterModule().filters()['maintenance_node'](
        FACTS, None, BEFORE, True, None, None, 'c', run_tags, skip_tags, None, None, False, reasons)
    assert got['mig'] == (reasons if counts else [])
    # The runtime's restart (the fixture's config lacks the nvidia runtime) is what else can disrupt it here.
    assert got['disruptive'] is bool(counts or got['restart'])
    quiet = filters.FilterModule().filters()['maintenance_node'](
        dict(FACTS, rke2=dict(FACTS['rke2'], present=False)), None, '', True, None, None, 'c', run_tags, skip_tags,
        None, None, False, reasons)
    assert quiet['restart'] == [] and quiet['disruptive'] is counts


def test_host_values_reads_a_path_some_hosts_lack():
    # hostvars as the planning plays see them: the map of a host whose Node was found (maintenance_node_name's
    # answer), none for a host no Node maps to, nothing at all for a host whose planning task was skipped.
    hostvars = {'gpu-a': {'__upgrade_map': {'name': 'n-gpu-a', 'by': 'name'}, '__node_maintenance_failed': True},
                'gpu-b': {'__upgrade_map': None, '__node_maintenance_failed': False},
                'gpu-c': {'__upgrade_map': {}},
                'gpu-d': {},
                'gpu-e': {'__upgrade_map': 'not a mapping'}}
    hosts = ['gpu-a', 'gpu-b', 'gpu-c', 'gpu-d', 'gpu-e']
    assert hostvars_filters.host_values(hosts, hostvars, '__upgrade_map.name') == {
        'gpu-a': 'n-gpu-a', 'gpu-b': None, 'gpu-c': None, 'gpu-d': None, 'gpu-e': None}
    assert hostvars_filters.host_values(hosts, hostvars, '__node_maintenance_failed', False) == {
        'gpu-a': True, 'gpu-b': False, 'gpu-c': False, 'gpu-d': False, 'gpu-e': False}
    # A host listed twice (k8s_control and gpu_nodes) once, in the first place it appears.
    assert list(hostvars_filters.host_values(['gpu-b', 'gpu-a', 'gpu-b'], hostvars, '__upgrade_map.by', '')) == ['gpu-b', 'gpu-a']
    assert hostvars_filters.host_values([], hostvars, '__upgrade_map.name') == {}
