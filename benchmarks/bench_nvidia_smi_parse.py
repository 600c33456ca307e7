# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark (not a test): how long parse_nvidia_smi_xml takes on an 8-GPU nvidia-smi -q -x document.

No 8-GPU capture is available, so the 8-GPU document is BUILT: the single <gpu> element of a real
capture (tests/fixtures/nvidia-smi-xml/device__h100-80gb-hbm3__580.159.04.xml, an H100 on driver 580;
telegraf__a100-sxm4-v12.xml, an A100 with 4 MIG devices; telegraf__pro-6000-maxq-blackwell-v13.xml,
the largest capture) is replicated 8 times with distinct
minor numbers, PCI bus ids (gpu id attribute and <pci_bus_id>) and UUIDs, and attached_gpus set to 8.
The script checks that the parser sees 8 distinct GPUs, then prints a table of timings.
Budget: median <= 20 ms per parse. Exit status 1 when the budget is exceeded.

    python3 benchmarks/bench_nvidia_smi_parse.py [--runs N]
"""

from __future__ import absolute_import, division, print_function

import argparse
import os
import re
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, 'tests', 'fixtures', 'nvidia-smi-xml')
BUDGET_MS = 20.0
SOURCES = ['device__h100-80gb-hbm3__580.159.04.xml', 'telegraf__a100-sxm4-v12.xml', 'telegraf__pro-6000-maxq-blackwell-v13.xml']


def import_parser():
    """Import the module_utils file directly (it has no Ansible imports), wherever the repo is."""
    import importlib.util
    path = os.path.join(ROOT, 'plugins', 'module_utils', 'nvidia_smi.py')
    spec = importlib.util.spec_from_file_location('nvidia_smi_utils', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build_eight_gpu_document(name, count=8):
    with open(os.path.join(FIXTURES, name)) as handle:
        text = handle.read()
    start = text.index('<gpu id=')
    start = text.rindex('\n', 0, start) + 1
    end = text.index('</gpu>', start) + len('</gpu>\n')
    gpu = text[start:end]
    copies = []
    for i in range(count):
        bus = '00000000:%02X:00.0' % (0x18 + 0x10 * i)
        one = re.sub(r'<gpu id="[^"]*">', '<gpu id="%s">' % bus, gpu, count=1)
        one = re.sub(r'<pci_bus_id>[^<]*</pci_bus_id>', '<pci_bus_id>%s</pci_bus_id>' % bus, one, count=1)
        one = re.sub(r'<minor_number>[^<]*</minor_number>', '<minor_number>%d</minor_number>' % i, one, count=1)
        one = re.sub(r'<uuid>GPU-([0-9a-f-]+?)[0-9a-f]{2}</uuid>', r'<uuid>GPU-\g<1>%02x</uuid>' % i, one, count=1)
        copies.append(one)
    head = re.sub(r'<attached_gpus>[^<]*</attached_gpus>', '<attached_gpus>%d</attached_gpus>' % count,
                  text[:start], count=1)
    return (head + ''.join(copies) + text[end:]).encode('utf-8')


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--runs', type=int, default=200)
    args = parser.parse_args()
    smi = import_parser()

    rows = []
    ok = True
    for name in SOURCES:
        doc = build_eight_gpu_document(name)
        facts = smi.parse_nvidia_smi_xml(doc)
        assert facts['gpu_count'] == 8 and facts['attached_gpus'] == 8, facts['gpu_count']
        assert len(set(g['pci_bus_id'] for g in facts['gpus'])) == 8
        assert [g['minor_number'] for g in facts['gpus']] == list(range(8))
        assert len(set(g['uuid'] for g in facts['gpus'])) == 8
        for _warm in range(5):  # warm up
            smi.parse_nvidia_smi_xml(doc)
        times = []
        for _run in range(args.runs):
            t0 = time.perf_counter()
            smi.parse_nvidia_smi_xml(doc)
            times.append((time.perf_counter() - t0) * 1000.0)
        times.sort()
        median = statistics.median(times)
        p95 = times[int(len(times) * 0.95) - 1]
        passed = median <= BUDGET_MS
        ok = ok and passed
        rows.append((name, len(doc), args.runs, times[0], median, p95, times[-1], 'PASS' if passed else 'FAIL'))

    print('8-GPU documents built by replicating the <gpu> element of a real capture (distinct minor numbers, '
          'bus ids, UUIDs)')
    print('Python %s on %s; budget: median <= %.0f ms' % (sys.version.split()[0], sys.platform, BUDGET_MS))
    header = ('source capture (x8)', 'bytes', 'runs', 'min ms', 'median ms', 'p95 ms', 'max ms', 'result')
    widths = [max(len(header[0]), max(len(r[0]) for r in rows)), 8, 5, 8, 10, 8, 8, 6]
    print('  '.join(h.ljust(w) for h, w in zip(header, widths)))
    print('  '.join('-' * w for w in widths))
    for row in rows:
        cells = [row[0], str(row[1]), str(row[2])] + ['%.3f' % v for v in row[3:7]] + [row[7]]
        print('  '.join(c.ljust(w) for c, w in zip(cells, widths)))
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
