# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every real nvidia-smi -q -x capture in tests/fixtures/nvidia-smi-xml through the parser.

The EXPECTED table was written by reading each XML file (the line numbers are given), not by
running the parser. 'None' means the file prints N/A (or an equivalent) or lacks the element.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

import pytest

from ansible_collections.baremetal.gpu.plugins.module_utils import fabric
from ansible_collections.baremetal.gpu.plugins.module_utils import nvidia_smi as smi

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'nvidia-smi-xml')


def gpu(index, name, uuid, bus, minor, mem, persist, mig, ecc, compute='Default', virt='None', mig_devices=0):
    return dict(index=index, name=name, uuid=uuid, pci_bus_id=bus, minor_number=minor,
                memory_total_mib=mem, persistence_mode=persist, mig_mode=mig, ecc_mode=ecc,
                compute_mode=compute, virtualization_mode=virt, mig_devices=mig_devices)


# file: (driver_version, cuda_version, attached_gpus, dtd_version, [gpus])
EXPECTED = {
    # captured by this project on an H100 machine (see SOURCE.md; serial, uuid and pdi masked):
    # lines 5-7, 9, 15, 18 (Disabled), 21-22 ("None"), 31, 33, 65 (Pass-Through), 81, 129, 144, 168;
    # <supported_clocks> lines 313-540 (cut before parsing), empty <processes> at 541
    'device__h100-80gb-hbm3__580.159.04.xml': ('580.159.04', '13.0', 1, 13, [
        gpu(0, 'NVIDIA H100 80GB HBM3', 'GPU-00000000-0000-0000-0000-000000000000', '00000000:00:06.0',
            0, 81559, 'Enabled', 'Disabled', 'Enabled', virt='Pass-Through')]),
    # the same GPU model and driver on another lent machine, read through Ansible (tests/fixtures/device/SOURCE.md;
    # masked the same way): lines 5-7, 9, 15, 18 (Disabled), 31, 33, 65 (Pass-Through), 129, 168
    'device__h100-80gb-hbm3__580.159.04__vm-2026-11-26.xml': ('580.159.04', '13.0', 1, 13, [
        gpu(0, 'NVIDIA H100 80GB HBM3', 'GPU-00000000-0000-0000-0000-000000000000', '00000000:00:06.0',
            0, 81559, 'Enabled', 'Disabled', 'Enabled', virt='Pass-Through')]),
    # lines 5-7, 9, 15, 18, 21-22 ("None"), 31, 33, 65, 81, 129, 144, 168
    'telegraf__3090-v13.xml': ('590.44.01', '13.1', 1, 13, [
        gpu(0, 'NVIDIA GeForce RTX 3090', 'GPU-12345678-aaaa-bbbb-cccc-0123456789ab', '00000000:09:00.0',
            0, 24576, 'Enabled', None, None)]),
    # trimmed: attached_gpus 4 but one <gpu>; MIG Enabled with 4 <mig_device> (lines 21, 52, 83, 114);
    # minor_number 1 (line 154); fb total 81920 MiB (line 229, not the per-MIG 19968 MiB)
    'telegraf__a100-sxm4-v12.xml': ('535.54.03', '12.2', 4, 12, [
        gpu(0, 'NVIDIA A100-SXM4-80GB', 'GPU-513536b6-7d19-9063-b049-1e69664bb298', '00000000:01:00.0',
            1, 81920, 'Disabled', 'Enabled', 'Enabled', mig_devices=4)]),
    'telegraf__a10g.xml': ('515.105.01', '11.7', 1, 11, [
        gpu(0, 'NVIDIA A10G', 'GPU-9a9a6c50-2a47-2f51-a902-b82c3b127e94', '00000000:00:1E.0',
            0, 23028, 'Disabled', None, 'Enabled', virt='Pass-Through')]),
    'telegraf__dual_2070-v13.xml': ('590.44.01', '13.1', 2, 13, [
        gpu(0, 'NVIDIA GeForce RTX 2070', 'GPU-12345678-aaaa-bbbb-cccc-0123456789ab', '00000000:01:00.0',
            0, 8192, 'Enabled', None, None),
        gpu(1, 'NVIDIA GeForce RTX 2070', 'GPU-12345678-aaaa-bbbb-cccc-0123456789cd', '00000000:02:00.0',
            1, 8192, 'Enabled', None, None)]),
    # both GPUs carry the same (masked) uuid in this file (lines 31 and 843)
    'telegraf__dual_2080-v13.xml': ('590.44.01', '13.1', 2, 13, [
        gpu(0, 'NVIDIA GeForce RTX 2080', 'GPU-12345678-aaaa-bbbb-cccc-0123456789ab', '00000000:01:00.0',
            0, 8192, 'Enabled', None, None),
        gpu(1, 'NVIDIA GeForce RTX 2080', 'GPU-12345678-aaaa-bbbb-cccc-0123456789ab', '00000000:02:00.0',
            1, 8192, 'Enabled', None, None)]),
    # out of minor-number order: first GPU (81:00.0) has minor 1, second (C1:00.0) minor 0
    'telegraf__dual_a5000-v13.xml': ('590.44.01', '13.1', 2, 13, [
        gpu(0, 'NVIDIA RTX A5000', 'GPU-12345678-aaaa-bbbb-cccc-0123456789ab', '00000000:81:00.0',
            1, 24564, 'Enabled', None, 'Disabled'),
        gpu(1, 'NVIDIA RTX A5000', 'GPU-12345678-aaaa-bbbb-cccc-0123456789cd', '00000000:C1:00.0',
            0, 24564, 'Enabled', None, 'Disabled')]),
    'telegraf__gt-1030.xml': ('470.74', '11.4', 1, 11, [
        gpu(0, 'NVIDIA GeForce GT 1030', 'GPU-857c6374-f681-cf3a-f99f-9063a87b8ac0', '00000000:2D:00.0',
            0, 1998, 'Disabled', None, None)]),
    # fragment: no driver_version, cuda_version, attached_gpus, persistence, mig, ecc, minor, pci_bus_id
    # (pci_bus_id falls back to the <gpu id=...> attribute, line 4)
    'telegraf__gtx-1070-ti.xml': (None, None, None, 10, [
        gpu(0, 'GeForce GTX 1070 Ti', 'GPU-f9ba66fc-a7f5-94c5-da19-019ef2f9c665', '00000000:01:00.0',
            None, 4096, None, None, None, virt=None)]),
    # no DOCTYPE, driver 418.43: no <mig_mode>/<mig_devices>, no <host_vgpu_mode>
    'telegraf__gtx-1660-ti.xml': ('418.43', '10.1', 1, None, [
        gpu(0, 'Graphics Device', 'GPU-304a277d-3545-63b8-3a36-dfde3c992989', '00000000:43:00.0',
            0, 5912, 'Disabled', None, None)]),
    'telegraf__pro-6000-maxq-blackwell-v13.xml': ('590.44.01', '13.1', 1, 13, [
        gpu(0, 'NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition',
            'GPU-12345678-aaaa-bbbb-cccc-0123456789ab', '00000000:61:00.0',
            0, 97887, 'Enabled', None, 'Disabled')]),
    'telegraf__quadro-p2000-v12.xml': ('525.125.06', '12.0', 1, 12, [
        gpu(0, 'Quadro P2000', 'GPU-396caaed-39ca-3199-2e68-717cdb786ec6', '00000000:17:00.0',
            0, 5120, 'Enabled', None, None)]),
    'telegraf__quadro-p400.xml': ('418.43', '10.1', 1, None, [
        gpu(0, 'Quadro P400', 'GPU-8f750be4-dfbc-23b9-b33f-da729a536494', '00000000:43:00.0',
            0, 1998, 'Disabled', None, None)]),
    'telegraf__rtx-3060-v12.xml': ('570.124.04', '12.8', 1, 12, [
        gpu(0, 'NVIDIA GeForce RTX 3060', 'GPU-d6889ff6-2523-9142-ca3c-1ca3f396a625', '00000000:2D:00.0',
            0, 12288, 'Enabled', None, None)]),
    # Windows-style capture: persistence_mode N/A, minor_number N/A
    'telegraf__rtx-3080-v12.xml': ('536.40', '12.2', 1, 12, [
        gpu(0, 'NVIDIA GeForce RTX 3080', 'GPU-19d6d965-2acc-f646-00f8-4c76979aabb4', '00000000:04:00.0',
            None, 10240, None, None, None, virt='Pass-Through')]),
    'telegraf__rtx-3080-v13.xml': ('595.58.03', '13.2', 1, 13, [
        gpu(0, 'NVIDIA GeForce RTX 3080', 'GPU-19d6d965-2acc-f646-00f8-4c76979aabb4', '00000000:0C:00.0',
            0, 10240, 'Disabled', None, None)]),
    'telegraf__rtx-3090-v12.xml': ('525.147.05', '12.0', 1, 12, [
        gpu(0, 'NVIDIA GeForce RTX 3090', 'GPU-12345678-aaaa-bbbb-cccc-0123456789ab', '00000000:00:10.0',
            0, 24576, 'Enabled', None, None, virt='Pass-Through')]),
    'telegraf__rtx-4000-sff-ada-v13.xml': ('595.84', '13.2', 1, 13, [
        gpu(0, 'NVIDIA RTX 4000 SFF Ada Generation', 'GPU-37037c3f-65c8-ec4d-24a9-420204ad8026',
            '00000000:06:00.0', 0, 20475, 'Enabled', None, 'Disabled')]),
    'telegraf__tesla-t4.xml': ('515.105.01', '11.7', 1, 11, [
        gpu(0, 'Tesla T4', 'GPU-d37e67a5-91dd-3774-a5cb-99096249601a', '00000000:00:1E.0',
            0, 15360, 'Disabled', None, 'Enabled', virt='Pass-Through')]),
    # vGPU guest: GRID P4-1Q, virtualization_mode VGPU, persistence and minor N/A, 1024 MiB
    'telegraf__tesla_p4.xml': ('513.46', '11.6', 1, 11, [
        gpu(0, 'GRID P4-1Q', 'GPU-1b1ea7c7-1c4b-ed49-1c72-26c65f2dd207', '00000000:00:0B.0',
            None, 1024, None, None, None, virt='VGPU')]),
    'telegraf__tesla_t4.xml': ('512.78', '11.6', 1, 11, [
        gpu(0, 'Tesla T4', 'GPU-f6e826dc-c9d7-ac58-6d5d-9048c9e1c124', '00000000:01:00.0',
            None, 15360, None, None, 'Enabled')]),
}


