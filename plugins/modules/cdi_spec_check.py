#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: cdi_spec_check
short_description: Check that the node's container runtime can read a CDI spec (read-only)
version_added: 0.3.0
description:
  - Reads the C(cdiVersion) of a CDI spec (for example C(/var/run/cdi/nvidia.yaml), written by
    C(nvidia-ctk cdi generate) or C(nvidia-cdi-refresh)) and the version of the CDI library that the runtime's
    binary was built with, and says whether that runtime reads the spec.
  - The library version comes from the Go build information in the binary (upstream and Ubuntu builds), else
    from the Debian package's C(Built-Using) field (Debian builds). A library reads the spec versions up to its own
    C(major.minor.0).
  - "Fails when the runtime cannot read the spec (NVIDIA/nvidia-container-toolkit#1940: toolkit 1.19.1 wrote spec
    0.7.0, which podman 4.9 could not read), or when the spec is missing or has no C(cdiVersion). When the library
    version cannot be read it returns O(ignore_unknown)-dependent: a warning (default) or a failure."
author:
  - baremetal.gpu maintainers (@baremetal-gpu)
extends_documentation_fragment:
  - baremetal.gpu.attributes
options:
  spec:
    description: The CDI spec file.
    type: path
    default: /var/run/cdi/nvidia.yaml
  runtime_binary:
    description: The runtime's binary whose CDI library is checked, for example C(containerd) or C(/usr/sbin/dockerd)
      (a name is looked up on E(PATH)).
    type: str
    required: true
  package:
    description: The Debian package of O(runtime_binary), read for C(Built-Using) when the binary has no build
      information; empty skips that source.
    type: str
    default: ''
  ignore_unknown:
    description: Pass with a warning when the runtime's CDI library version cannot be read.
    type: bool
    default: true
seealso:
  - module: baremetal.gpu.containerd_runtime_config
  - name: CDI specification
    description: The spec format and its versions.
    link: https://github.com/cncf-tags/container-device-interface/blob/main/SPEC.md
"""

EXAMPLES = r"""
- name: Check containerd reads the spec the toolkit wrote
  baremetal.gpu.cdi_spec_check:
    spec: /var/run/cdi/nvidia.yaml
    runtime_binary: /usr/bin/containerd
    package: containerd
"""

RETURN = r"""
spec_version:
  description: The spec's C(cdiVersion).
  returned: when the spec exists
  type: str
  sample: 0.5.0
spec_kind:
  description: The spec's C(kind).
  returned: when the spec exists
  type: str
  sample: nvidia.com/gpu
cdi_library:
  description: The CDI library version of the runtime, empty when unknown.
  returned: always
  type: str
  sample: 1.1.0
cdi_library_source:
  description: Where it was read, V(buildinfo), V(built-using) or V(unknown).
  returned: always
  type: str
max_spec_version:
  description: The newest spec version that library reads.
  returned: when the library version is known
  type: str
  sample: 1.1.0
readable:
  description: Whether the runtime reads the spec; null when unknown.
  returned: always
  type: bool
reason:
  description: One sentence saying why.
  returned: always
  type: str
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.baremetal.gpu.plugins.module_utils import cdi


def main():
    module = AnsibleModule(
        argument_spec=dict(
            spec=dict(type='path', default='/var/run/cdi/nvidia.yaml'),
            runtime_binary=dict(type='str', required=True),
            package=dict(type='str', default=''),
            ignore_unknown=dict(type='bool', default=True),
        ),
        supports_check_mode=True,
    )
    params = module.params
    binary = params['runtime_binary']
    if not os.path.isabs(binary):
        binary = module.get_bin_path(binary, required=False, opt_dirs=['/usr/sbin', '/usr/local/bin', '/usr/local/sbin']) or binary
    if not os.path.exists(binary):
        module.fail_json(msg='%s does not exist: cannot tell which CDI spec versions it reads' % binary)
    with open(binary, 'rb') as handle:
        library = cdi.library_from_buildinfo(handle.read())
    source = 'buildinfo' if library else 'unknown'
    if not library and params['package']:
        rc, out, _err = module.run_command(['dpkg-query', '-W', '-f=${Built-Using}', params['package']],
                                           environ_update={'LC_ALL': 'C'})
        if rc == 0:
            library = cdi.library_from_built_using(out)
            source = 'built-using' if library else 'unknown'
    result = {'changed': False, 'cdi_library': library, 'cdi_library_source': source}
    if library:
        result['max_spec_version'] = cdi.max_spec_version(library)
    if not os.path.exists(params['spec']):
        module.fail_json(msg='the CDI spec %s does not exist' % params['spec'], readable=False,
                         reason='no spec', **result)
    with open(params['spec'], encoding='utf-8', errors='replace') as handle:
        info = cdi.spec_info(handle.read())
    ok, reason = cdi.readable(info['version'], library)
    result.update(spec_version=info['version'], spec_kind=info['kind'], readable=ok,
                  reason='%s: %s (%s)' % (binary, reason, params['spec']))
    if ok is False:
        module.fail_json(msg='%s cannot read the CDI spec %s: %s. The toolkit writes the spec version its '
                             'features need (NVIDIA/nvidia-container-toolkit#1940): pin container_toolkit_version to a '
                             'release that writes a version this runtime reads, upgrade the runtime, or set '
                             'container_toolkit_cdi_enabled=false' % (binary, params['spec'], reason), **result)
    if ok is None and not params['ignore_unknown']:
        module.fail_json(msg='%s: %s' % (binary, reason), **result)
    if ok is None:
        module.warn('%s: cannot tell whether it reads CDI spec %s (%s)' % (binary, info['version'], reason))
    module.exit_json(**result)


if __name__ == '__main__':
    main()
