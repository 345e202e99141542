"""Before manifests: the state a mutating action is about to change, kept outside its reach.

Before a side-effecting executor runs, the host records, for each workspace path it may write:
whether it existed, its kind (file, dir, symlink), size, SHA-256 and mode; a directory as a
whole tree (every entry with its relative path; empty folders and symlinks too, links never
followed); and, up to a total cap, a copy of every file's bytes (so `metnos undo` can restore
them byte for byte). When a path does not exist, its topmost missing ancestor is recorded too
(an action that creates `new/dir/x` created `new`). The record lives under
`state/before/<action_id>/`, which no sandbox ever mounts, and is signed with the instance's
audit key and dated. It is durable before the executor runs: written in a partial folder
(blobs and manifest fsynced), then renamed to its action id and the rename fsynced, so after
a crash a record is either whole and signed or absent (`remove_partial` sweeps the rest).

The workspace is walked from a directory descriptor one component at a time with
`O_NOFOLLOW`, so a symlink swapped in after the policy check can never make the host read (or,
in `metnos.mechanisms.undo`, write) outside the workspace.
"""

from __future__ import annotations

import base64
import errno
import hashlib
import json
import os
import re
import shutil
import stat
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from metnos.ground import durable
from metnos.ground.fdpaths import (
    DIR_FLAGS,
    FILE_FLAGS,
    lexists,
    open_dir,
    open_workspace,
    rename_noreplace,
    split_rel,
)

MANIFEST_VERSION = 2
MAX_SNAPSHOT_BYTES = 256 * 1024 * 1024  # copies kept per action; beyond, hashes only
MAX_TREE_ENTRIES = 100_000  # per action; beyond, the record is incomplete (undo refuses)
_ESSENTIAL = ("path", "kind", "size", "sha256", "mode", "target")
_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
PARTIAL_PREFIX = ".partial-"  # a record being written: renamed to its action id when whole
T = TypeVar("T")


class _TooLarge(Exception):
    pass


def valid_action_id(value: object) -> bool:
    return isinstance(value, str) and _ID_RE.fullmatch(value) is not None


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
            tmp = self.blobs / f".blob-{self.count}{durable.TMP_SUFFIX}"
            with tmp.open("wb") as dst:
                sha = hash_stream(src, dst)
                dst.flush()
                os.fsync(dst.fileno())  # the copy is on disk before the executor runs
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
    if os.path.lexists(state_dir / "before" / action_id):
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), action_id)
    return write_record(state_dir, action_id, lambda partial: _record(
        partial, action_id, workspace, executor, paths, key, copy, max_copy_bytes, undoes))


def write_record(state_dir: Path, action_id: str, write: Callable[[Path], T]) -> T:
    """`write(folder)` fills a new partial folder, which then takes the name `action_id` under
    `state_dir/before` in one rename (never over another), durably: a before-record is either
    whole and signed, or absent (a partial folder is removed here, or swept at start-up)."""
    before = state_dir / "before"
    durable.make_dir(before)
    partial = before / f"{PARTIAL_PREFIX}{action_id}"
    partial.mkdir(mode=0o700)
    try:
        written = write(partial)
        fd = os.open(before, DIR_FLAGS)
        try:
            rename_noreplace(fd, partial.name, fd, action_id)
            os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return written


def _record(folder: Path, action_id: str, workspace: Path, executor: str, paths: list[str],
            key: Ed25519PrivateKey, copy: bool, max_copy_bytes: int,
            undoes: str | None) -> dict[str, Any]:
    """Write the record's blobs and signed manifest into `folder`, all fsynced."""
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
    if (folder / "blobs").is_dir():
        durable.fsync_dir(folder / "blobs")  # the blobs' names, renamed in place
    durable.write_atomic(folder / "manifest.json", json.dumps(signed, indent=1).encode("ascii"))
    return signed


def remove_partial(state_dir: Path) -> list[str]:
    """At start-up: delete the before-records a killed process left half-written (their
    action never ran: the executor starts only once the record has its final name)."""
    before = state_dir / "before"
    try:
        names = [n for n in os.listdir(before) if n.startswith(PARTIAL_PREFIX)]
    except FileNotFoundError:
        return []
    for name in names:
        shutil.rmtree(before / name, ignore_errors=True)
    if names:
        durable.fsync_dir(before)
    return names


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