def read(name):
    with open(os.path.join(FIXTURES, name), 'rb') as handle:
        return handle.read()


def test_every_fixture_has_expectations():
    on_disk = sorted(f for f in os.listdir(FIXTURES) if f.endswith('.xml'))
    assert on_disk == sorted(EXPECTED)
    assert len(on_disk) == 22


@pytest.mark.parametrize('name', sorted(EXPECTED))
def test_fixture(name):
    version, cuda, attached, dtd, gpus = EXPECTED[name]
    facts = smi.parse_nvidia_smi_xml(read(name))
    assert facts['driver_version'] == version
    assert facts['driver_branch'] == (version.split('.')[0] if version else None)
    assert facts['cuda_version'] == cuda
    assert facts['attached_gpus'] == attached
    assert facts['dtd_version'] == dtd
    assert facts['gpu_count'] == len(gpus)
    # The keys EXPECTED spells out; the fabric and architecture keys are checked in test_fabric_of_every_capture.
    assert [dict((k, got[k]) for k in want) for got, want in zip(facts['gpus'], gpus)] == gpus


@pytest.mark.parametrize('name', sorted(EXPECTED))
def test_fixture_as_text(name):
    """run_command hands the module text, not bytes; the result must be the same."""
    assert smi.parse_nvidia_smi_xml(read(name).decode('utf-8')) == smi.parse_nvidia_smi_xml(read(name))


