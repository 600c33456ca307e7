# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_health decisions on real captures.

- nvidia-smi: every capture in tests/fixtures/nvidia-smi-xml. EXPECTED was written by reading each file's
  <performance_state>, <clocks_event_reasons>/<clocks_throttle_reasons>, <pci_gpu_link_info>, <ecc_errors>,
  <retired_pages>, <remapped_rows> and <fabric> (the survey is in the commit message), not by running the code.
  None of the captures has an ECC error, a retired page or a remapped row. The bad states are tested on a real
  capture with one value changed by the test (the change is named in each test); the row-remap values are those
  of a real A100 quoted in leptonai/gpud PR 80 ("Uncorrectable Error: 4, Pending: Yes").
- kernel log: tests/fixtures/kernel-log (SOURCE.md), expected findings read from the lines and the catalog.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest

from ansible_collections.baremetal.gpu.plugins.module_utils import gpu_health as gh
from ansible_collections.baremetal.gpu.plugins.module_utils import nvidia_smi as smi
from ansible_collections.baremetal.gpu.plugins.module_utils import xid_catalog

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures')


def xml(name):
    with open(os.path.join(FIXTURES, 'nvidia-smi-xml', name), 'rb') as handle:
        return handle.read()


def klog(name):
    with open(os.path.join(FIXTURES, 'kernel-log', name)) as handle:
        return handle.read()


def parsed(name, change=None):
    data = xml(name)
    if change:
        old, new = change
        assert old in data, 'the capture does not contain %r' % old
        data = data.replace(old, new, 1)
    return smi.parse_nvidia_smi_xml(data, health=True)


def brief(findings):
    return [(f['gpu'], f['check'], f['severity'], f['action']) for f in findings]


INFO_GEN = ('pcie_link_gen', 'info', 'NONE')
INFO_WIDTH = ('pcie_link_width', 'info', 'NONE')

# file: (verdict, [(gpu, check, severity, action)])  -- read from the XML, see the module docstring
EXPECTED = {
    # P0, gpu_idle Active, gen 5/5, width 16x/16x, ECC 0, rows not pending, fabric N/A
    'device__h100-80gb-hbm3__580.159.04.xml': ('healthy', []),
    # the same on another lent H100 (P0, gen 5/5 and 16x/16x at lines 85-93, ECC on, fabric N/A at 299-300)
    'device__h100-80gb-hbm3__580.159.04__vm-2026-11-26.xml': ('healthy', []),
    # P8 (idle), gen 1 of 4: power saving; sw_power_cap Active is not a hardware slowdown
    'telegraf__3090-v13.xml': ('healthy', [(0,) + INFO_GEN]),
    # attached_gpus 4 but one <gpu> kept (trimmed by the project): a partial output
    'telegraf__a100-sxm4-v12.xml': ('degraded', [(None, 'partial_output', 'warning', 'RERUN')]),
    # P8, gen 1 of 4, width 8x of 16x
    'telegraf__a10g.xml': ('healthy', [(0,) + INFO_GEN, (0,) + INFO_WIDTH]),
    # two GPUs, each P8, gen 1 of 3, width 8x of 16x
    'telegraf__dual_2070-v13.xml': ('healthy', [(0,) + INFO_GEN, (0,) + INFO_WIDTH,
                                                (1,) + INFO_GEN, (1,) + INFO_WIDTH]),
    'telegraf__dual_2080-v13.xml': ('healthy', [(0,) + INFO_GEN, (0,) + INFO_WIDTH,
                                                (1,) + INFO_GEN, (1,) + INFO_WIDTH]),
    # two GPUs, P8, gen 1 of 4, width 16x of 16x
    'telegraf__dual_a5000-v13.xml': ('healthy', [(0,) + INFO_GEN, (1,) + INFO_GEN]),
    # P0 but gpu_idle Active; gen 3/3, width 4x/4x
    'telegraf__gt-1030.xml': ('healthy', []),
    # hand-trimmed fragment: no max link gen, no max width
    'telegraf__gtx-1070-ti.xml': ('healthy', []),
    # P8, gen 1 of 3
    'telegraf__gtx-1660-ti.xml': ('healthy', [(0,) + INFO_GEN]),
    'telegraf__pro-6000-maxq-blackwell-v13.xml': ('healthy', [(0,) + INFO_GEN]),
    # P8, gen 1 of 3, width 8x of 16x
    'telegraf__quadro-p2000-v12.xml': ('healthy', [(0,) + INFO_GEN, (0,) + INFO_WIDTH]),
    'telegraf__quadro-p400.xml': ('healthy', [(0,) + INFO_GEN]),
    'telegraf__rtx-3060-v12.xml': ('healthy', [(0,) + INFO_GEN]),
    # P8 but gen 4/4, width 16x/16x
    'telegraf__rtx-3080-v12.xml': ('healthy', []),
    # P2, gen 4/4, 16x/16x
    'telegraf__rtx-3080-v13.xml': ('healthy', []),
    'telegraf__rtx-3090-v12.xml': ('healthy', [(0,) + INFO_GEN]),
    'telegraf__rtx-4000-sff-ada-v13.xml': ('healthy', [(0,) + INFO_GEN]),
    # P0 and no clocks_throttle_reason Active (not idle): width 8x of 16x under load is a fault
    'telegraf__tesla-t4.xml': ('degraded', [(0, 'pcie_link_width', 'warning', 'CHECK_MECHANICALS')]),
    # vGPU guest: everything N/A
    'telegraf__tesla_p4.xml': ('healthy', []),
    # P8, gen 3/3, 16x/16x; retired pages 0, pending No
    'telegraf__tesla_t4.xml': ('healthy', []),
}


