"""The host-side half of `metnos undo`: bring recorded paths back beneath a workspace descriptor.

`Restorer(ws_fd, manifest, folder, undo_id).run()` works on a manifest already verified by
`metnos.mechanisms.undo`. Every path is reached one component at a time with `O_NOFOLLOW`; files are
written to a temporary name, fsync'd, and renamed with RENAME_NOREPLACE; nothing is ever
overwritten or deleted: what stands in the way goes to `.trash/undo-<undo_id>/`. Bytes come
only from copies whose SHA-256 matches the manifest, checked on the bytes actually written.
"""

from __future__ import annotations

import errno
import itertools
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from metnos.ground.fdpaths import (
    DIR_FLAGS,
    FILE_FLAGS,
    lexists,
    open_dir,
    rename_noreplace,
    split_rel,
)
from metnos.ground.reversibility import Walker, digest, hash_stream

TRASH = ".trash"
_TMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_UNREACHABLE = (errno.ELOOP, errno.ENOTDIR, errno.EXDEV)


@dataclass
class UndoItem:
    """What the undo did to one recorded path."""

    path: str
    status: str  # unchanged | moved_back | restored | trashed | failed
    source: str | None = None  # where the bytes came from (a path, or "copies")
    displaced_to: str | None = None  # the trash path that keeps what stood in the way
    key: str | None = None  # why it failed
    vars: dict[str, Any] = field(default_factory=dict)