def test_the_pending_mig_mode_of_every_capture():
    """<mig_mode><pending_mig>: what the GPU takes at its next reset or boot (the mode a MIG change set where the GPU
    could not be reset). Read from the files: the H100 captures line 19 (Disabled), the A100 line 18 (Enabled, as its
    current mode), every other capture N/A or no <mig_mode>."""
    pending = dict((name, [g['mig_mode_pending'] for g in smi.parse_nvidia_smi_xml(read(name))['gpus']])
                   for name in sorted(EXPECTED))
    assert pending.pop('device__h100-80gb-hbm3__580.159.04.xml') == ['Disabled']
    assert pending.pop('device__h100-80gb-hbm3__580.159.04__vm-2026-11-26.xml') == ['Disabled']
    assert pending.pop('telegraf__a100-sxm4-v12.xml') == ['Enabled']
    assert set(mode for modes in pending.values() for mode in modes) == {None}


def test_driver_branches_seen():
    assert sorted(set(smi.driver_branch(v[0]) for v in EXPECTED.values() if v[0])) == [
        '418', '470', '512', '513', '515', '525', '535', '536', '570', '580', '590', '595']


def test_trimmed_file_warns_about_attached_gpus():
    facts = smi.parse_nvidia_smi_xml(read('telegraf__a100-sxm4-v12.xml'))
    assert smi.count_warnings(facts) == [
        'nvidia-smi reports attached_gpus=4 but lists 1 <gpu> element(s); gpu_count is the number listed']


def test_consistent_file_has_no_warning():
    assert smi.count_warnings(smi.parse_nvidia_smi_xml(read('telegraf__dual_a5000-v13.xml'))) == []


@pytest.mark.parametrize('value, expected', [
    ('N/A', None), ('  N/A  ', None), ('Not Supported', None), ('[Not Supported]', None),
    ('Requested functionality has been deprecated', None), ('', None), (None, None),
    ('  Enabled \n', 'Enabled'), ('\n\t\t\tNone\n\t\t', 'None'),
])
def test_clean(value, expected):
    assert smi.clean(value) == expected


@pytest.mark.parametrize('value, expected', [
    ('81920 MiB', 81920), ('  4096 MiB ', 4096), ('N/A', None), ('12 GiB', None), (None, None), ('5', 5)])
def test_parse_mib(value, expected):
    assert smi.parse_mib(value) == expected


