"""Before manifests: the state a mutating action is about to change, kept outside its reach.

Before a side-effecting executor runs, the host records, for each workspace path it may write:
whether it existed, its kind (file, dir, symlink), size, SHA-256 and mode; a directory as a
whole tree (every entry with its relative path; empty folders and symlinks too, links never
followed); and, up to a total cap, a copy of every file's bytes (so `metnos undo` can restore
them byte for byte). When a path does not exist, its topmost missing ancestor is recorded too
(an action that creates `new/dir/x` created `new`). The record lives under
`state/before/<action_id>/`, which no sandbox ever mounts, and is signed with the instance's
audit key and dated.

The workspace is walked from a directory descriptor one component at a time with
`O_NOFOLLOW`, so a symlink swapped in after the policy check can never make the host read (or,
in `metnos.undo`, write) outside the workspace.
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import errno
import functools
import hashlib
import json
import os
import re
import stat
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

MANIFEST_VERSION = 2
MAX_SNAPSHOT_BYTES = 256 * 1024 * 1024  # copies kept per action; beyond, hashes only
MAX_TREE_ENTRIES = 100_000  # per action; beyond, the record is incomplete (undo refuses)
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_ESSENTIAL = ("path", "kind", "size", "sha256", "mode", "target")
_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
_RENAME_NOREPLACE = 1


class _TooLarge(Exception):
    pass


def valid_action_id(value: object) -> bool:
    return isinstance(value, str) and _ID_RE.fullmatch(value) is not None


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


def digest(state: dict[str, Any], *, hashes: bool = True) -> str | None:
    """A digest of a path's recorded state (paths, kinds, sizes, bytes, modes, link targets);
    None when it cannot be compared (not reachable, or a record cut short). With
    `hashes=False` it leaves out the bytes (a cheap shape, before a full check)."""
    if state["kind"] == "missing":
        return hashlib.sha256(b"missing").hexdigest()
    if state["kind"] == "other" or not state.get("complete", True):
        return None
    rows = [{**state, "path": "."}, *(state.get("entries") or [])]
    fields = _ESSENTIAL if hashes else tuple(f for f in _ESSENTIAL if f != "sha256")
    return hashlib.sha256(canonical({"rows": [[r[f] for f in fields] for r in rows]})).hexdigest()


class Walker:
    """Reads path states beneath a workspace descriptor; copies file bytes into `blobs` (a
    content-addressed folder) while `budget` lasts, when given one."""

    def __init__(self, blobs: Path | None = None, budget: int = 0, *, hashes: bool = True):
        self.blobs, self.budget, self.hashes = blobs, budget, hashes
        self.count = 0
        self.copied_all = True

    def scan(self, ws_fd: int, rel: str) -> dict[str, Any]:
        state: dict[str, Any] = {
            "path": rel, "existed": False, "kind": "missing", "size": None, "sha256": None,
            "mode": None, "mtime_ns": None, "target": None, "snapshot": None, "entries": None,
            "complete": True}
        parts = split_rel(rel)
        try:
            parent = open_dir(ws_fd, parts[:-1]) if parts else -1
        except FileNotFoundError:
            return state
        except OSError:  # a symbolic link (or a file) on the way: never followed on the host
            return {**state, "existed": True, "kind": "other"}
        if not parts:  # the workspace itself is never recorded as a whole
            return {**state, "existed": True, "kind": "other"}
        try:
            return {**state, **self._top(parent, parts[-1])}
        except FileNotFoundError:
            return state
        except _TooLarge:
            return {**state, "existed": True, "kind": "dir", "complete": False}
        except OSError:  # changed under our feet (a dir swapped for a link...)
            return {**state, "existed": True, "kind": "other", "complete": False}
        finally:
            os.close(parent)

    def _top(self, parent: int, name: str) -> dict[str, Any]:
        top = self.item(parent, name, ".")
        top.pop("path")
        top["existed"] = True
        if top["kind"] == "dir":
            fd = os.open(name, DIR_FLAGS, dir_fd=parent)
            try:
                top["entries"] = []
                self.tree(fd, "", top["entries"])
            finally:
                os.close(fd)
        return top

    def item(self, parent: int, name: str, rel: str) -> dict[str, Any]:
        st = os.stat(name, dir_fd=parent, follow_symlinks=False)
        entry: dict[str, Any] = {
            "path": rel, "kind": "other", "size": None, "sha256": None,
            "mode": stat.S_IMODE(st.st_mode), "mtime_ns": st.st_mtime_ns, "target": None,
            "snapshot": None}
        if stat.S_ISLNK(st.st_mode):
            entry.update(kind="symlink", mode=None, target=os.readlink(name, dir_fd=parent))
        elif stat.S_ISDIR(st.st_mode):
            entry["kind"] = "dir"
        elif stat.S_ISREG(st.st_mode):
            entry.update(kind="file", size=st.st_size)
            if self.hashes:
                entry["sha256"], entry["snapshot"] = self._file(parent, name, st)
        return entry

    def tree(self, fd: int, prefix: str, out: list[dict[str, Any]]) -> None:
        with os.scandir(fd) as listing:
            names = sorted(e.name for e in listing)
        for name in names:
            self.count += 1
            if self.count > MAX_TREE_ENTRIES:
                raise _TooLarge
            entry = self.item(fd, name, prefix + name)
            out.append(entry)
            if entry["kind"] == "dir":
                child = os.open(name, DIR_FLAGS, dir_fd=fd)
                try:
                    self.tree(child, prefix + name + "/", out)
                finally:
                    os.close(child)

    def _file(self, parent: int, name: str, st: os.stat_result) -> tuple[str, str | None]:
        copy = self.blobs is not None and st.st_size <= self.budget
        if self.blobs is not None and not copy:
            self.copied_all = False
        fd = os.open(name, FILE_FLAGS, dir_fd=parent)
        with os.fdopen(fd, "rb") as src:
            now = os.fstat(src.fileno())
            if not stat.S_ISREG(now.st_mode) or (now.st_ino, now.st_dev) != (st.st_ino, st.st_dev):
                raise OSError(errno.ESTALE, "changed while recorded", name)
            if not copy or self.blobs is None:
                return hash_stream(src, None), None
            self.blobs.mkdir(mode=0o700, exist_ok=True)
            tmp = self.blobs / f"tmp-{os.getpid()}-{self.count}"
            with tmp.open("wb") as dst:
                sha = hash_stream(src, dst)
        os.replace(tmp, self.blobs / sha)
        self.budget -= st.st_size
        return sha, f"blobs/{sha}"


def hash_stream(src: Any, dst: Any) -> str:
    """SHA-256 of what `src` yields, copied to `dst` on the way when given."""
    sha = hashlib.sha256()
    for chunk in iter(lambda: src.read(1 << 20), b""):
        sha.update(chunk)
        if dst is not None:
            dst.write(chunk)
    return sha.hexdigest()


def record_before(
    state_dir: Path, action_id: str, workspace: Path, executor: str,
    paths: list[str], key: Ed25519PrivateKey, *, copy: bool = True,
    max_copy_bytes: int = MAX_SNAPSHOT_BYTES, undoes: str | None = None,
) -> dict[str, Any]:
    """Record `paths` (workspace-relative, already canonicalised by the policy) and sign.

    `copy=False` keeps hashes only (fs_delete: its bytes go to the trash, not away);
    `undoes` names the action an undo reverses."""
    if not valid_action_id(action_id):
        raise ValueError(f"invalid action id: {action_id!r}")
    for rel in paths:
        split_rel(rel)  # ValueError before anything is written
    folder = state_dir / "before" / action_id
    folder.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    folder.mkdir(exist_ok=False, mode=0o700)
    walker = Walker(folder / "blobs" if copy else None, max_copy_bytes)
    ws_fd = open_workspace(workspace)
    try:
        states = [walker.scan(ws_fd, rel) for rel in dict.fromkeys(paths)]
        for rel in _missing_ancestors(ws_fd, states):
            states.append(walker.scan(ws_fd, rel))
    finally:
        os.close(ws_fd)
    for state in states:
        state["digest"] = digest(state)
    manifest = {
        "version": MANIFEST_VERSION, "action_id": action_id, "executor": executor,
        "created_at": datetime.now(UTC).isoformat(), "copies": copy,
        "copied_all": copy and walker.copied_all, "undoes": undoes, "paths": states,
    }
    signed = {"manifest": manifest,
              "signature": base64.b64encode(key.sign(canonical(manifest))).decode("ascii")}
    write_atomic(folder / "manifest.json", json.dumps(signed, indent=1).encode("ascii"))
    return signed


def _missing_ancestors(ws_fd: int, states: list[dict[str, Any]]) -> list[str]:
    """The topmost missing ancestor of each missing path not recorded already."""
    known = {s["path"] for s in states}
    found: list[str] = []
    for state in states:
        if state["kind"] != "missing":
            continue
        parts = split_rel(state["path"])
        for depth in range(1, len(parts)):
            rel = "/".join(parts[:depth])
            if not lexists(ws_fd, rel):
                if rel not in known and rel not in found:
                    found.append(rel)
                break
    return found


def canonical(data: dict[str, Any]) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