class Restorer:
    def __init__(self, ws_fd: int, manifest: dict[str, Any], folder: Path, undo_id: str):
        self.ws, self.folder, self.undo_id = ws_fd, folder, undo_id
        self.action_id: str = manifest["action_id"]
        self.states: list[dict[str, Any]] = manifest["paths"]
        self.used: set[str] = set()  # paths moved back to where they were
        self.trashed: dict[str, str] = {}  # path -> where it went in the trash
        self._tmp = itertools.count()

    def touched(self) -> list[str]:
        """The paths this undo may change: the recorded ones, and their copies in the trash."""
        trash = [t for s in self.states if s["existed"] for t in self._trash_copies(s["path"])]
        return [s["path"] for s in self.states] + [t for t in trash if lexists(self.ws, t)]

    def run(self) -> list[UndoItem]:
        def depth(state: dict[str, Any]) -> int:
            return len(split_rel(state["path"]))

        existed = sorted((s for s in self.states if s["existed"]), key=depth)
        created = sorted((s for s in self.states if not s["existed"]), key=depth)
        items = [self._restore(s) for s in existed]
        items += [item for s in created if (item := self._remove(s)) is not None]
        return items

    # -- a path that existed: bring it back ------------------------------------------------
    def _restore(self, state: dict[str, Any]) -> UndoItem:
        rel, displaced = state["path"], None
        if state["digest"] is None:
            cut = not state["complete"]
            return _failed(rel, "ERR_UNDO_RECORD_INCOMPLETE" if cut else
                           "ERR_UNDO_PATH_UNREACHABLE", None)
        try:
            now = Walker().scan(self.ws, rel)
            if digest(now) == state["digest"]:
                return UndoItem(rel, "unchanged")
            if now["kind"] == "other":
                return _failed(rel, "ERR_UNDO_PATH_UNREACHABLE", None)
            if now["kind"] != "missing":
                displaced = self._to_trash(rel)
            for candidate in self._candidates(state):
                if self._move_back(candidate, state):
                    return UndoItem(rel, "moved_back", source=candidate, displaced_to=displaced)
            lost = self._rebuild(state)
        except OSError as exc:
            key = ("ERR_UNDO_PATH_UNREACHABLE" if exc.errno in _UNREACHABLE
                   else "ERR_UNDO_WRITE_FAILED")
            return _failed(rel, key, displaced, reason=exc.strerror or type(exc).__name__)
        if lost:
            return _failed(rel, "ERR_UNDO_SOURCE_MISSING", displaced,
                           files=", ".join(lost[:10]) + (" …" if len(lost) > 10 else ""))
        return UndoItem(rel, "restored", source="copies", displaced_to=displaced)

    def _trash_copies(self, rel: str) -> list[str]:
        """Where the action may have put `rel`: fs_delete in `.trash/<action_id>/`, an undo
        (what stood in its way) in `.trash/undo-<action_id>/`."""
        return [f"{TRASH}/{self.action_id}/{rel}", f"{TRASH}/undo-{self.action_id}/{rel}"]

    def _sources(self) -> list[str]:
        """Paths the action created that still exist: they may hold what it moved away."""
        created = [s["path"] for s in self.states
                   if not s["existed"] and s["path"] not in self.used]
        return [p for p in created if lexists(self.ws, p)]

    def _candidates(self, state: dict[str, Any]) -> list[str]:
        """Sources shaped like the recorded tree (names, kinds, sizes, modes; bytes unread)."""
        shape = digest(state, hashes=False)
        places = [*self._sources(), *self._trash_copies(state["path"])]
        return [p for p in places if lexists(self.ws, p)
                and digest(Walker(hashes=False).scan(self.ws, p), hashes=False) == shape]

    def _move_back(self, source: str, state: dict[str, Any]) -> bool:
        """Rename `source` to the recorded path, then check every byte there; on a mismatch
        rename it back (the check runs on the moved tree, so nothing can change in between)."""
        src, dst = split_rel(source), split_rel(state["path"])
        src_fd = open_dir(self.ws, src[:-1])
        try:
            dst_fd = open_dir(self.ws, dst[:-1], create=True)
            try:
                rename_noreplace(src_fd, src[-1], dst_fd, dst[-1])
                if digest(Walker().scan(self.ws, state["path"])) == state["digest"]:
                    self.used.add(source)
                    return True
                rename_noreplace(dst_fd, dst[-1], src_fd, src[-1])
                return False
            finally:
                os.close(dst_fd)
        finally:
            os.close(src_fd)

    def _rebuild(self, state: dict[str, Any]) -> list[str]:
        """Recreate the recorded path from verified copies; the files that had none."""
        parts = split_rel(state["path"])
        roots = [*self._sources(), *self._trash_copies(state["path"])]
        parent = open_dir(self.ws, parts[:-1], create=True)
        try:
            if state["kind"] == "symlink":
                os.symlink(state["target"], parts[-1], dir_fd=parent)
                return []
            if state["kind"] == "file":
                ok = self._put_file(parent, parts[-1], state, "", roots)
                return [] if ok else [state["path"]]
            return self._put_tree(parent, parts[-1], state, roots)
        finally:
            os.close(parent)

    def _put_tree(self, parent: int, name: str, state: dict[str, Any],
                  roots: list[str]) -> list[str]:
        """Build the tree under a temporary name, then rename it into place in one step."""
        tmp = f".metnos-undo-{self.undo_id}-{next(self._tmp)}"
        os.mkdir(tmp, 0o700, dir_fd=parent)
        top = os.open(tmp, DIR_FLAGS, dir_fd=parent)
        lost: list[str] = []
        try:
            entries = state["entries"] or []
            for entry in entries:
                if not self._put_entry(top, entry, roots):
                    lost.append(f"{state['path']}/{entry['path']}")
            for entry in reversed(entries):  # deepest first: a read-only folder comes last
                if entry["kind"] == "dir":
                    fd = open_dir(top, split_rel(entry["path"]))
                    _set_meta(fd, entry)
                    os.close(fd)
            _set_meta(top, state)
        finally:
            os.close(top)
        rename_noreplace(parent, tmp, parent, name)
        return lost

    def _put_entry(self, top: int, entry: dict[str, Any], roots: list[str]) -> bool:
        parts = split_rel(entry["path"])
        fd = open_dir(top, parts[:-1])
        try:
            if entry["kind"] == "dir":
                os.mkdir(parts[-1], 0o700, dir_fd=fd)
            elif entry["kind"] == "symlink":
                os.symlink(entry["target"], parts[-1], dir_fd=fd)
            elif entry["kind"] == "file":
                return self._put_file(fd, parts[-1], entry, entry["path"], roots)
            else:  # a fifo, a socket...: nothing to rebuild it from
                return False
            return True
        finally:
            os.close(fd)

    def _put_file(self, parent: int, name: str, entry: dict[str, Any], sub: str,
                  roots: list[str]) -> bool:
        """Write `name` from the first copy whose bytes hash to the recorded SHA-256."""
        if entry.get("snapshot"):
            try:
                if self._copy_in(os.open(self.folder / entry["snapshot"], FILE_FLAGS),
                                 parent, name, entry):
                    return True
            except OSError:
                pass
        for root in roots:
            try:
                if self._copy_in(self._open_file(f"{root}/{sub}" if sub else root),
                                 parent, name, entry):
                    return True
            except OSError:
                continue
        return False

    def _open_file(self, rel: str) -> int:
        parts = split_rel(rel)
        parent = open_dir(self.ws, parts[:-1])
        try:
            return os.open(parts[-1], FILE_FLAGS, dir_fd=parent)
        finally:
            os.close(parent)

    def _copy_in(self, src_fd: int, parent: int, name: str, entry: dict[str, Any]) -> bool:
        """Copy `src_fd` to a temporary file, hashing the bytes written; rename it to `name`
        only if they match. The source descriptor is always closed."""
        with os.fdopen(src_fd, "rb") as src:
            if not stat.S_ISREG(os.fstat(src.fileno()).st_mode):
                return False
            tmp = f".metnos-undo-{self.undo_id}-{next(self._tmp)}"
            out = os.open(tmp, _TMP_FLAGS, 0o600, dir_fd=parent)
            placed = False
            try:
                with os.fdopen(out, "wb", closefd=False) as dst:
                    sha = hash_stream(src, dst)
                if sha != entry["sha256"]:
                    return False
                os.fsync(out)
                _set_meta(out, entry)
                rename_noreplace(parent, tmp, parent, name)
                placed = True
                return True
            finally:
                os.close(out)
                if not placed:
                    os.unlink(tmp, dir_fd=parent)

    # -- a path that did not exist: move what is there now to the trash ---------------------
    def _remove(self, state: dict[str, Any]) -> UndoItem | None:
        rel = state["path"]
        if rel in self.used:
            return None  # moved back already: reported with the path it went back to
        for gone, where in self.trashed.items():
            if rel.startswith(gone + "/"):
                return UndoItem(rel, "trashed", displaced_to=where + rel[len(gone):])
        try:
            kind = Walker(hashes=False).scan(self.ws, rel)["kind"]
            if kind == "missing":
                return UndoItem(rel, "unchanged")
            if kind == "other":
                return _failed(rel, "ERR_UNDO_PATH_UNREACHABLE", None)
            self.trashed[rel] = self._to_trash(rel)
        except OSError as exc:
            return _failed(rel, "ERR_UNDO_WRITE_FAILED", None,
                           reason=exc.strerror or type(exc).__name__)
        return UndoItem(rel, "trashed", displaced_to=self.trashed[rel])

    def _to_trash(self, rel: str) -> str:
        """Move `rel` (as it is: a link stays a link) to `.trash/undo-<undo_id>/<rel>`."""
        parts = split_rel(rel)
        parent = open_dir(self.ws, parts[:-1])
        try:
            for n in range(100):
                base = f"undo-{self.undo_id}" + (f"-{n}" if n else "")
                dst = open_dir(self.ws, [TRASH, base, *parts[:-1]], create=True, mode=0o700)
                try:
                    rename_noreplace(parent, parts[-1], dst, parts[-1])
                    return "/".join([TRASH, base, *parts])
                except FileExistsError:
                    continue
                finally:
                    os.close(dst)
        finally:
            os.close(parent)
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), rel)


def _set_meta(fd: int, entry: dict[str, Any]) -> None:
    if entry.get("mode") is not None:
        os.chmod(fd, entry["mode"])
    if entry.get("mtime_ns") is not None:
        os.utime(fd, ns=(entry["mtime_ns"], entry["mtime_ns"]))


def _failed(rel: str, key: str, displaced: str | None, **vars: Any) -> UndoItem:
    return UndoItem(rel, "failed", displaced_to=displaced, key=key, vars={"path": rel, **vars})
