# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter baremetal.gpu.preflight_findings passes the role's variables as they come (strings from -e) to
plugins/module_utils/preflight.py, whose findings are tested in tests/unit/plugins/module_utils/test_preflight.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

from ansible_collections.baremetal.gpu.plugins.filter import support as filters

FIXTURE = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'device', 'h100-vm-2026-11-26',
                       'preflight-report.json')


def test_preflight_findings_filter_on_the_h100_report():
    with open(FIXTURE, encoding='utf-8') as handle:
        report = list(json.load(handle)['hosts'].values())[0]
    assert 'preflight_findings' in filters.FilterModule().filters()
    got = filters.preflight_findings(report, 'true', '2048')
    assert got == {'blockers': report['blockers'], 'warnings': report['warnings']}
    # -e preflight_require_gpu=false: no GPU is then a warning, not a blocker.
    relaxed = filters.preflight_findings(dict(report, gpus=[]), 'false', '2048')
    assert not any(line.startswith('no NVIDIA GPU (vendor') for line in relaxed['blockers'])
    assert 'no NVIDIA GPU on the PCI bus (allowed here: preflight_require_gpu is false)' in relaxed['warnings']