# Synthetic variants (not captures): they exercise values the captures above do not contain.
SYNTHETIC_NOT_SUPPORTED = b"""<?xml version="1.0" ?>
<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v9.dtd">
<nvidia_smi_log>
  <driver_version>  410.79  </driver_version>
  <attached_gpus>1</attached_gpus>
  <gpu id="00000000:3B:00.0">
    <product_name>Tesla V100-PCIE-16GB</product_name>
    <persistence_mode>Not Supported</persistence_mode>
    <mig_devices>
      None
    </mig_devices>
    <fb_memory_usage><total>[Not Supported]</total></fb_memory_usage>
    <compute_mode>Requested functionality has been deprecated</compute_mode>
  </gpu>
</nvidia_smi_log>
"""


def test_synthetic_not_supported_and_v9_doctype():
    facts = smi.parse_nvidia_smi_xml(SYNTHETIC_NOT_SUPPORTED)
    assert facts['dtd_version'] == 9
    assert facts['driver_version'] == '410.79'
    assert facts['driver_branch'] == '410'
    assert facts['cuda_version'] is None
    assert facts['gpus'][0]['persistence_mode'] is None
    assert facts['gpus'][0]['memory_total_mib'] is None
    assert facts['gpus'][0]['compute_mode'] is None
    assert facts['gpus'][0]['mig_devices'] == 0
    assert facts['gpus'][0]['pci_bus_id'] == '00000000:3B:00.0'


def test_unused_sections_are_cut_before_parsing():
    raw = (b'<nvidia_smi_log><gpu id="0"><supported_clocks><x>1</x></supported_clocks><uuid>GPU-a</uuid>'
           b'<processes><process_info><pid>1</pid></process_info></processes>'
           b'<accounted_processes></accounted_processes></gpu></nvidia_smi_log>')
    assert smi.drop_unused_sections(raw) == b'<nvidia_smi_log><gpu id="0"><uuid>GPU-a</uuid></gpu></nvidia_smi_log>'


def test_unterminated_section_is_left_for_the_parser():
    raw = b'<nvidia_smi_log><gpu id="0"><supported_clocks><x>1</x>'
    assert smi.drop_unused_sections(raw) == raw
    with pytest.raises(smi.NvidiaSmiParseError):
        smi.parse_nvidia_smi_xml(raw)


def test_zero_gpus():
    facts = smi.parse_nvidia_smi_xml(b'<nvidia_smi_log><driver_version>580.82.07</driver_version>'
                                     b'<attached_gpus>0</attached_gpus></nvidia_smi_log>')
    assert facts['gpu_count'] == 0 and facts['gpus'] == [] and smi.count_warnings(facts) == []


@pytest.mark.parametrize('data, fragment', [
    (b'', 'printed nothing'),
    (b'   \n', 'printed nothing'),
    (b'Segmentation fault\n', "it starts with: 'Segmentation fault\\n'"),
    (b'<?xml version="1.0" ?>\n<nvidia_smi_log>\n<gpu id="0">', 'cannot parse'),
    (b'<html><body>nope</body></html>', 'root element <html>'),
])
def test_unparseable_quotes_first_bytes(data, fragment):
    with pytest.raises(smi.NvidiaSmiParseError) as err:
        smi.parse_nvidia_smi_xml(data)
    assert fragment in err.value.message


def test_unparseable_quote_is_limited():
    with pytest.raises(smi.NvidiaSmiParseError) as err:
        smi.parse_nvidia_smi_xml(b'x' * 5000)
    assert "'" + 'x' * smi.QUOTE_BYTES + "'" in err.value.message
    assert 'x' * (smi.QUOTE_BYTES + 1) not in err.value.message


# Failure texts quoted verbatim from tests/fixtures/nvidia-smi-text/FAILURE_MESSAGES.compiled.txt
FAILURES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'nvidia-smi-text',
                        'FAILURE_MESSAGES.compiled.txt')


def failure_block(number):
    """The stdout/stderr quoted in section ``number`` (1-based) of FAILURE_MESSAGES.compiled.txt."""
    with open(FAILURES) as handle:
        text = handle.read()
    blocks = re.findall(r'----- stdout/stderr -----\n(.*?)----- end -----', text, re.S)
    return blocks[number - 1]


NO_DRIVER = failure_block(1)
NO_DEVICES = failure_block(2)
NVML_UNKNOWN = failure_block(4)


def test_failure_texts_are_the_compiled_ones():
    assert NO_DRIVER.startswith("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.")
    assert NO_DEVICES == 'No devices were found\n'
    assert NVML_UNKNOWN == 'Failed to initialize NVML: Unknown Error\n'


CMD = ['/usr/bin/timeout', '-k', '5', '60', '/usr/bin/nvidia-smi', '-q', '-x']


