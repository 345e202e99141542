"""The protocol helper's bytecode, compiled once and bound beside its source.

Every executor run imports the helper afresh with `python -B`, which never writes bytecode:
compiling it took ~5 ms of each run (a fresh interpreter's first compile), as long as the
rest of the helper's start. So the host compiles it once per version of the helper, in
checked-hash mode, into this user's own folder under the temporary directory (0700, checked
to be ours and closed to others before anything is written or bound; named by the source's
digest, so processes share it and nothing piles up), and the runner binds the file read-only
where the interpreter looks (`PYLIB_DIR/__pycache__/`). Checked-hash: the interpreter uses it
only when it matches the source bound beside it byte for byte (a changed helper is compiled
afresh, and refused anyway by its signature), and only an interpreter of the same version
finds it (its name carries the cache tag). Nothing is compiled from anything but the helper.
"""

from __future__ import annotations

import hashlib
import os
import py_compile
import stat
import sys
import tempfile
from functools import lru_cache
from pathlib import Path


@lru_cache(maxsize=8)
def compiled(source: Path, module: str) -> Path | None:
    """`source`, imported as `module` in the sandbox, compiled to `<module>.<cache tag>.pyc`;
    None when it cannot be (the run then compiles it as before)."""
    tag = sys.implementation.cache_tag
    folder = _own_folder()
    if tag is None or folder is None:  # an interpreter that writes no bytecode; no safe place
        return None
    try:
        digest = hashlib.sha256(source.read_bytes()).hexdigest()[:24]
        target = folder / digest / f"{module}.{tag}.pyc"
        if not target.is_file():
            target.parent.mkdir(mode=0o700, exist_ok=True)
            py_compile.compile(str(source), cfile=str(target), doraise=True,
                               invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
    except (OSError, py_compile.PyCompileError):
        return None
    return target


def _own_folder(parent: Path | None = None) -> Path | None:
    """This user's folder for compiled helpers (under `parent`, the temporary directory by
    default); None unless it is a real folder of ours that no one else may write to (never
    one someone else made for us)."""
    folder = Path(parent or tempfile.gettempdir()) / f"metnos-pyc-{os.getuid()}"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        info = folder.lstat()
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        return None
    return folder
