#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: containerd_runtime_config
short_description: Plan containerd's configuration for the NVIDIA runtime (read-only)
version_added: 0.3.0
description:
  - Reads containerd's main config and the files it imports, and returns the content of a drop-in that registers
    the NVIDIA runtime and the main config with that drop-in in its C(imports). It writes nothing; the role writes
    both files with C(validate:) by containerd, so that check mode and diff work.
  - "containerd 1.6 and 1.7 replace a plugin's whole table with an imported one: the drop-in then carries the
    user's whole CRI table with the runtime merged in. containerd 2.x merges imported tables key by key: the
    drop-in then holds only the runtime (and C(default_runtime_name) when asked). Both were measured with the real
    binaries."
  - The drop-in has the main config's version (2 or 3); config version 4 (containerd 2.3) is refused.
  - "CDI: on containerd 1.7 the drop-in sets C(enable_cdi = true) and C(cdi_spec_dirs); containerd 2.x has CDI on
    by default and nothing is written, but an explicit C(enable_cdi = false) is refused. containerd 1.6 and older
    cannot read CDI specs: refused when O(cdi_enabled) is true."
  - Parses TOML with the standard library's tomllib, or on Python older than 3.11 with a reader shipped with the
    collection, so it needs no package on the node and works in check mode.
author:
  - baremetal.gpu maintainers (@baremetal-gpu)
requirements:
  - containerd 1.5 or later on the node (its C(--version) output is passed in O(containerd_version)).
extends_documentation_fragment:
  - baremetal.gpu.attributes