@pytest.mark.parametrize('rc, out, status, words', [
    (9, NO_DRIVER, smi.STATUS_NO_DRIVER, ['module is not loaded', 'nouveau', 'reboot', 'Secure Boot', 'rc: 9']),
    (255, NVML_UNKNOWN, smi.STATUS_NVML_INIT, ['Failed to initialize NVML: Unknown Error (rc 255)',
                                               '/dev/nvidiactl', 'rc: 255']),
    (6, NO_DEVICES, smi.STATUS_NO_DEVICES, ['No devices were found (rc 6)', 'fell off the bus']),
    (0, NO_DEVICES, smi.STATUS_NO_DEVICES, ['No devices were found (rc 0)']),
    (15, 'Unable to determine the device handle for GPU0000:3B:00.0: GPU is lost.\n', None,
     ['nvidia-smi failed (rc 15)', 'GPU is lost']),
])
def test_interpret_run_failures(rc, out, status, words):
    with pytest.raises(smi.NvidiaSmiError) as err:
        smi.interpret_run(CMD, rc, out, '')
    assert err.value.status == status
    assert ' '.join(CMD) in err.value.message
    for word in words:
        assert word in err.value.message


def test_interpret_run_ok():
    facts = smi.interpret_run(CMD, 0, read('telegraf__tesla-t4.xml').decode(), '')
    assert facts['gpus'][0]['name'] == 'Tesla T4'


def test_interpret_run_garbage_names_command():
    with pytest.raises(smi.NvidiaSmiParseError) as err:
        smi.interpret_run(CMD, 0, 'GPU 0: Tesla T4 (UUID: GPU-x)\n', 'warning: something\n')
    assert "it starts with: 'GPU 0: Tesla T4" in err.value.message
    assert 'stderr: warning: something' in err.value.message


A100 = smi.parse_nvidia_smi_xml(read('telegraf__a100-sxm4-v12.xml'))
DUAL = smi.parse_nvidia_smi_xml(read('telegraf__dual_a5000-v13.xml'))


def test_expectations_all_met():
    assert smi.check_expectations(A100, dict(
        driver_branch='535', driver_version='535.54', gpu_count=1, min_gpu_count=1, product='A100',
        persistence_mode='Disabled', mig_mode='Enabled')) == []


def test_expectations_exact_version():
    assert smi.check_expectations(A100, dict(driver_version='535.54.03')) == []


def test_expectations_every_mismatch_at_once():
    problems = smi.check_expectations(DUAL, dict(
        driver_branch='580', driver_version='590.4', gpu_count=8, min_gpu_count=4, product='H100',
        persistence_mode='Disabled', mig_mode='Enabled'))
    assert problems == [
        'driver_branch: expected 580, found 590',
        'driver_version: expected 590.4 (exact or prefix), found 590.44.01',
        'gpu_count: expected 8, found 2',
        'min_gpu_count: expected at least 4, found 2',
        "GPU 0 (00000000:81:00.0) product: expected to match 'H100', found 'NVIDIA RTX A5000'",
        "GPU 1 (00000000:C1:00.0) product: expected to match 'H100', found 'NVIDIA RTX A5000'",
        'GPU 0 (00000000:81:00.0) persistence_mode: expected Disabled, found Enabled',
        'GPU 1 (00000000:C1:00.0) persistence_mode: expected Disabled, found Enabled',
        'GPU 0 (00000000:81:00.0) mig_mode: expected Enabled, found N/A',
        'GPU 1 (00000000:C1:00.0) mig_mode: expected Enabled, found N/A',
    ]


def test_expectations_without_driver_version():
    facts = smi.parse_nvidia_smi_xml(read('telegraf__gtx-1070-ti.xml'))
    assert smi.check_expectations(facts, dict(driver_branch='418', driver_version='418')) == [
        'driver_branch: expected 418, found None',
        'driver_version: expected 418 (exact or prefix), found None']


# --- output that is not UTF-8 (a corrupted or localized nvidia-smi) ---------------------------

def latin1(name='telegraf__tesla-t4.xml'):
    """The capture with its timestamp as a French Latin-1 locale prints it (one byte 0xe9)."""
    with open(os.path.join(FIXTURES, name), 'rb') as handle:
        return handle.read().replace(b'Mon Apr 24 16:22:39 2023', b'lun. f\xe9vr. 24 16:22:39 2023')


def test_not_utf8_is_parsed_with_replacement():
    facts = smi.parse_nvidia_smi_xml(latin1())
    assert facts['driver_version'] == '515.105.01'
    assert facts['gpus'][0]['name'] == 'Tesla T4'


def test_not_utf8_as_surrogate_escaped_text():
    # what run_command-style decoding (surrogateescape) hands over: the bytes come back, no crash
    text = latin1().decode('utf-8', 'surrogateescape')
    assert smi.parse_nvidia_smi_xml(text)['gpus'][0]['name'] == 'Tesla T4'


