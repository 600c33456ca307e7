# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""A directory of files written as one step (baremetal.gpu.render_files): what differs from the wanted files, then
the change.

plan() reads the directory and says what a write would change, apply() does it. A file is rewritten only when its
bytes differ, chmod-ed only when its mode differs; a directory listed in ``prune`` loses the ``*.yaml`` files that
are not wanted any more. Nothing else in the directory is touched.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import stat
import tempfile


def _mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def _read(path):
    with open(path, 'rb') as handle:
        return handle.read()


def relative_name_error(name):
    """Why ``name`` cannot be a file of the directory (absolute, empty, or leaving it), or None."""
    parts = name.split('/')
    if not name or name.startswith('/') or any(part in ('', '.', '..') for part in parts):
        return '%r is not a relative path inside the directory' % name
    return None


def plan(path, files, file_mode, dir_mode, prune):
    """What writing ``files`` ({relative name: bytes}) into ``path`` changes.

    Returns a dict: ``dirs`` (directories to create or chmod: path itself and the parents of the files),
    ``write`` (names whose content differs or that are missing), ``chmod`` (names whose content is right but whose
    mode is not ``file_mode``), ``remove`` (names of ``*.yaml`` files in a ``prune`` directory that are not wanted),
    ``before`` ({name: bytes} of the files to write that exist now).
    """
    dirs = [path] + sorted({os.path.join(path, os.path.dirname(name)) for name in files if os.path.dirname(name)}
                           | {os.path.join(path, directory) for directory in prune})
    result = {'dirs': [], 'write': [], 'chmod': [], 'remove': [], 'before': {}}
    for directory in dirs:
        if not os.path.isdir(directory) or _mode(directory) != dir_mode:
            result['dirs'].append(directory)
    for name in sorted(files):
        target = os.path.join(path, name)
        if not os.path.isfile(target):
            result['write'].append(name)
            continue
        current = _read(target)
        if current != files[name]:
            result['write'].append(name)
            result['before'][name] = current
        elif _mode(target) != file_mode:
            result['chmod'].append(name)
    for directory in prune:
        full = os.path.join(path, directory)
        if not os.path.isdir(full):
            continue
        for entry in sorted(os.listdir(full)):
            name = os.path.join(directory, entry) if directory else entry
            if entry.endswith('.yaml') and name not in files and os.path.isfile(os.path.join(full, entry)):
                result['remove'].append(name)
    return result


def changed(result):
    return bool(result['dirs'] or result['write'] or result['chmod'] or result['remove'])


def _makedirs(directory, dir_mode):
    """Create ``directory`` and the missing directories above it, each with ``dir_mode`` (as the file module's
    state=directory does; os.makedirs gives the parents the umask's mode)."""
    if os.path.isdir(directory):
        return
    parent = os.path.dirname(directory.rstrip('/'))
    if parent and parent != directory:
        _makedirs(parent, dir_mode)
    os.mkdir(directory, dir_mode)
    os.chmod(directory, dir_mode)


def apply(path, files, file_mode, dir_mode, result):
    """Make the changes ``plan`` found: directories, then each file written to a temporary file beside it and
    renamed over it (a reader never sees half a file), then the stale files removed."""
    for directory in result['dirs']:
        _makedirs(directory, dir_mode)
        os.chmod(directory, dir_mode)
    for name in result['write']:
        target = os.path.join(path, name)
        handle, tmp = tempfile.mkstemp(dir=os.path.dirname(target), prefix='.render-')
        try:
            with os.fdopen(handle, 'wb') as out:
                out.write(files[name])
            os.chmod(tmp, file_mode)
            os.rename(tmp, target)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
    for name in result['chmod']:
        os.chmod(os.path.join(path, name), file_mode)
    for name in result['remove']:
        os.unlink(os.path.join(path, name))
