"""TEST ONLY: a bytecode cache for the sources Python imports from zip files (an AnsiballZ module's module_utils).

zipimport compiles a source file on every import (it writes no .pyc), so each module run compiled the
module_utils it imports from its zip again: about 0.3 of its 0.4 CPU-seconds. This keeps the code objects in
$BAREMETAL_TEST_BYTECODE_CACHE, keyed by the hash of the source, the Python version and the optimization level, so
the code a module runs is always compiled from its own source; each code object gets the file name of the zip it is
imported from, as a plain compile gives it. Loaded by every Python an ansible-playbook of the integration tests
starts (conftest.ansible_env puts this folder on PYTHONPATH), and by every Python the test nodes run through their
connection (the Containerfile copies it in and sets both variables: a scenario runs hundreds of modules on each
node); without the variable, nothing changes.
"""
import os
import sys


def _install(cache_dir):
    import hashlib  # pylint: disable=import-outside-toplevel
    import marshal  # pylint: disable=import-outside-toplevel
    import zipimport  # pylint: disable=import-outside-toplevel

    compile_source = getattr(zipimport, '_compile_source', None)
    if compile_source is None:
        return
    salt = ('%s %s %s' % (sys.version, sys.flags.optimize, marshal.version)).encode()

    def renamed(code, filename):
        consts = tuple(renamed(const, filename) if isinstance(const, type(code)) else const
                       for const in code.co_consts)
        return code.replace(co_filename=filename, co_consts=consts)

    def cached_compile_source(pathname, source):
        if not isinstance(source, bytes):
            return compile_source(pathname, source)
        path = os.path.join(cache_dir, hashlib.sha256(salt + b'\0' + source).hexdigest())
        try:
            with open(path, 'rb') as handle:
                return renamed(marshal.load(handle), pathname)
        except (OSError, EOFError, ValueError, TypeError, AttributeError):
            pass
        code = compile_source(pathname, source)
        tmp = '%s.%d.tmp' % (path, os.getpid())
        try:
            with open(tmp, 'wb') as handle:
                marshal.dump(code, handle)
            os.replace(tmp, path)
        except OSError:
            pass
        return code

    zipimport._compile_source = cached_compile_source  # pylint: disable=protected-access


if os.environ.get('BAREMETAL_TEST_BYTECODE_CACHE'):
    _install(os.environ['BAREMETAL_TEST_BYTECODE_CACHE'])