def test_utf8_problem_names_offset_and_bytes():
    assert smi.utf8_problem(latin1()) == (
        "1 byte(s) that are not UTF-8, the first at offset 117: \\xe9 in "
        "'   <timestamp>lun. f\\xe9vr. 24 16:22:39 202'")
    assert smi.utf8_problem(b'ok \xc3\xa9') is None
    assert smi.utf8_problem(b'\xff\xfe\xfd').startswith('3 byte(s) that are not UTF-8, the first at offset 0: \\xff')


def test_garbage_not_utf8_unparseable_names_the_bytes():
    with pytest.raises(smi.NvidiaSmiParseError) as err:
        smi.parse_nvidia_smi_xml(b'\xff\xfe<\x00n\x00')
    assert "it has 2 byte(s) that are not UTF-8, the first at offset 0: \\xff" in err.value.message
    assert "it starts with: '\\xff\\xfe<\\x00n\\x00'" in err.value.message


def test_messages_escape_bytes_that_are_not_utf8():
    assert smi.to_text(b'a\xe9b \xc3\xa9') == u'a\\xe9b \xe9'
    assert smi.quote(b'a\xe9\n') == "'a\\xe9\\n'"
    err = smi.classify_failure(['nvidia-smi', '-q', '-x'], 9, b'NVIDIA-SMI a \xe9chou\xe9', b'')
    assert err.status == smi.STATUS_NO_DRIVER
    assert 'stdout: NVIDIA-SMI a \\xe9chou\\xe9; stderr: (empty)' in err.message
    err.message.encode('utf-8')


# --- what the device plugin advertises, per MIG strategy (internal/rm/device_map.go) ---------

def test_device_plugin_gpus_mig_capture():
    facts = smi.parse_nvidia_smi_xml(fixture_bytes('telegraf__a100-sxm4-v12.xml'))
    assert smi.device_plugin_gpus(facts['gpus']) == {'none': 1, 'single': 4, 'mixed': 0}


def test_device_plugin_gpus_without_mig():
    facts = smi.parse_nvidia_smi_xml(fixture_bytes('telegraf__dual_a5000-v13.xml'))
    assert smi.device_plugin_gpus(facts['gpus']) == {'none': 2, 'single': 2, 'mixed': 2}


@pytest.mark.parametrize('modes, counts, expected', [
    # MIG on for some GPUs only: the single strategy refuses the node
    (['Enabled', 'Disabled'], [3, 0], {'none': 2, 'single': None, 'mixed': 1}),
    # MIG on without MIG devices: both MIG strategies refuse the node
    (['Enabled', 'Enabled'], [7, 0], {'none': 2, 'single': None, 'mixed': None}),
    (['Enabled', 'Enabled'], [7, 7], {'none': 2, 'single': 14, 'mixed': 0}),
    ([None, None], [0, 0], {'none': 2, 'single': 2, 'mixed': 2}),
    ([], [], {'none': 0, 'single': 0, 'mixed': 0}),
])
def test_device_plugin_gpus_rules(modes, counts, expected):
    gpus = [{'mig_mode': m, 'mig_devices': c} for m, c in zip(modes, counts)]
    assert smi.device_plugin_gpus(gpus) == expected


def fixture_bytes(name):
    with open(os.path.join(FIXTURES, name), 'rb') as handle:
        return handle.read()


# ---- <fabric> and <product_architecture> ------------------------------------------------------------
# Read from each file: every capture's <fabric> says N/A (state and status), where it has one; the
# A100 SXM4 (HGX board, pre-Hopper) too. Architectures from <product_architecture>; files without it
# (DTD v10/v11 and the 418 files) give None.
FABRIC_ARCH = {
    'device__h100-80gb-hbm3__580.159.04.xml': ['Hopper'],
    'device__h100-80gb-hbm3__580.159.04__vm-2026-11-26.xml': ['Hopper'],     # line 11; <fabric> N/A at 299-300
    'telegraf__3090-v13.xml': ['Ampere'],
    'telegraf__a100-sxm4-v12.xml': ['Ampere'],
    'telegraf__a10g.xml': ['Ampere'],
    'telegraf__dual_2070-v13.xml': ['Turing', 'Turing'],
    'telegraf__dual_2080-v13.xml': ['Turing', 'Turing'],
    'telegraf__dual_a5000-v13.xml': ['Ampere', 'Ampere'],
    'telegraf__gt-1030.xml': [None],
    'telegraf__gtx-1070-ti.xml': [None],
    'telegraf__gtx-1660-ti.xml': [None],
    'telegraf__pro-6000-maxq-blackwell-v13.xml': ['Blackwell'],
    'telegraf__quadro-p2000-v12.xml': ['Pascal'],
    'telegraf__quadro-p400.xml': [None],
    'telegraf__rtx-3060-v12.xml': ['Ampere'],
    'telegraf__rtx-3080-v12.xml': ['Ampere'],
    'telegraf__rtx-3080-v13.xml': ['Ampere'],
    'telegraf__rtx-3090-v12.xml': ['Ampere'],
    'telegraf__rtx-4000-sff-ada-v13.xml': ['Ada Lovelace'],
    'telegraf__tesla-t4.xml': ['Turing'],
    'telegraf__tesla_p4.xml': ['Pascal'],
    'telegraf__tesla_t4.xml': ['Turing'],
}


