"""Durable writes of the instance's state: a crash leaves the old version or the new one.

`write_atomic` writes a temporary file in the target's folder (created with the final mode,
0600 unless told otherwise, before a byte is written), fsyncs it, renames it over the target
(or, with `replace=False`, links it in place only if nothing is there yet) and fsyncs the
folder, so the new name survives a power cut too. `make_dir` creates folders the same way:
each new one is made durable in its parent. Every writer of state under METNOS_HOME (keys,
secrets, settings, before-records, checkpoints, signatures) goes through here.

Temporary files are named `.<name>.<random>.tmp`; `remove_temporaries` clears the ones a
killed process left behind (at start-up, before anything else writes there).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

TMP_SUFFIX = ".tmp"


def fsync_dir(path: Path) -> None:
    """Make the entries of folder `path` (names created, renamed, removed) durable."""
    _fsync(path, os.O_DIRECTORY)


def fsync_path(path: Path) -> None:
    """Flush a file's bytes (a copy made elsewhere) to disk."""
    _fsync(path, os.O_NOFOLLOW)


def _fsync(path: Path, flags: int) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def make_dir(path: Path, mode: int = 0o700) -> bool:
    """Create `path` (with `mode`) and its missing parents (as `mkdir -p` would), each made
    durable in its parent. Returns True when `path` was missing."""
    missing: list[Path] = []
    probe = path
    while not probe.exists() and probe.parent != probe:
        missing.append(probe)
        probe = probe.parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):  # made by someone else meanwhile: fine
            os.mkdir(folder, mode if folder == path else 0o777)
            fsync_dir(folder.parent)
    return bool(missing)


def write_atomic(path: Path, data: bytes, *, mode: int = 0o600, replace: bool = True,
                 sync_dir: bool = True) -> bool:
    """Write `data` to `path` durably; readers see the old file or the new one, never half.

    `replace=False` keeps a file already there (returns False, writes nothing): for what is
    created once (keys, tokens, templates). `sync_dir=False` skips the folder's fsync (only
    for state where losing the latest rename is harmless, e.g. a checkpoint that may lag)."""
    if not replace and os.path.lexists(path):
        return False
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TMP_SUFFIX, dir=path.parent)
    placed = False
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if replace:
            os.replace(tmp, path)
            placed = True
        else:
            try:
                os.link(tmp, path)  # never replaces: EEXIST when the file is there already
            except FileExistsError:
                return False
    finally:
        if not placed:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
    if sync_dir:
        fsync_dir(path.parent)
    return True


def write_secret(path: Path, value: str) -> None:
    """A secret (0600 from its first byte), written once: never over one already there."""
    make_dir(path.parent)
    write_atomic(path, (value + "\n").encode("ascii"), mode=0o600, replace=False)


def is_temporary(name: str) -> bool:
    return name.startswith(".") and name.endswith(TMP_SUFFIX) and name.count(".") >= 3


def remove_temporaries(folder: Path) -> list[str]:
    """Delete the temporary files `write_atomic` left in `folder` when its process was
    killed half-way (never a target: those have no leading dot and `.tmp` suffix both)."""
    removed: list[str] = []
    try:
        names = [e.name for e in os.scandir(folder) if e.is_file(follow_symlinks=False)]
    except FileNotFoundError:
        return removed
    for name in names:
        if is_temporary(name):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(folder / name)
                removed.append(name)
    if removed:
        fsync_dir(folder)
    return removed
