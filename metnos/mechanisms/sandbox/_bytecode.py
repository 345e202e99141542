"""The protocol helper's bytecode, compiled once per process and bound beside its source.

Every executor run imports the helper afresh with `python -B`, which never writes bytecode:
compiling it took ~5 ms of each run (a fresh interpreter's first compile), as long as the
rest of the helper's start. So the host compiles it once, in checked-hash mode, into a folder
of its own (0700, removed at exit), and the runner binds the file read-only at the place the
interpreter looks (`PYLIB_DIR/__pycache__/`). Checked-hash: the interpreter uses it only when
it matches the source bound beside it byte for byte (a changed helper is compiled afresh, and
refused anyway by its signature), and only an interpreter of the same version finds it (its
name carries the cache tag). Nothing is compiled from anything but the helper itself.
"""

from __future__ import annotations

import atexit
import py_compile
import shutil
import sys
import tempfile
from functools import lru_cache
from pathlib import Path


@lru_cache(maxsize=8)
def compiled(source: Path, module: str) -> Path | None:
    """`source`, imported as `module` in the sandbox, compiled to `<module>.<cache tag>.pyc`
    in this process's folder; None when it cannot be (the run then compiles it as before)."""
    tag = sys.implementation.cache_tag
    if tag is None:  # an interpreter that writes no bytecode
        return None
    folder = Path(tempfile.mkdtemp(prefix="metnos-pyc-"))
    atexit.register(shutil.rmtree, folder, True)
    target = folder / f"{module}.{tag}.pyc"
    try:
        py_compile.compile(str(source), cfile=str(target), doraise=True,
                           invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
    except (OSError, py_compile.PyCompileError):
        return None
    return target