options:
  config:
    description: Main containerd config. It may be missing; its content is then planned from nothing.
    type: path
    default: /etc/containerd/config.toml
  dropin:
    description: Path of the drop-in the role writes (it is left out when reading the existing imports).
    type: path
    required: true
  import_entry:
    description: The C(imports) entry that covers O(dropin), for example C(/etc/containerd/conf.d/*.toml).
    type: str
    required: true
  runtime_name:
    description: Name of the runtime, the RuntimeClass handler (C(lookup('baremetal.gpu.support', 'runtime_handler'))).
    type: str
    required: true
  binary:
    description: The NVIDIA runtime binary (C(BinaryName)).
    type: path
    default: /usr/bin/nvidia-container-runtime
  containerd_version:
    description: The output of C(containerd --version).
    type: str
    required: true
  default_runtime:
    description: Make the runtime containerd's default runtime.
    type: bool
    default: false
  cdi_enabled:
    description: Whether containerd must read CDI specs.
    type: bool
    default: false
  cdi_spec_dirs:
    description: CDI spec directories (containerd 1.7, where they are written).
    type: list
    elements: path
    default: [/etc/cdi, /var/run/cdi]
seealso:
  - module: baremetal.gpu.cdi_spec_check
  - name: containerd config imports (man page containerd-config.toml(5))
    description: How imported files are merged and versioned.
    link: https://github.com/containerd/containerd/blob/main/docs/man/containerd-config.toml.5.md
"""

EXAMPLES = r"""
- name: Plan the drop-in
  baremetal.gpu.containerd_runtime_config:
    dropin: /etc/containerd/conf.d/99-nvidia.toml
    import_entry: /etc/containerd/conf.d/*.toml
    runtime_name: nvidia
    containerd_version: "{{ containerd_version_cmd.stdout }}"
    cdi_enabled: true
  register: plan

- name: Write it, checked by containerd
  ansible.builtin.copy:
    content: "{{ plan.dropin_content }}"
    dest: /etc/containerd/conf.d/99-nvidia.toml
    mode: "0644"
    validate: containerd --config %s config dump
"""

RETURN = r"""
containerd_version:
  description: containerd's version.
  returned: success
  type: str
  sample: 2.2.1
version:
  description: The config version of the main config (and of the drop-in).
  returned: success
  type: int
  sample: 3
plugin:
  description: The CRI plugin the runtime goes under.
  returned: success
  type: str
  sample: io.containerd.cri.v1.runtime
merge:
  description: How this containerd merges imports, V(plugin) (1.x, whole plugin tables) or V(key) (2.x).
  returned: success
  type: str
  sample: key
config_exists:
  description: Whether the main config exists.
  returned: success
  type: bool
main_content:
  description: The main config with the drop-in in its imports.
  returned: success
  type: str
main_changed:
  description: Whether the main config must be (re)written.
  returned: success
  type: bool
dropin_content:
  description: The drop-in's content.
  returned: success
  type: str
credentials:
  description:
    - Whether the drop-in (C(dropin)) and the main config (C(main)) hold credentials (registry passwords, auths,
      identity tokens). On containerd 1.x the drop-in carries the user's whole CRI table, credentials included.
      The role writes such a file 0600 and hides its content (C(no_log)); register this module's result with
      C(no_log), since C(main_content) and C(dropin_content) hold those credentials.
  returned: success
  type: dict
  sample: {"dropin": true, "main": true}
main_mode:
  description:
    - The mode to write the main config with, as an octal string. The mode it has, without the group and other
      bits when it holds credentials; C(0644) for a new file.
  returned: success
  type: str
  sample: "0600"
cdi:
  description: C(supported), C(default_on) (containerd 2.x), C(requested), C(written) (C(enable_cdi) in the drop-in), C(spec_dirs).
  returned: success
  type: dict
  sample: {"supported": true, "default_on": true, "requested": true, "written": false, "spec_dirs": ["/etc/cdi", "/var/run/cdi"]}
"""

import glob
import os
import stat

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.baremetal.gpu.plugins.module_utils import containerd, toml_compat


def read(path):
    with open(path, encoding='utf-8') as handle:
        return handle.read()


def imported_files(config, data_imports, dropin):
    """The files the main config imports today, in containerd's order, without the role's drop-in."""
    found = []
    for entry in data_imports:
        pattern = entry if os.path.isabs(entry) else os.path.join(os.path.dirname(config), entry)
        paths = sorted(glob.glob(pattern)) if '*' in pattern else ([pattern] if os.path.exists(pattern) else [])
        for path in paths:
            if os.path.abspath(path) != os.path.abspath(dropin):
                found.append((path, read(path)))
    return found


def main():
    module = AnsibleModule(
        argument_spec=dict(
            config=dict(type='path', default='/etc/containerd/config.toml'),
            dropin=dict(type='path', required=True),
            import_entry=dict(type='str', required=True),
            runtime_name=dict(type='str', required=True),
            binary=dict(type='path', default='/usr/bin/nvidia-container-runtime'),
            containerd_version=dict(type='str', required=True),
            default_runtime=dict(type='bool', default=False),
            cdi_enabled=dict(type='bool', default=False),
            cdi_spec_dirs=dict(type='list', elements='path', default=['/etc/cdi', '/var/run/cdi']),
        ),
        supports_check_mode=True,
    )
    params = module.params
    config = params['config']
    text = read(config) if os.path.exists(config) else None
    try:
        current_imports = (toml_compat.loads(text).get('imports') or []) if text else []
    except ValueError as exc:
        module.fail_json(msg='%s is not valid TOML: %s' % (config, exc))
    try:
        result = containerd.plan(config, text, imported_files(config, current_imports, params['dropin']),
                                 params['dropin'], params['import_entry'], params['runtime_name'], params['binary'],
                                 params['containerd_version'], params['default_runtime'], params['cdi_enabled'],
                                 params['cdi_spec_dirs'])
    except containerd.PlanError as exc:
        module.fail_json(msg=str(exc))
    result.pop('cri', None)
    mode = stat.S_IMODE(os.stat(config).st_mode) if text is not None else 0o644
    result['main_mode'] = '%04o' % (mode & 0o7700 if result['credentials']['main'] else mode)
    module.exit_json(changed=False, **result)


if __name__ == '__main__':
    main()
