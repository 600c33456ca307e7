"""Reading and validating Kubernetes objects, shared by the render and chart tests.

- load_docs: YAML documents as the API server reads them (a bare "=" is a string, as in Go YAML;
  PyYAML's safe loader would refuse it as the "value" tag: the Prometheus Operator CRDs use it);
- Validator: every object against its schema: built-in kinds with kubernetes-validate (strict) for a
  Kubernetes version, custom resources with jsonschema against the openAPIV3Schema of the CRDs in
  tests/fixtures/crds. An object of a kind with no schema is an error, never skipped;
- selector_matches: Kubernetes label selectors (matchLabels, matchExpressions), for Prometheus's
  ServiceMonitor and rule selectors (k8s_replay's label_selector_matches, which the API double uses too).
"""
import functools
import glob
import gzip
import os
import sys

import jsonschema
import kubernetes_validate
import yaml

from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "tests", "unit", "plugins", "modules"))
# pylint: disable=wrong-import-position
from k8s_replay import label_selector_matches as selector_matches  # noqa: E402,F401  pylint: disable=unused-import

CRD_DIR = os.path.join(ROOT, "tests", "fixtures", "crds")


class _Loader(yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader):
    pass


_Loader.add_constructor("tag:yaml.org,2002:value", lambda loader, node: loader.construct_scalar(node))


def load_docs(text_or_path):
    """The documents of a YAML text, or of a file (``.gz``: gzip-compressed)."""
    text = text_or_path
    if os.path.exists(str(text_or_path)):
        opener = gzip.open if str(text_or_path).endswith(".gz") else open
        with opener(text_or_path, "rt", encoding="utf-8") as fh:
            text = fh.read()
    return [d for d in yaml.load_all(text, Loader=_Loader) if d is not None]


def crd_fixture(name):
    """tests/fixtures/crds/<name>.yaml, or <name>.yaml.gz (the large and multi-document ones)."""
    for path in (os.path.join(CRD_DIR, name + ".yaml"), os.path.join(CRD_DIR, name + ".yaml.gz")):
        if os.path.exists(path):
            return path
    raise AssertionError("no CRD fixture %s(.gz) in %s" % (name, CRD_DIR))


def crd_files(nfd_version=None):
    """The CRD fixture files: every monitoring.coreos.com one, and the NFD CRDs of ``nfd_version`` (if any)."""
    files = sorted(glob.glob(os.path.join(CRD_DIR, "monitoring.coreos.com_*.yaml*")))
    if nfd_version:
        files.append(crd_fixture("nfd.k8s-sigs.io_nfd-api-crds_v%s" % nfd_version))
    return files


def crd_schemas(files):
    """{(apiVersion, kind): openAPIV3Schema} of the CRDs in ``files`` (read once per set of files)."""
    return _crd_schemas(tuple(files))


@functools.lru_cache(maxsize=None)
def _crd_schemas(files):
    schemas = {}
    for path in files:
        for crd in load_docs(path):
            for version in crd["spec"]["versions"]:
                key = ("%s/%s" % (crd["spec"]["group"], version["name"]), crd["spec"]["names"]["kind"])
                schemas[key] = version["schema"]["openAPIV3Schema"]
    return schemas


def custom_groups(schemas):
    return {key[0].split("/", maxsplit=1)[0] for key in schemas}


class Validator(object):
    """Validates objects for one Kubernetes version against the built-in schemas and the given CRD schemas."""

    def __init__(self, k8s_version, schemas):
        self.k8s_version = k8s_version
        self.schemas = schemas
        self.groups = custom_groups(schemas)

    def validate(self, obj):
        """Raise on an invalid object or one of a kind without a schema; return 'crd' or 'builtin'."""
        key = (obj.get("apiVersion"), obj.get("kind"))
        group = str(key[0]).split("/", maxsplit=1)[0] if "/" in str(key[0]) else ""
        if key in self.schemas:
            # The validator class directly: the CRD patterns use Go regex syntax ((?i) mid-pattern) that
            # the metaschema check rejects.
            jsonschema.Draft7Validator(self.schemas[key]).validate(obj)
            return "crd"
        if group in self.groups:
            raise AssertionError("no CRD schema for %s %s (tests/fixtures/crds)" % key)
        kubernetes_validate.validate(obj, self.k8s_version, strict=True)
        return "builtin"


def namespace_labels(namespace_obj):
    """The labels of a Namespace as the API server stores it (it adds kubernetes.io/metadata.name)."""
    labels = dict(namespace_obj["metadata"].get("labels") or {})
    labels["kubernetes.io/metadata.name"] = namespace_obj["metadata"]["name"]
    return labels