def test_every_capture_is_covered():
    names = [n for n in os.listdir(os.path.join(FIXTURES, 'nvidia-smi-xml')) if n.endswith('.xml')]
    assert sorted(EXPECTED) == sorted(names)


@pytest.mark.parametrize('name', sorted(EXPECTED))
def test_capture(name):
    want_verdict, want = EXPECTED[name]
    findings = gh.smi_findings(parsed(name))
    assert brief(findings) == want
    assert gh.verdict(findings) == want_verdict


def test_health_fields_of_the_h100_capture():
    health = parsed('device__h100-80gb-hbm3__580.159.04.xml')['gpus'][0]['health']
    assert health == {
        'ecc_volatile_uncorrectable': 0, 'ecc_aggregate_uncorrectable': 0, 'sram_threshold_exceeded': False,
        'unrepairable_memory': False, 'retired_pages_sbe': None, 'retired_pages_dbe': None,
        'retired_pages_pending': None, 'remapped_rows_correctable': 0, 'remapped_rows_uncorrectable': 0,
        'remapped_rows_pending': False, 'remapped_rows_failure': False,
        'clocks_event_reasons': {'gpu_idle': True, 'applications_clocks_setting': False, 'sw_power_cap': False,
                                 'hw_slowdown': False, 'hw_thermal_slowdown': False,
                                 'hw_power_brake_slowdown': False, 'sync_boost': False,
                                 'sw_thermal_slowdown': False, 'display_clocks_setting': False},
        'performance_state': 'P0', 'pcie_gen_max': 5, 'pcie_gen_current': 5, 'pcie_width_max': 16,
        'pcie_width_current': 16, 'pcie_replay_counter': 0, 'fabric_state': None, 'fabric_status': None,
        'processes': 0,
    }


def test_processes_are_counted_from_real_captures():
    # tesla_t4.xml lists 15 <process_info> under its one GPU (30 tags, open and close); rtx-3080-v12.xml 5.
    assert parsed('telegraf__tesla_t4.xml')['gpus'][0]['health']['processes'] == 15
    assert parsed('telegraf__rtx-3080-v12.xml')['gpus'][0]['health']['processes'] == 5


def test_older_dtd_ecc_layout_reads_na_as_none():
    # quadro-p400: <ecc_errors><volatile><double_bit><total>N/A (driver 418, no DOCTYPE)
    health = parsed('telegraf__quadro-p400.xml')['gpus'][0]['health']
    assert health['ecc_volatile_uncorrectable'] is None
    assert health['retired_pages_pending'] is None


def test_the_plain_parse_is_unchanged():
    facts = smi.parse_nvidia_smi_xml(xml('device__h100-80gb-hbm3__580.159.04.xml'))
    assert 'health' not in facts['gpus'][0]


H100 = 'device__h100-80gb-hbm3__580.159.04.xml'


def test_row_remap_pending_is_critical_reset_gpu():
    # changed: remapped_row_unc 0 -> 4 and pending No -> Yes (the values gpud PR 80 quotes from a real A100)
    data = xml(H100).replace(b'<remapped_row_unc>0</remapped_row_unc>', b'<remapped_row_unc>4</remapped_row_unc>', 1)
    data = data.replace(b'<remapped_row_pending>No', b'<remapped_row_pending>Yes', 1)
    facts = smi.parse_nvidia_smi_xml(data, health=True)
    findings = gh.smi_findings(facts)
    assert brief(findings) == [(0, 'row_remap_pending', 'critical', 'RESET_GPU')]
    assert '4 uncorrectable' in findings[0]['detail']
    assert findings[0]['pci_bus_id'] == '00000000:00:06.0'
    assert gh.verdict(findings) == 'unhealthy'


def test_row_remap_failure_is_contact_support():
    facts = parsed(H100, (b'<remapped_row_failure>No', b'<remapped_row_failure>Yes'))
    assert brief(gh.smi_findings(facts)) == [(0, 'row_remap_failure', 'critical', 'CONTACT_SUPPORT')]


