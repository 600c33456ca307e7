#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: render_files
short_description: Write a directory of rendered files in one step, and remove the stale ones
version_added: 0.4.0
description:
  - Writes each file of O(files) and O(secret_files) under O(path) (the content already rendered, for example by
    the C(ansible.builtin.template) lookup), creates O(path) and the files' directories with O(dir_mode), and in
    each directory of O(prune) removes the C(*.yaml) files that are not among them. Nothing else in O(path) is
    touched.
  - A file is written only when its bytes differ (to a temporary file beside it, then renamed over it), its mode
    set only when it differs; a second run with the same files changes nothing.
  - One module run for a whole directory, where a C(template) task per file runs two (the cluster roles' render
    mode writes about ten files a release; the make test budget, docs/benchmarks.md).
  - The content of O(secret_files) is never logged nor shown in a diff; their names are.
author:
  - baremetal.gpu maintainers (@baremetal-gpu)
extends_documentation_fragment:
  - baremetal.gpu.attributes
attributes:
  check_mode:
    details: In check mode it says what it would write and remove, and writes nothing.
  diff_mode:
    support: full
    details: The before and after of each file of O(files) it writes; never of O(secret_files).
options:
  path:
    description: The directory the files go in.
    type: path
    required: true
  files:
    description: The files, a mapping of a name relative to O(path) (for example C(manifests/01-namespace.yaml)) to
      its content.
    type: dict
    default: {}
  secret_files:
    description: Files whose content is secret (Kubernetes Secrets), as O(files); their content is not logged.
    type: dict
    default: {}
  mode:
    description: The mode of every file written, octal (quote it in YAML, as for M(ansible.builtin.file)).
    type: raw
    default: '0600'
  dir_mode:
    description: The mode of O(path) and of the directories of the files (and of those it creates above O(path)).
    type: raw
    default: '0700'
  prune:
    description: Directories relative to O(path) (V('') for O(path) itself) whose C(*.yaml) files not in O(files) or
      O(secret_files) are removed.
    type: list
    elements: str
    default: []
seealso:
  - module: ansible.builtin.template
"""

EXAMPLES = r"""
- name: Write values.yaml and the manifests of a release, remove the manifests it no longer has
  baremetal.gpu.render_files:
    path: /srv/render/dcgm_exporter
    files:
      values.yaml: "{{ lookup('ansible.builtin.template', 'values.yaml.j2') }}"
      manifests/01-namespace-nvidia-dcgm.yaml: "{{ namespace | to_nice_yaml }}"
    prune: [manifests]
"""

RETURN = r"""
written:
  description: The files written (or that would be, in check mode), or whose mode was set, relative to O(path).
  returned: always
  type: list
  elements: str
  sample: [values.yaml, manifests/03-servicemonitor-dcgm-exporter.yaml]
removed:
  description: The stale files removed (or that would be), relative to O(path).
  returned: always
  type: list
  elements: str
  sample: [manifests/04-prometheusrule-gpu-alerts.yaml]
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes, to_text

from ansible_collections.baremetal.gpu.plugins.module_utils import render_dir


def octal(module, name):
    value = module.params[name]
    if isinstance(value, int):  # an unquoted 0600 in YAML is the integer 384 already, as the file module reads it
        mode = value
    else:
        try:
            mode = int(value, 8)
        except ValueError:
            mode = -1
    if not 0 <= mode <= 0o7777:
        module.fail_json(msg='%s: %r is not an octal mode such as 0600' % (name, value))
    return mode


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type='path', required=True),
            files=dict(type='dict', default={}),
            secret_files=dict(type='dict', default={}, no_log=True),
            mode=dict(type='raw', default='0600'),
            dir_mode=dict(type='raw', default='0700'),
            prune=dict(type='list', elements='str', default=[]),
        ),
        supports_check_mode=True,
    )
    params = module.params
    file_mode, dir_mode = octal(module, 'mode'), octal(module, 'dir_mode')
    both = set(params['files']) & set(params['secret_files'])
    if both:
        module.fail_json(msg='a file is in both files and secret_files: %s' % ', '.join(sorted(both)))
    files = {}
    for name, content in list(params['files'].items()) + list(params['secret_files'].items()):
        why = render_dir.relative_name_error(name)
        if why:
            module.fail_json(msg='files: %s' % why)
        files[name] = to_bytes('' if content is None else content, errors='surrogate_or_strict')
    for directory in params['prune']:
        why = directory and render_dir.relative_name_error(directory)
        if why:
            module.fail_json(msg='prune: %s' % why)
    result = render_dir.plan(params['path'], files, file_mode, dir_mode, params['prune'])
    changed = render_dir.changed(result)
    if changed and not module.check_mode:
        try:
            render_dir.apply(params['path'], files, file_mode, dir_mode, result)
        except (IOError, OSError) as exc:
            module.fail_json(msg='could not write the files in %s: %s' % (params['path'], to_text(exc)))
    out = dict(changed=changed, written=sorted(result['write'] + result['chmod']), removed=result['remove'])
    if module._diff:
        out['diff'] = [dict(before_header=name, after_header=name,
                            before=to_text(result['before'].get(name, b''), errors='surrogate_or_strict'),
                            after=to_text(files[name], errors='surrogate_or_strict'))
                       for name in result['write'] if name in params['files']]
    module.exit_json(**out)


if __name__ == '__main__':
    main()
