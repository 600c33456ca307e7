# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A real RKE2 GPU Node (tests/fixtures/k8s-nodes/edgexr__rke2-vgpu-A16-4Q-nodes.json, its first item), and copies
of it under other names, for the maintenance engine's unit tests."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import os

FIXTURE = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'k8s-nodes',
                       'edgexr__rke2-vgpu-A16-4Q-nodes.json')
with open(FIXTURE, encoding='utf-8') as _handle:
    NORI = json.load(_handle)['items'][0]


def named(name, unschedulable=False, labels=None):
    """A copy of the real Node named ``name``, cordoned when ``unschedulable``, with ``labels`` added."""
    out = copy.deepcopy(NORI)
    out['metadata']['name'] = name
    out['metadata']['labels'].update(labels or {})
    if unschedulable:
        out['spec']['unschedulable'] = True
    return out