def test_volatile_uncorrectable_ecc():
    # changed: the volatile dram_uncorrectable 0 -> 2 (the first such element is the volatile one)
    facts = parsed(H100, (b'<dram_uncorrectable>0', b'<dram_uncorrectable>2'))
    findings = gh.smi_findings(facts)
    assert brief(findings) == [(0, 'ecc_volatile_uncorrectable', 'critical', 'RESET_GPU')]


def test_aggregate_only_uncorrectable_ecc_is_a_warning():
    data = xml(H100)
    at = data.index(b'<aggregate>')
    data = data[:at] + data[at:].replace(b'<dram_uncorrectable>0', b'<dram_uncorrectable>3', 1)
    findings = gh.smi_findings(smi.parse_nvidia_smi_xml(data, health=True))
    assert brief(findings) == [(0, 'ecc_aggregate_uncorrectable', 'warning', 'NONE')]


def test_pending_retirement_on_the_t4():
    # tesla_t4.xml has retired counts 0 and pending No; changed: pending_retirement No -> Yes
    facts = parsed('telegraf__tesla_t4.xml', (b'<pending_retirement>No', b'<pending_retirement>Yes'))
    assert brief(gh.smi_findings(facts)) == [(0, 'retired_pages_pending', 'critical', 'RESET_GPU')]


@pytest.mark.parametrize('count, want', [
    (b'47', []),
    (b'48', [(0, 'retired_pages_count', 'warning', 'NONE')]),
    (b'60', [(0, 'retired_pages_count', 'critical', 'CONTACT_SUPPORT')]),
])
def test_retired_page_count_against_the_limit(count, want):
    # changed: the double-bit retired_count of tesla_t4.xml 0 -> count (single-bit stays 0)
    data = xml('telegraf__tesla_t4.xml')
    at = data.index(b'<double_bit_retirement>')
    data = data[:at] + data[at:].replace(b'<retired_count>0', b'<retired_count>' + count, 1)
    assert brief(gh.smi_findings(smi.parse_nvidia_smi_xml(data, health=True), 60)) == want


def test_hardware_slowdown_is_a_warning_and_sw_power_cap_is_not():
    facts = parsed(H100, (b'<clocks_event_reason_hw_power_brake_slowdown>Not Active',
                          b'<clocks_event_reason_hw_power_brake_slowdown>Active'))
    findings = gh.smi_findings(facts)
    assert brief(findings) == [(0, 'clocks_event', 'warning', 'CHECK_MECHANICALS')]
    assert 'hw_power_brake_slowdown' in findings[0]['detail']


def test_fabric_not_completed_on_an_nvswitch_system():
    # changed: <fabric><state>N/A -> In Progress (the state FIELD.md C.1 quotes for a GPU not yet registered)
    facts = parsed(H100, (b'<state>N/A</state>', b'<state>In Progress</state>'))
    assert brief(gh.smi_findings(facts)) == [(0, 'fabric', 'critical', 'CHECK_FABRIC_MANAGER')]


def test_pcie_gen_below_max_while_busy():
    # changed: the H100 (P0) gpu_idle Active -> Not Active and current_link_gen 5 -> 3
    data = xml(H100).replace(b'<clocks_event_reason_gpu_idle>Active', b'<clocks_event_reason_gpu_idle>Not Active', 1)
    data = data.replace(b'<current_link_gen>5', b'<current_link_gen>3', 1)
    findings = gh.smi_findings(smi.parse_nvidia_smi_xml(data, health=True))
    assert brief(findings) == [(0, 'pcie_link_gen', 'warning', 'CHECK_MECHANICALS')]


# ---- PCI bus --------------------------------------------------------------------------------------

def test_pci_key_forms():
    assert gh.pci_key('00000000:CB:00.0') == gh.pci_key('0000:cb:00.0') == gh.pci_key('0000:cb:00') == '0000:cb:00'
    assert gh.pci_key('0019:01:00') == '0019:01:00'
    assert gh.pci_key('...') is None
    assert gh.pci_key(None) is None


def test_gpu_on_the_bus_not_listed_by_nvidia_smi():
    # the H100 capture lists 00000000:00:06.0 (the address sysfs gave on that machine, see node-trees/SOURCE.md)
    smi_gpus = parsed(H100)['gpus']
    seen = [{'address': '0000:00:06.0', 'device_id': '0x2330', 'driver': 'nvidia'}]
    assert gh.pci_findings(seen, smi_gpus) == []
    # a second GPU on the bus that the driver did not bind, and one passed through to a VM (ignored)
    extra = seen + [{'address': '0000:b3:00.0', 'device_id': '0x26b5', 'driver': None},
                    {'address': '0000:c3:00.0', 'device_id': '0x2330', 'driver': 'vfio-pci'}]
    findings = gh.pci_findings(extra, smi_gpus, expected_gpu_count=2)
    assert brief(findings) == [(None, 'gpu_not_visible', 'critical', 'RESTART_BM'),
                               (None, 'gpu_count', 'critical', 'RESTART_BM')]
    assert findings[0]['pci_bus_id'] == '0000:b3:00.0'
    assert 'nvidia-smi lists 1 GPU(s), expected 2 (the PCI bus shows 2)' in findings[1]['detail']