@pytest.mark.parametrize('name', sorted(EXPECTED))
def test_fabric_of_every_capture(name):
    facts = smi.parse_nvidia_smi_xml(read(name))
    raw = read(name).decode('utf-8', 'replace')
    assert [g['architecture'] for g in facts['gpus']] == FABRIC_ARCH[name]
    for got in facts['gpus']:
        # N/A everywhere (or no <fabric> at all): no capture here is of an NVSwitch system.
        assert (got['fabric_state'], got['fabric_status']) == (None, None)
    without = ('telegraf__a10g.xml', 'telegraf__gt-1030.xml', 'telegraf__gtx-1070-ti.xml', 'telegraf__gtx-1660-ti.xml',
               'telegraf__quadro-p400.xml', 'telegraf__tesla-t4.xml', 'telegraf__tesla_p4.xml', 'telegraf__tesla_t4.xml')
    assert ('<fabric>' in raw) == (name not in without)


def test_fabric_gpus_are_hopper_or_newer():
    assert [g['name'] for g in smi.fabric_gpus(smi.parse_nvidia_smi_xml(read('device__h100-80gb-hbm3__580.159.04.xml')))] \
        == ['NVIDIA H100 80GB HBM3']
    assert smi.fabric_gpus(smi.parse_nvidia_smi_xml(read('telegraf__a100-sxm4-v12.xml'))) == []


def test_fabric_problems_on_the_real_h100_capture():
    # The real H100 (a single passed-through SXM GPU, no NVSwitch) reports N/A: judged as an NVSwitch
    # system it is not ready, and the message says what was expected.
    problems = smi.fabric_problems(smi.parse_nvidia_smi_xml(read('device__h100-80gb-hbm3__580.159.04.xml')))
    assert problems == ['GPU 0 (00000000:00:06.0, NVIDIA H100 80GB HBM3): fabric state N/A, status N/A (expected '
                        'Completed, Success: is nvidia-fabricmanager running at the driver\'s version?)']
    # A pre-Hopper HGX GPU is not judged (its fabric reads N/A on every system).
    assert smi.fabric_problems(smi.parse_nvidia_smi_xml(read('telegraf__a100-sxm4-v12.xml'))) == []


def _h100_with_fabric(state, status):
    # The real H100 capture with the two values an HGX reports put in; the values are those nvidia-smi -q
    # prints on HGX H100 systems ("State : Completed", "Status : Success"; "In Progress" while Fabric Manager
    # has not configured the switches, CUDA error 802). No real XML capture of an HGX was found to copy.
    raw = read('device__h100-80gb-hbm3__580.159.04.xml').decode('utf-8')
    raw = re.sub(r'(<fabric>\s*<state>)N/A(</state>\s*<status>)N/A(</status>)', r'\g<1>%s\g<2>%s\g<3>' % (state, status), raw)
    assert '<state>%s</state>' % state in raw
    return smi.parse_nvidia_smi_xml(raw)


@pytest.mark.parametrize('state, status, ok', [
    ('Completed', 'Success', True),
    ('In Progress', 'N/A', False),
    ('Not Started', 'N/A', False),
    ('Completed', 'Failure', False),
])
def test_fabric_states(state, status, ok):
    facts = _h100_with_fabric(state, status)
    assert facts['gpus'][0]['fabric_state'] == (None if state == 'N/A' else state)
    assert (smi.fabric_problems(facts) == []) is ok


def _module_result(facts):
    # What baremetal.gpu.nvidia_smi returns around the parsed facts when nvidia-smi answered.
    return dict(facts, status='ok', reason='', driver_communicating=True)


