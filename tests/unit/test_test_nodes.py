# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kept: the test nodes come from the OS matrix. scripts/build-images.sh reads each tested row's
test_node, codename and distribution from OS_MATRIX and says only how a node is laid out (node_layout); the scenarios
name their nodes by image (localhost/baremetal-gpu-<node>) and scripts/test-all.sh reads them from there. So a
scenario's node must be a test node of the matrix, and every tested release must have a layout to be built with."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import os
import re

from ansible_collections.baremetal.gpu.plugins.module_utils import support

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))


def matrix_nodes():
    return set(row['test_node'] for row in support.OS_MATRIX if row['tested'] and row['test_node'])


def layouts():
    with open(os.path.join(ROOT, 'scripts', 'build-images.sh'), encoding='utf-8') as handle:
        text = handle.read()
    body = text[text.index('node_layout() {'):]
    body = body[:body.index('\n}\n')]
    return set(re.findall(r'^\s+([a-z0-9]+)\) echo ', body, re.M))


def scenario_nodes():
    nodes = {}
    for path in glob.glob(os.path.join(ROOT, 'molecule', '*', 'molecule.yml')):
        with open(path, encoding='utf-8') as handle:
            for node in re.findall(r'baremetal-gpu-([a-z0-9]+)', handle.read()):
                nodes.setdefault(node, []).append(os.path.basename(os.path.dirname(path)))
    return nodes


def test_every_tested_release_has_a_test_node_and_a_layout():
    tested = [row['key'] for row in support.OS_MATRIX if row['tested']]
    assert tested and all(row['test_node'] for row in support.OS_MATRIX if row['tested'])
    assert matrix_nodes() == layouts(), 'build-images.sh node_layout must lay out exactly the matrix test nodes'


def test_every_scenario_node_is_a_test_node_of_the_matrix():
    nodes = scenario_nodes()
    assert nodes, 'no scenario names a test node image'
    stray = dict((node, scenarios) for node, scenarios in nodes.items() if node not in matrix_nodes())
    assert stray == {}, 'scenarios use nodes the OS matrix does not list: %s' % stray