def test_no_smi_data_only_checks_the_count():
    assert gh.pci_findings([{'address': '0000:00:06.0', 'driver': 'nvidia'}], None) == []
    assert brief(gh.pci_findings([], None, 1)) == [(None, 'gpu_count', 'critical', 'RESTART_BM')]


# ---- kernel log -----------------------------------------------------------------------------------

def kfind(name, smi_gpus=None):
    return gh.kernel_log_findings(gh.parse_kernel_log(klog(name)), smi_gpus, 'dmesg')


def test_xid13_and_xid109():
    findings = kfind('gpud-pr46__dmesg-ctime__xid13-xid109.txt')
    assert brief(findings) == [(None, 'xid', 'warning', 'RESTART_APP'), (None, 'xid', 'critical', 'RESET_GPU')]
    assert findings[0]['detail'].startswith('Xid 13 ROBUST_CHANNEL_GR_EXCEPTION / ROBUST_CHANNEL_GR_ERROR_SW_NOTIFY: '
                                            '3 line(s) (first [Fri Aug 30 11:43:09 2024], last [Fri Aug 30 11:43:09 '
                                            '2024]); first: [Fri Aug 30 11:43:09 2024] NVRM: Xid (PCI:0000:cb:00): 13')
    assert findings[1]['pci_bus_id'] == '0000:cb:00'
    assert 'ROBUST_CHANNEL_CTXSW_TIMEOUT_ERROR' in findings[1]['detail']
    assert gh.verdict(findings) == 'unhealthy'


def test_xid45_takes_the_action_of_the_xid_that_caused_it():
    findings = kfind('ogkm-1150__journal__xid45-after-xid145-xid149.txt')
    assert [(f['pci_bus_id'], f['severity'], f['action']) for f in findings] == [
        ('0000:dc:00', 'critical', 'WORKFLOW_NVLINK5_ERR'),
        ('0000:ed:00', 'critical', 'WORKFLOW_NVLINK5_ERR'),
        ('0000:ba:00', 'critical', 'WORKFLOW_NVLINK5_ERR'),
        ('0000:97:00', 'critical', 'WORKFLOW_NVLINK5_ERR'),
    ]
    assert 'caused by Xid 149 NVLINK_NETIR_ERROR' in findings[0]['detail']
    assert '2 line(s)' in findings[0]['detail']


def test_nonfatal_sxid_lines_and_their_detail_lines():
    findings = kfind('nvtrust-124__dmesg__sxid-22013-nonfatal.txt')
    assert brief(findings) == [(None, 'sxid', 'warning', 'IGNORE')]
    assert findings[0]['pci_bus_id'] == '0000:04:00.0'
    assert findings[0]['detail'].startswith('NVSwitch nvidia-nvswitch3 SXid 22013 Non-fatal: 3 line(s)')
    assert gh.verdict(findings) == 'degraded'


def test_fallen_off_the_bus_without_an_xid():
    findings = kfind('nvsentinel-155__dmesg__fallen-off-the-bus-no-xid.txt')
    assert brief(findings) == [(None, 'fallen_off_bus', 'critical', 'RESTART_BM')]
    assert findings[0]['pci_bus_id'] == '0000:b3:00.0'


def test_nvlink5_fatal_and_nonfatal():
    findings = kfind('gpud-pr1174__kmsg__xid149-fatal-xid145-nonfatal.txt')
    assert brief(findings) == [(None, 'xid', 'critical', 'WORKFLOW_NVLINK5_ERR'), (None, 'xid', 'info', 'IGNORE')]


def test_xid63_row_remapper_event_alone_is_information():
    findings = kfind('ml-engineering__xid63-row-remapper.txt')
    assert brief(findings) == [(None, 'xid', 'info', 'IGNORE')]
    assert gh.verdict(findings) == 'healthy'


def test_xid79_is_restart_bm():
    findings = kfind('modal-docs__xid79-fallen-off-the-bus.txt')
    assert brief(findings) == [(None, 'xid', 'critical', 'RESTART_BM')]
    assert findings[0]['pci_bus_id'] == '0000:c6:00'