def test_fabric_report_judges_only_an_nvswitch_system_with_hopper_or_newer_gpus():
    ready = fabric.report('hgx_nvswitch', _module_result(_h100_with_fabric('Completed', 'Success')))
    assert ready['read'] and ready['judged'] and ready['problems'] == []
    assert ready['summary'] == 'Completed, Success on all 1 Hopper-or-newer GPUs'
    assert ready['gpus'] == [{'index': 0, 'name': 'NVIDIA H100 80GB HBM3', 'state': 'Completed', 'status': 'Success'}]
    waiting = fabric.report('hgx_nvswitch', _module_result(_h100_with_fabric('In Progress', 'N/A')))
    assert waiting['judged'] and waiting['summary'].startswith('GPU 0 (00000000:00:06.0, NVIDIA H100 80GB HBM3): '
                                                               'fabric state In Progress, status N/A')
    # The real H100 capture (no NVSwitch there): listed, N/A, not judged.
    real = smi.parse_nvidia_smi_xml(read('device__h100-80gb-hbm3__580.159.04.xml'))
    pcie = fabric.report('pcie', _module_result(real))
    assert pcie['read'] and not pcie['judged'] and pcie['problems'] == []
    assert pcie['summary'] == 'not applicable: no NVSwitch on the PCI bus (pcie)'
    assert pcie['gpus'] == [{'index': 0, 'name': 'NVIDIA H100 80GB HBM3', 'state': 'N/A', 'status': 'N/A'}]
    # A pre-Hopper HGX (the real A100 SXM4 capture) is read, not judged.
    a100 = fabric.report('hgx_nvswitch', _module_result(smi.parse_nvidia_smi_xml(read('telegraf__a100-sxm4-v12.xml'))))
    assert a100['read'] and not a100['judged'] and a100['summary'].startswith('not judged: no Hopper-or-newer GPU')


def test_fabric_report_says_why_it_was_not_read():
    skipped = fabric.report('none', {'changed': False, 'skipped': True, 'skip_reason': 'Conditional result was False'})
    assert not skipped['read'] and skipped['gpus'] == []
    assert skipped['summary'] == ('not read: no nvidia-smi on the node (the driver is not installed); '
                                  'not needed: no NVSwitch on the PCI bus (none)')
    assert fabric.report('pcie', None)['summary'].startswith('not read: no nvidia-smi on the node')
    no_driver = fabric.report('hgx_nvswitch', {'status': 'no_driver', 'reason': 'NVIDIA-SMI has failed because it '
                                               "couldn't communicate with the NVIDIA driver", 'gpus': []})
    assert no_driver['summary'] == ("not read: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA "
                                    'driver')
    failed = fabric.report('pcie', {'failed': False, 'msg': 'nvidia-smi did not answer within 30 s'})
    assert failed['summary'].startswith('not read: nvidia-smi did not answer within 30 s; not needed')


# ---- the device nodes a CUDA container needs (device_nodes), on real captures ----

def _read(name):
    with open(os.path.join(FIXTURES, name), 'rb') as handle:
        return dict(smi.parse_nvidia_smi_xml(handle.read()), status=smi.STATUS_OK)


def test_device_nodes_of_the_h100_capture():
    result = _read('device__h100-80gb-hbm3__580.159.04.xml')
    present = ['/dev/nvidiactl', '/dev/nvidia0', '/dev/nvidia-uvm', '/dev/nvidia-uvm-tools', '/dev/nvidia-modeset']
    nodes = smi.device_nodes(result, present)
    assert nodes == {'checked': True, 'missing': [], 'message': '4 of 4 device nodes present',
                     'expected': ['/dev/nvidiactl', '/dev/nvidia-uvm', '/dev/nvidia-uvm-tools', '/dev/nvidia0']}


def test_device_nodes_missing_uvm_says_how_they_appear():
    # gpu-operator#2685: nvidia-smi sees the GPUs while /dev/nvidia-uvm* were never created.
    nodes = smi.device_nodes(_read('telegraf__dual_2080-v13.xml'), ['/dev/nvidiactl', '/dev/nvidia0', '/dev/nvidia1'])
    assert nodes['checked'] and nodes['missing'] == ['/dev/nvidia-uvm', '/dev/nvidia-uvm-tools']
    assert 'nvidia-modprobe -u -c=0' in nodes['message'] and nodes['message'].startswith('3 of 5 device nodes present')


def test_device_nodes_names_the_gpu_by_its_minor_number():
    result = _read('telegraf__dual_2080-v13.xml')
    result['gpus'][1]['minor_number'] = 3
    nodes = smi.device_nodes(result, list(smi.CONTROL_DEVICE_NODES) + ['/dev/nvidia0', '/dev/nvidia1'])
    assert nodes['missing'] == ['/dev/nvidia3']


def test_device_nodes_without_a_gpu_say_what_was_not_checked():
    nodes = smi.device_nodes({'status': smi.STATUS_NO_DRIVER, 'gpus': []}, [])
    assert not nodes['checked'] and nodes['missing'] == []
    assert nodes['message'].startswith('not checked: no GPU visible (nvidia-smi: no_driver_communication)')


def test_device_nodes_of_a_gpu_without_a_minor_number_are_not_guessed():
    result = _read('device__h100-80gb-hbm3__580.159.04.xml')
    result['gpus'][0]['minor_number'] = None
    nodes = smi.device_nodes(result, list(smi.CONTROL_DEVICE_NODES))
    assert nodes['missing'] == [] and 'GPU(s) 0 report no minor number' in nodes['message']
