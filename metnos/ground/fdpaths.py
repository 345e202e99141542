"""Paths beneath a directory descriptor, walked one component at a time, links never followed.

The host reads (`metnos.ground.reversibility`) and writes (`metnos.mechanisms.undo`,
`metnos.ground.restore`) the workspace only through these: every component is opened with
`O_NOFOLLOW` from the descriptor of its parent, so a symlink swapped in after a check fails the
operation (ELOOP/ENOTDIR) instead of reaching outside the workspace.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import os
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_RENAME_NOREPLACE = 1


def split_rel(rel: str) -> list[str]:
    """The components of a workspace-relative path; ValueError if absolute or with `..`."""
    if not isinstance(rel, str) or "\0" in rel or rel.startswith("/"):
        raise ValueError(f"not a workspace-relative path: {rel!r}")
    parts = [p for p in PurePosixPath(rel).parts if p not in (".", "")]
    if any(p == ".." or "/" in p for p in parts):
        raise ValueError(f"not a workspace-relative path: {rel!r}")
    return parts


def open_dir(root_fd: int, parts: Sequence[str], *, create: bool = False,
             mode: int = 0o755) -> int:
    """Open the directory `root/parts...` one component at a time, never following a link
    (ELOOP/ENOTDIR instead); missing components are created (with `mode`) when `create`."""
    fd = os.dup(root_fd)
    try:
        for part in parts:
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, mode, dir_fd=fd)
            inner = os.open(part, DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = inner
        return fd
    except BaseException:
        os.close(fd)
        raise


def open_workspace(workspace: Path) -> int:
    return os.open(workspace, DIR_FLAGS)


def rename_noreplace(src_fd: int, src: str, dst_fd: int, dst: str) -> None:
    """renameat2(RENAME_NOREPLACE): never overwrites; a last-component link is moved as is."""
    fn = _renameat2()
    if fn is not None:
        if fn(src_fd, os.fsencode(src), dst_fd, os.fsencode(dst), _RENAME_NOREPLACE) == 0:
            return
        err = ctypes.get_errno()
        if err not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
            raise OSError(err, os.strerror(err), dst)
    if lexists_at(dst_fd, dst):  # no renameat2 here: check, then rename
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), dst)
    os.rename(src, dst, src_dir_fd=src_fd, dst_dir_fd=dst_fd)


@functools.cache
def _renameat2() -> Any:
    fn = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    if fn is not None:
        fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                       ctypes.c_uint]
    return fn


def lexists_at(dir_fd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def lexists(ws_fd: int, rel: str) -> bool:
    """Whether `rel` exists (as anything, a link included) without following any link."""
    parts = split_rel(rel)
    if not parts:
        return True
    try:
        parent = open_dir(ws_fd, parts[:-1])
    except OSError:
        return False
    try:
        return lexists_at(parent, parts[-1])
    finally:
        os.close(parent)