def test_xid_is_attributed_to_the_gpu_nvidia_smi_lists_at_that_address():
    # the Xid 79 line of Modal's docs, with a GPU listed at 0000:c6:00.0 (the address the line names)
    smi_gpus = [{'index': 3, 'pci_bus_id': '00000000:C6:00.0'}]
    findings = kfind('modal-docs__xid79-fallen-off-the-bus.txt', smi_gpus)
    assert (findings[0]['gpu'], findings[0]['pci_bus_id']) == (3, '00000000:C6:00.0')


def test_log_without_nvidia_lines():
    assert gh.parse_kernel_log('') == []
    assert gh.parse_kernel_log(None) == []
    assert gh.parse_kernel_log('-- No entries --\n\x00\xff garbage') == []


def test_unknown_xid():
    action, mnemonic, note = gh.classify_xid(999)
    assert (action, mnemonic) == ('CONTACT_SUPPORT', None)
    assert 'not in the Xid catalog' in note


# ---- the catalog ----------------------------------------------------------------------------------

def test_every_xid_in_the_catalog_has_an_action_with_a_policy():
    assert sorted(xid_catalog.XID_CATALOG) == list(range(1, 163))
    for xid, entry in xid_catalog.XID_CATALOG.items():
        assert entry['action'], xid
        assert entry['action'] in gh.ACTION_POLICY, (xid, entry['action'])
    others = {xid_catalog.SXID_FATAL_ACTION, xid_catalog.SXID_NONFATAL_ACTION}
    for action in set(xid_catalog.RECOVERY_ACTIONS.values()) | others:
        assert action in gh.ACTION_POLICY


def test_catalog_rows_read_on_nvidia_page():
    # the rows of https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html this project could read
    for xid in (1, 2, 3, 4, 5, 6, 7, 9, 10, 12):
        assert xid_catalog.XID_CATALOG[xid]['action'] == 'CONTACT_SUPPORT'
    for xid in (8, 11, 13):
        assert xid_catalog.XID_CATALOG[xid]['action'] == 'RESTART_APP'
    assert xid_catalog.XID_CATALOG[79]['action'] == 'RESTART_BM'
    assert xid_catalog.XID_CATALOG[64]['action'] == 'RESET_GPU'


def test_every_policy_has_a_known_severity_and_remediation():
    for action, (severity, remediation) in gh.ACTION_POLICY.items():
        assert severity in gh.SEVERITIES, action
        assert remediation in gh.REMEDIATIONS + (None,), action


# ---- DCGM -------------------------------------------------------------------------------------

def test_dcgm_without_json():
    findings = gh.dcgm_findings(1, 226, 'Error: unable to establish a connection to the specified host: localhost',
                                '', None)
    assert brief(findings) == [(None, 'dcgm_diag', 'warning', 'RERUN')]
    assert 'rc 226' in findings[0]['detail']


def test_dcgm_layout_of_dcgm_3():
    # NOT a capture (none was found): the layout DCGM's nvvs/src/JsonOutput.cpp documents, "DCGM GPU Diagnostic"
    # > test_categories > tests > results {gpu_ids, status, warnings}; one failed result on GPU 0.
    text = ('Successfully ran diagnostic for group.\n'
            '{"DCGM GPU Diagnostic": {"test_categories": [{"category": "Hardware", "tests": [{"name": "GPU Memory",'
            ' "results": [{"gpu_ids": "0", "status": "Fail", "warnings": [{"warning": "example", "error_id": 1}]},'
            ' {"gpu_ids": "1", "status": "Pass"}]}]}]}}')
    findings = gh.dcgm_findings(2, 0, text, '', [{'index': 0, 'pci_bus_id': '00000000:00:06.0'}])
    assert brief(findings) == [(0, 'dcgm_diag', 'critical', 'CONTACT_SUPPORT')]
    assert findings[0]['detail'] == 'DCGM diag level 2 test GPU Memory: Fail on GPU 0: example'


def test_dcgm_json_without_results():
    assert brief(gh.dcgm_findings(1, 0, '{"version": "4.2.3"}', '', None)) == [
        (None, 'dcgm_diag', 'warning', 'RERUN')]


def test_summary_drops_skipped_checks_and_counts():
    findings = gh.smi_findings(parsed('telegraf__tesla-t4.xml'))
    summary = gh.summarize(findings, parsed('telegraf__tesla-t4.xml')['gpus'], skip_checks=['pcie_link_width'])
    assert summary['verdict'] == 'healthy'
    assert summary['counts'] == {'info': 0, 'warning': 0, 'critical': 0}
    summary = gh.summarize(findings, parsed('telegraf__tesla-t4.xml')['gpus'])
    assert summary['verdict'] == 'degraded'
    assert summary['reason'] == 'pcie_link_width'
    assert summary['gpus'][0]['verdict'] == 'degraded'
    assert summary['gpus'][0]['processes'] == 2


