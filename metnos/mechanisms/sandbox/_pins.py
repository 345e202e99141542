"""Pin the directories a run mounts: `O_PATH|O_NOFOLLOW` descriptors opened before bwrap starts.

bwrap then mounts the pinned inodes (`--bind-fd`), so swapping a checked directory for a
symlink after the check (notes/security.md T15) changes nothing inside the sandbox.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field

from metnos.ground.errors import SandboxError
from metnos.mechanisms.sandbox.bwrap import AUDIT_NAME, TRASH_NAME, WORKSPACE_ROOT, Mount
from metnos.mechanisms.sandbox.request import SandboxRequest

_DIR_FLAGS = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(slots=True)
class PinnedDirs:
    """Open descriptors for one run; `fds` are the ones bwrap must inherit."""

    exec_dir_fd: int
    workspace_fd: int | None
    extra_mounts: list[Mount] = field(default_factory=list)
    hidden_dirs: list[str] = field(default_factory=list)
    hidden_files: list[str] = field(default_factory=list)

    @property
    def fds(self) -> tuple[int, ...]:
        ws = () if self.workspace_fd is None else (self.workspace_fd,)
        return (self.exec_dir_fd, *ws, *(m.fd for m in self.extra_mounts))


@contextlib.contextmanager
def pin(request: SandboxRequest) -> Iterator[PinnedDirs]:
    """Open every directory the run mounts; refuse symlinks; close them all on exit."""
    opened: list[int] = []
    try:
        pinned = _pin_all(request, opened)
        yield pinned
    finally:
        for fd in opened:
            with contextlib.suppress(OSError):
                os.close(fd)


def _pin_all(request: SandboxRequest, opened: list[int]) -> PinnedDirs:
    profile = request.profile
    exec_fd = _open_dir(str(request.exec_dir), opened)
    ws_fd = _open_dir(str(request.workspace), opened)
    whole = WORKSPACE_ROOT in profile.read or WORKSPACE_ROOT in profile.write
    pinned = PinnedDirs(exec_dir_fd=exec_fd, workspace_fd=ws_fd if whole else None)
    if whole:
        writable = WORKSPACE_ROOT in profile.write
        _hide_audit(ws_fd, pinned, writable=writable)
        _pin_trash(ws_fd, pinned, visible=profile.trash, writable=writable)
    for rel, writable in _sub_roots(profile.read, profile.write, trash=profile.trash):
        if WORKSPACE_ROOT in profile.write or (not writable and whole):
            continue  # already visible with the right access through the workspace mount
        fd = _open_beneath(ws_fd, rel, opened)
        pinned.extra_mounts.append(Mount(fd=fd, rel=rel, writable=writable))
    return pinned


def _sub_roots(
    read: tuple[str, ...], write: tuple[str, ...], *, trash: bool
) -> list[tuple[str, bool]]:
    roots = {r.strip("/"): False for r in read if r != WORKSPACE_ROOT}
    roots.update({r.strip("/"): True for r in write if r != WORKSPACE_ROOT})
    off_limits = {AUDIT_NAME} if trash else {AUDIT_NAME, TRASH_NAME}
    for rel in roots:
        if rel.split("/")[0] in off_limits:
            raise SandboxError("ERR_SANDBOX_PATH_UNSAFE", path=rel)
    return sorted(roots.items())


def _open_dir(path: str, opened: list[int], dir_fd: int | None = None) -> int:
    try:
        fd = os.open(path, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError as exc:  # ELOOP/ENOTDIR: a symlink or not a directory
        raise SandboxError("ERR_SANDBOX_PATH_UNSAFE", path=path) from exc
    opened.append(fd)
    return fd


def _open_beneath(root_fd: int, rel: str, opened: list[int]) -> int:
    """Walk `rel` one component at a time from `root_fd`, refusing any symlink on the way."""
    fd = root_fd
    for part in rel.split("/"):
        if part in ("", ".", ".."):
            raise SandboxError("ERR_SANDBOX_PATH_UNSAFE", path=rel)
        fd = _open_dir(part, opened, dir_fd=fd)
    return fd


def _hide_audit(ws_fd: int, pinned: PinnedDirs, *, writable: bool) -> None:
    """Mask the audit log if it is in the workspace (as a directory, or anything else).

    A missing `.audit` in a writable workspace is masked too (bwrap creates the empty mount
    point): else the executor could plant a `.audit` symlink or a forged log that the host's
    audit log would later follow or chain onto."""
    try:
        st = os.stat(AUDIT_NAME, dir_fd=ws_fd, follow_symlinks=False)
    except FileNotFoundError:
        if writable:
            pinned.hidden_dirs.append(AUDIT_NAME)
        return
    if stat.S_ISDIR(st.st_mode):
        pinned.hidden_dirs.append(AUDIT_NAME)
    elif not stat.S_ISLNK(st.st_mode):
        pinned.hidden_files.append(AUDIT_NAME)


def _pin_trash(ws_fd: int, pinned: PinnedDirs, *, visible: bool, writable: bool) -> None:
    """Mask `workspace/.trash` unless the profile has `trash = true` (only fs_delete).

    In a writable workspace a missing trash is first made here (0700, `mkdirat`, which never
    follows a symlink), so an executor without the trash can neither plant one (forged entries
    that `undo` would restore) nor a `.trash` symlink. A `.trash` that is a symlink is refused
    for every run: the host's undo would follow it out of the workspace.
    """
    if writable:
        with contextlib.suppress(FileExistsError):
            os.mkdir(TRASH_NAME, 0o700, dir_fd=ws_fd)
    try:
        st = os.stat(TRASH_NAME, dir_fd=ws_fd, follow_symlinks=False)
    except FileNotFoundError:
        return  # read-only workspace: nothing to see, nothing can be made
    if stat.S_ISLNK(st.st_mode):
        raise SandboxError("ERR_SANDBOX_PATH_UNSAFE", path=TRASH_NAME)
    if visible:
        return
    if stat.S_ISDIR(st.st_mode):
        pinned.hidden_dirs.append(TRASH_NAME)
    else:
        pinned.hidden_files.append(TRASH_NAME)
