#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: gpg_keyring
short_description: Install a repository signing key only if its fingerprint is the pinned one
version_added: 0.3.0
description:
  - Takes an OpenPGP public key from a URL (downloaded on the node) or from given content, reads its primary key
    fingerprints with C(gpg --show-keys --with-colons) in a throw-away GNUPGHOME, and refuses it unless it holds
    exactly one primary key whose fingerprint is O(fingerprint). Only then is it written to O(dest), for apt's
    C(signed-by=) or dnf's C(gpgkey=).
  - A refused or unreachable key writes nothing, and the message says what was expected and what was found.
  - Run it with C(check_mode) to check a key without writing it (preflight).
author:
  - baremetal.gpu maintainers (@baremetal-gpu)
requirements:
  - gpg (GnuPG 2.1.23 or later, for C(--show-keys)) on the node.
extends_documentation_fragment:
  - baremetal.gpu.attributes
attributes:
  check_mode:
    details: Downloads and checks the key, writes nothing.
options:
  url:
    description: Where to download the key (on the node). Exactly one of O(url), O(content) and O(content_b64).
    type: str
  content:
    description: The key as ASCII-armored text.
    type: str
  content_b64:
    description: The key file's bytes, base64-encoded (armored or binary), for example from C(slurp).
    type: str
  fingerprint:
    description: The pinned primary key fingerprint; spaces are ignored.
    type: str
    required: true
  dest:
    description: Where to write the key. The suffix must suit apt when it is an apt keyring (C(.asc) armored,
      C(.gpg) binary); RV(armored) says which the key is.
    type: path
    required: true
  mode:
    description: Mode of O(dest).
    type: raw
    default: '0644'
  timeout:
    description: Seconds to wait for the download.
    type: int
    default: 30
  validate_certs:
    description: Verify the server's TLS certificate.
    type: bool
    default: true
  name:
    description: The name of the variable that holds the key or its URL, used in messages.
    type: str
    default: key
seealso:
  - name: gpg's colon output (GnuPG doc/DETAILS)
    description: The record format read for the fingerprints.
    link: https://github.com/gpg/gnupg/blob/master/doc/DETAILS
"""

EXAMPLES = r"""
- name: NVIDIA's key, downloaded on the node and checked against the pinned fingerprint
  baremetal.gpu.gpg_keyring:
    url: https://nvidia.github.io/libnvidia-container/gpgkey
    fingerprint: C95B321B61E88C1809C4F759DDCAE044F796ECB0
    dest: /etc/apt/keyrings/nvidia-container-toolkit.asc
"""

RETURN = r"""
fingerprints:
  description: The primary key fingerprints found.
  returned: always
  type: list
  elements: str
  sample: [C95B321B61E88C1809C4F759DDCAE044F796ECB0]
armored:
  description: Whether the key is ASCII-armored.
  returned: always
  type: bool
dest:
  description: Where the key is (or would be) written.
  returned: always
  type: str
source:
  description: Where the key came from (the URL, or V(content)).
  returned: always
  type: str
"""

import base64
import os
import shutil
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import fetch_url

from ansible_collections.baremetal.gpu.plugins.module_utils import gpg

ARMOR = b'-----BEGIN PGP PUBLIC KEY BLOCK-----'


def obtain(module):
    params = module.params
    name = params['name']
    if params['url']:
        response, info = fetch_url(module, params['url'], timeout=params['timeout'], force=True)
        status = info.get('status', -1)
        if response is None or status != 200:
            module.fail_json(msg='%s: could not download the key from %s (HTTP status %s: %s). Nothing was written. '
                                 'Check that the node reaches it, or set %s to a mirror or the key itself'
                             % (name, params['url'], status, info.get('msg', ''), name),
                             fingerprints=[], armored=False, dest=params['dest'], source=params['url'])
        return response.read(), params['url']
    if params['content'] is not None:
        return params['content'].encode('utf-8'), 'content'
    try:
        return base64.b64decode(params['content_b64']), 'content'
    except (TypeError, ValueError) as exc:
        module.fail_json(msg='%s: content_b64 is not base64: %s' % (name, exc))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            url=dict(type='str'),
            content=dict(type='str', no_log=False),
            content_b64=dict(type='str', no_log=False),
            fingerprint=dict(type='str', required=True),
            dest=dict(type='path', required=True),
            mode=dict(type='raw', default='0644'),
            timeout=dict(type='int', default=30),
            validate_certs=dict(type='bool', default=True),
            name=dict(type='str', default='key'),
        ),
        required_one_of=[('url', 'content', 'content_b64')],
        mutually_exclusive=[('url', 'content', 'content_b64')],
        supports_check_mode=True,
    )
    params = module.params
    name = params['name']
    if not gpg.valid_fingerprint(params['fingerprint']):
        module.fail_json(msg='the pinned fingerprint %r is not 40 (or 64) hex digits' % params['fingerprint'])
    data, source = obtain(module)
    armored = data.lstrip().startswith(ARMOR)
    home = tempfile.mkdtemp(prefix='gpg-keyring-')
    try:
        key_file = os.path.join(home, 'key')
        with open(key_file, 'wb') as handle:
            handle.write(data)
        gpg_bin = module.get_bin_path('gpg', required=True)
        rc, out, err = module.run_command([gpg_bin, '--batch', '--no-options', '--homedir', home, '--show-keys',
                                           '--with-colons', key_file], environ_update={'LC_ALL': 'C'})
    finally:
        shutil.rmtree(home, ignore_errors=True)
    common = dict(armored=armored, dest=params['dest'], source=source)
    ok, found, why = gpg.check_key(out if rc == 0 else '', params['fingerprint'])
    if not ok:
        module.fail_json(msg='%s is not the pinned signing key: %s%s. Nothing was written (%s).'
                         % (name, why, (' (gpg rc %s: %s)' % (rc, err.strip())) if rc != 0 else '', params['dest']),
                         fingerprints=found, **common)
    changed = True
    if os.path.exists(params['dest']):
        with open(params['dest'], 'rb') as handle:
            changed = handle.read() != data
    if changed and not module.check_mode:
        directory = os.path.dirname(params['dest'])
        handle, tmp = tempfile.mkstemp(dir=directory, prefix='.gpg-keyring-')
        with os.fdopen(handle, 'wb') as out_file:
            out_file.write(data)
        module.atomic_move(tmp, params['dest'])
    file_args = module.load_file_common_arguments(dict(path=params['dest'], mode=params['mode'], owner='root',
                                                       group='root'))
    if not module.check_mode and os.path.exists(params['dest']):
        changed = module.set_fs_attributes_if_different(file_args, changed)
    module.exit_json(changed=changed, fingerprints=found, **common)


if __name__ == '__main__':
    main()