# ---- quarantine / release / remediation -----------------------------------------------------------

CONTROL_PLANE = {'key': 'node-role.kubernetes.io/control-plane', 'effect': 'NoSchedule'}
CORDONED = {'key': 'node.kubernetes.io/unschedulable', 'effect': 'NoSchedule'}


def ours(value='xid'):
    return {'key': 'baremetal.gpu/gpu-unhealthy', 'value': value, 'effect': 'NoSchedule'}


def test_unhealthy_node_is_tainted_with_its_reason():
    plan = gh.quarantine_plan({'gpu-1': {'verdict': 'unhealthy', 'reason': 'row_remap_pending', 'taints': [CORDONED]},
                               'gpu-2': {'verdict': 'degraded', 'reason': 'pcie_link_width', 'taints': []},
                               'gpu-3': {'verdict': 'healthy', 'reason': '', 'taints': [CONTROL_PLANE]}}, 1)
    assert plan['quarantine'] == [('gpu-1', {'key': 'baremetal.gpu/gpu-unhealthy', 'value': 'row_remap_pending',
                                             'effect': 'NoSchedule'})]
    assert (plan['release'], plan['keep'], plan['stop'], plan['quarantined_after']) == ([], [], False, 1)
    assert plan['quarantined'] == ['gpu-1']


def test_release_only_our_own_quarantine_when_healthy():
    plan = gh.quarantine_plan({
        'gpu-1': {'verdict': 'healthy', 'taints': [ours(), CONTROL_PLANE]},   # ours, healthy now: released
        'gpu-2': {'verdict': 'healthy', 'taints': [CORDONED]},                # someone else's: untouched
        'gpu-3': {'verdict': 'degraded', 'taints': [ours('fabric')]},         # ours, not healthy yet: kept
        'gpu-4': {'verdict': None, 'taints': [ours()]},                       # not checked this run: kept
    }, 2)
    assert (plan['release'], plan['keep'], plan['quarantine']) == (['gpu-1'], ['gpu-3', 'gpu-4'], [])
    # Under our taint after the run (what gpu_health_drain empties of GPU pods): the kept ones, not the released one.
    assert plan['quarantined'] == ['gpu-3', 'gpu-4']


def test_after_a_remediation_only_our_quarantine_of_healthy_nodes_is_released():
    plan = gh.quarantine_plan({
        'gpu-1': {'verdict': 'healthy', 'taints': [ours(), CONTROL_PLANE]},   # remediated, healthy: released
        'gpu-2': {'verdict': 'unhealthy', 'reason': 'xid', 'taints': []},     # unhealthy, never quarantined: left
        'gpu-3': {'verdict': 'unhealthy', 'taints': [ours()]},                # still unhealthy: stays quarantined
    }, 1, release_only=True)
    assert (plan['release'], plan['quarantine'], plan['keep'], plan['stop']) == (['gpu-1'], [], ['gpu-3'], False)


def test_never_more_than_the_budget_report_and_stop():
    nodes = dict(('gpu-%d' % i, {'verdict': 'unhealthy', 'reason': 'xid', 'taints': []}) for i in range(1, 4))
    nodes['gpu-9'] = {'verdict': 'healthy', 'taints': [ours()]}
    plan = gh.quarantine_plan(nodes, 2)
    assert plan['stop'] is True
    assert plan['quarantine'] == []
    assert plan['release'] == ['gpu-9']
    assert plan['message'].startswith('3 node(s) unhealthy now (gpu-1, gpu-2, gpu-3) and 0 already quarantined: '
                                      '3 would be quarantined, above gpu_health_max_quarantined=2.')


def test_budget_counts_the_nodes_already_quarantined():
    plan = gh.quarantine_plan({'gpu-1': {'verdict': 'unhealthy', 'taints': [ours()]},
                               'gpu-2': {'verdict': 'unhealthy', 'reason': 'xid', 'taints': []}}, 1)
    assert (plan['stop'], plan['keep'], plan['quarantine']) == (True, ['gpu-1'], [])
    # Over the limit nothing new is quarantined, so nothing new is drained: only the node already under our taint.
    assert plan['quarantined'] == ['gpu-1']
    with pytest.raises(ValueError):
        gh.quarantine_plan({}, 0)


