# -*- coding: utf-8 -*-
"""scripts/galaxy-import-check.py judges galaxy-importer's result: it must fail on what Galaxy reports.

The passing case is the real run (scripts/check-galaxy.sh on the built tarball); here a small collection
and results in the importer's format (galaxy-importer 0.4.44's importer_result.json and log lines) prove
that each kind of problem fails the check, naming it.
"""

from __future__ import absolute_import, division, print_function

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "galaxy-import-check.py")

DONE = "Importer processing completed successfully\n"


def collection(tmp_path):
    root = tmp_path / "gpu"
    for folder in ("plugins/modules", "plugins/filter", "plugins/lookup", "meta", "roles/verify"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    (root / "MANIFEST.json").write_text(json.dumps(
        {"collection_info": {"namespace": "baremetal", "name": "gpu", "version": "0.1.0"}}))
    (root / "meta" / "runtime.yml").write_text('requires_ansible: ">=2.17.0,<2.20.0"\n')
    (root / "plugins" / "modules" / "nvidia_smi.py").write_text("")
    (root / "plugins" / "filter" / "driver_plan.yml").write_text("")
    (root / "plugins" / "filter" / "driver.py").write_text("")   # a FilterModule file
    (root / "plugins" / "lookup" / "support.py").write_text("")
    return root


def result(module_docs=True):
    doc = {"doc": {"short_description": "x"}, "examples": "- x: {}", "return": {"a": {}}}
    return {
        "metadata": {"namespace": "baremetal", "name": "gpu", "version": "0.1.0"},
        "requires_ansible": ">=2.17.0,<2.20.0",
        "docs_blob": {"contents": [
            {"content_type": "module", "content_name": "nvidia_smi", "doc_strings": doc if module_docs else None},
            {"content_type": "filter", "content_name": "driver_plan", "doc_strings": {"doc": {"name": "driver_plan"}}},
            {"content_type": "filter", "content_name": "driver", "doc_strings": None},
            {"content_type": "lookup", "content_name": "support", "doc_strings": {"doc": {"name": "support"}}},
            {"content_type": "role", "content_name": "verify", "doc_strings": {}, "readme_html": "<h1>verify</h1>"},
        ]},
    }


def run(tmp_path, data, log, filters=("baremetal.gpu.driver_plan",)):
    root = collection(tmp_path)
    (tmp_path / "result.json").write_text(json.dumps(data))
    (tmp_path / "importer.log").write_text(log)
    (tmp_path / "filters.json").write_text(json.dumps(list(filters)))
    env = dict(os.environ)
    return subprocess.run([sys.executable, SCRIPT, str(tmp_path / "result.json"), str(tmp_path / "importer.log"),
                           str(root), str(tmp_path / "filters.json")],
                          capture_output=True, text=True, env=env, check=False)


def test_clean_import_passes(tmp_path):
    res = run(tmp_path, result(), "Importing with galaxy-importer 0.4.44\n" + DONE)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "documented: 1 modules, 1 lookups, 1 filters; 1 roles with README; filter files holding them: driver" \
        in res.stdout


def test_module_without_docs_fails(tmp_path):
    # what galaxy-importer 0.4.44 returned before the collection had its own doc fragments
    res = run(tmp_path, result(module_docs=False), DONE)
    assert res.returncode == 1
    assert "FAIL module nvidia_smi has no documentation in the import result" in res.stdout


@pytest.mark.parametrize("line, expected", [
    ("WARNING: roles/verify/tasks/smoke_test.yml:14:7: syntax-check[unknown-module]: couldn't resolve module/action "
     "'kubernetes.core.k8s'.", "importer warning not listed in ALLOWED_WARNINGS: WARNING: roles/verify"),
    ("ERROR: Error running ansible-doc: cmd=\"ansible-doc --type module --json\" returncode=\"1\"",
     "importer error: ERROR: Error running ansible-doc"),
])
def test_importer_warning_or_error_fails(tmp_path, line, expected):
    res = run(tmp_path, result(), line + "\n" + DONE)
    assert res.returncode == 1
    assert expected in res.stdout


def test_filter_listed_by_ansible_doc_without_docs_fails(tmp_path):
    res = run(tmp_path, result(), DONE, filters=("baremetal.gpu.driver_plan", "baremetal.gpu.driver"))
    assert res.returncode == 1
    assert "FAIL filter driver has no documentation in the import result" in res.stdout


def test_wrong_requires_ansible_fails(tmp_path):
    data = result()
    data["requires_ansible"] = ">=2.19.0,<2.20.0"
    res = run(tmp_path, data, DONE)
    assert res.returncode == 1
    assert "requires_ansible read as '>=2.19.0,<2.20.0', meta/runtime.yml says '>=2.17.0,<2.20.0'" in res.stdout