def test_quarantine_patches_keep_every_other_taint_and_carry_the_resource_version():
    from .real_node import named
    sick, well, other = named('gpu-1'), named('gpu-2'), named('gpu-3')
    sick['spec']['taints'] = [CONTROL_PLANE]
    sick['metadata']['resourceVersion'] = '41'
    well['spec']['taints'] = [CORDONED, ours('row_remap_pending')]
    well['metadata']['resourceVersion'] = '42'
    # gpu-1 reads unhealthy (row remap pending on GPU 0), gpu-2 healthy again; gpu-3 is not in this run.
    result = node_result(H100, (b'<remapped_row_pending>No', b'<remapped_row_pending>Yes'))
    plan = gh.quarantine_patches([sick, well, other], {'gpu-1': result, 'gpu-2': {'verdict': 'healthy'}}, 1,
                                 'run-7@ctl@t0', '2026-11-25T06:40:00.000000Z')
    assert [(p['name'], p['action']) for p in plan['patches']] == [('gpu-1', 'quarantine'), ('gpu-2', 'release')]
    quarantine, release = plan['patches'][0]['patch'], plan['patches'][1]['patch']
    assert quarantine['spec']['taints'] == [CONTROL_PLANE, ours('row_remap_pending')]
    assert quarantine['metadata']['resourceVersion'] == '41'
    assert quarantine['metadata']['labels'] == {'baremetal.gpu/gpu-health': 'quarantined'}
    notes = quarantine['metadata']['annotations']
    assert [(f['gpu'], f['check'], f['action']) for f in json.loads(notes['baremetal.gpu/gpu-health-findings'])] == [
        (0, 'row_remap_pending', 'RESET_GPU')]
    assert (notes['baremetal.gpu/maintenance.run'], notes['baremetal.gpu/maintenance.time']) == (
        'run-7@ctl@t0', '2026-11-25T06:40:00.000000Z')
    # Release: only our taint, label and annotation go; the cordon someone else made stays.
    assert release['spec']['taints'] == [CORDONED]
    assert release['metadata']['resourceVersion'] == '42'
    assert release['metadata']['labels'] == {'baremetal.gpu/gpu-health': None}
    assert release['metadata']['annotations']['baremetal.gpu/gpu-health-findings'] is None
    # The real Node of the fixture has no taints: a release that removes the last one deletes the list (null).
    well['spec']['taints'] = [ours()]
    plan = gh.quarantine_patches([well], {'gpu-2': {'verdict': 'healthy'}}, 1)
    assert plan['patches'][0]['patch']['spec'] == {'taints': None}


def test_quarantine_patches_change_nothing_when_the_budget_is_exceeded_or_nothing_changed():
    from .real_node import named
    nodes = [named('gpu-%d' % i) for i in (1, 2)]
    sick = {'verdict': 'unhealthy', 'reason': 'xid', 'findings': []}
    plan = gh.quarantine_patches(nodes, {'gpu-1': sick, 'gpu-2': sick}, 1)
    assert (plan['stop'], plan['patches']) == (True, [])
    # Already quarantined by us and still unhealthy: kept, no write (a rerun changes nothing).
    nodes[0]['spec']['taints'] = [ours()]
    plan = gh.quarantine_patches(nodes[:1], {'gpu-1': sick}, 1)
    assert (plan['keep'], plan['patches']) == (['gpu-1'], [])


def test_quarantine_leaves_the_nodes_the_engine_works_on_and_counts_them():
    from .real_node import named
    busy, sick, well = named('gpu-1'), named('gpu-2'), named('gpu-3')
    # gpu-1 is in the middle of a driver change (the engine's label): read mid-upgrade ("Driver/library version
    # mismatch"), it looked unhealthy. The quarantine leaves it to the engine and counts it as out of service.
    busy['metadata']['labels']['baremetal.gpu/driver-upgrade'] = 'upgrading'
    busy['spec']['unschedulable'] = True
    well['spec']['taints'] = [ours()]
    well['metadata']['annotations'] = {'baremetal.gpu/maintenance.run': 'engine-run', 'baremetal.gpu/maintenance.time': 't'}
    bad = {'verdict': 'unhealthy', 'reason': 'xid', 'findings': []}
    plan = gh.quarantine_patches([busy, sick, well], {'gpu-1': bad, 'gpu-2': bad, 'gpu-3': {'verdict': 'healthy'}}, 1)
    assert plan['left'] == ['gpu-1'] and plan['stop'] is True and plan['quarantine'] == []
    assert ', and 1 out of service for maintenance (gpu-1)' in plan['message']
    assert [(p['name'], p['action']) for p in plan['patches']] == [('gpu-3', 'release')]
    # The release leaves the engine's run and time annotations as they were (only our findings go).
    assert plan['patches'][0]['patch']['metadata']['annotations'] == {'baremetal.gpu/gpu-health-findings': None}
    # With room for two, gpu-2 is quarantined; gpu-1 still is not.
    plan = gh.quarantine_patches([busy, sick, well], {'gpu-1': bad, 'gpu-2': bad, 'gpu-3': {'verdict': 'healthy'}}, 2)
    assert [n for n, _t in plan['quarantine']] == ['gpu-2'] and plan['left'] == ['gpu-1']


def node_result(name, change=None, log=None):
    facts = parsed(name, change)
    findings = gh.smi_findings(facts)
    if log:
        findings += gh.kernel_log_findings(gh.parse_kernel_log(klog(log)), facts['gpus'], 'dmesg')
    return gh.summarize(findings, facts['gpus'])


def test_remap_pending_on_an_idle_gpu_is_a_gpu_reset():
    # the H100 capture has an empty <processes>; changed: remapped_row_pending No -> Yes
    result = node_result(H100, (b'<remapped_row_pending>No', b'<remapped_row_pending>Yes'))
    plan = gh.remediation_plan(result)
    assert (plan['step'], plan['gpus'], plan['commands']) == ('reset_gpu', [0], [['nvidia-smi', '-r', '-i', '0']])


def test_a_busy_gpu_is_rebooted_instead_of_reset():
    # tesla_t4.xml lists 15 processes on its GPU; changed: pending_retirement No -> Yes
    result = node_result('telegraf__tesla_t4.xml', (b'<pending_retirement>No', b'<pending_retirement>Yes'))
    plan = gh.remediation_plan(result)
    assert plan['step'] == 'reboot'
    assert plan['reasons'] == ['GPU 0: retired_pages_pending (RESET_GPU) needs a GPU reset, but 15 process(es) '
                               'hold the GPU; a reboot instead']


def test_xid79_is_a_reboot_and_row_remap_failure_is_manual():
    assert gh.remediation_plan(node_result(H100, log='modal-docs__xid79-fallen-off-the-bus.txt'))['step'] == 'reboot'
    plan = gh.remediation_plan(node_result(H100, (b'<remapped_row_failure>No', b'<remapped_row_failure>Yes')))
    assert plan['step'] == 'none'
    assert [f['action'] for f in plan['manual']] == ['CONTACT_SUPPORT']


def test_application_xids_need_nothing():
    plan = gh.remediation_plan(node_result(H100, log='ml-engineering__xid63-row-remapper.txt'))
    assert (plan['step'], plan['manual']) == ('none', [])


# ---- Xids an alert can judge from the code alone (GPUXidCritical of kube_prometheus) ---------------------------

def test_xids_by_code_alone_follow_the_catalog_and_the_policy():
    critical = gh.xids_by_code_alone('critical')
    warning = gh.xids_by_code_alone('warning')
    # Read from the catalog rows: 79 RESTART_BM, 48 WORKFLOW_XID_48, 64 and 95 RESET_GPU, 74 WORKFLOW_NVLINK_ERR,
    # 1 CONTACT_SUPPORT; 13 and 31 RESTART_APP and 54 CHECK_MECHANICALS are warnings; 43 and 63 IGNORE.
    assert {1, 48, 64, 74, 79, 95} <= set(critical)
    assert {13, 31, 54} <= set(warning)
    assert not {43, 63} & (set(critical) | set(warning))
    assert 43 in gh.xids_by_code_alone('info')
    # Judged from the kernel-log line, not the code: in no list.
    for code in (45, 154) + tuple(range(144, 151)):
        assert code not in critical + warning + gh.xids_by_code_alone('info'), code
    assert not set(critical) & set(warning)
    assert critical == sorted(critical)


def test_xids_by_code_alone_refuses_an_unknown_severity():
    with pytest.raises(ValueError):
        gh.xids_by_code_alone('fatal')


def test_reset_failures_name_the_time_limit_and_the_exit_code():
    results = [{'item': 0, 'rc': 0, 'stdout': 'GPU 00000000:00:06.0 was successfully reset.'},
               {'item': 1, 'rc': 124, 'stdout': ''},
               {'item': 2, 'rc': 137},
               {'item': 3, 'rc': 255, 'stderr': "Unable to reset this GPU because it's being used by some other process"},
               {'item': 4, 'skipped': True}]
    assert gh.reset_failures(results, 120) == [
        'GPU 1: the reset did not finish within gpu_health_reset_timeout (120 s) and was killed',
        'GPU 2: the reset did not finish within gpu_health_reset_timeout (120 s) and was killed',
        "GPU 3: the reset failed (nvidia-smi -r exited 255: Unable to reset this GPU because it's being used by some"
        " other process)"]
    assert gh.reset_failures([], 120) == [] and gh.reset_failures(None, 5) == []


def test_fabric_pending_names_the_gpus_whose_registration_is_in_progress():
    gpus = [{'index': 0, 'health': {'fabric_state': 'In Progress', 'fabric_status': None}},
            {'index': 1, 'health': {'fabric_state': 'Completed', 'fabric_status': 'Success'}},
            {'index': 2, 'health': {'fabric_state': None}}, {'index': 3}]
    assert gh.fabric_pending({'gpus': gpus}) == [0]
    assert gh.fabric_pending(None) == [] and gh.fabric_pending({'gpus': gpus[1:]}) == []
