"""`metnos undo ACTION_ID` (SPEC §5): make every path an action recorded byte-identical to its
before state, losing nothing.

The signed before manifest (`metnos.ground.reversibility`) is verified first. Then, for each
recorded path: one that existed is brought back, by moving back what the action moved away when its
tree still hashes to the recorded one (a rename, or fs_delete's `.trash/<action_id>/<path>`),
else rebuilt from copies whose SHA-256 matches the manifest (the snapshot, the trash);
whatever stands in its way (a version changed since) goes to the trash first. A path that did
not exist and exists now goes to `.trash/undo-<undo id>/`: an undo never deletes outright.

Every write happens beneath a workspace descriptor, one component at a time with `O_NOFOLLOW`,
files through a temporary name and a rename that never replaces; a planted symlink makes the
path fail, never a write outside the workspace. The undo records its own before manifest (it
can be undone too), leaves one audit line, and a marker so the same action is undone once.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from metnos.ground import i18n
from metnos.ground.durable import write_atomic
from metnos.ground.errors import MetnosError
from metnos.ground.fdpaths import open_workspace, split_rel
from metnos.ground.i18n.formatting import date as i18n_date
from metnos.ground.restore import TRASH, Restorer, UndoItem
from metnos.ground.reversibility import (
    MANIFEST_VERSION,
    canonical,
    digest,
    record_before,
    valid_action_id,
)
from metnos.mechanisms.audit import AuditLog

UNDONE_MARKER = "undone.json"
PURGED_MARKER = "purged.json"  # metnos.turns.trash: this action's copies were cleared
LOCK_FILE = ".undo.lock"
_KINDS = frozenset({"file", "dir", "symlink", "missing", "other"})
_BLOB_RE = re.compile(r"^blobs/[0-9a-f]{64}$")


class UndoError(MetnosError, RuntimeError):
    key = "ERR_UNDO_FAILED"


class UndoFailed(UndoError):
    """Tried, and failed on the way (a work pool's error): audited as failed, not refused."""


@dataclass
class UndoReport:
    action_id: str
    undo_id: str
    executor: str
    outcome: str  # done | failed
    items: list[UndoItem]
    redo: bool = True  # the undo has a before-record of its own: it can be undone in turn

    def to_dict(self, lang: str | None = None) -> dict[str, Any]:
        return {**asdict(self), "message": self.message(lang)}

    def message(self, lang: str | None = None) -> str:
        head = ("MSG_UNDO_PARTIAL" if self.outcome != "done" else
                "MSG_UNDO_DONE" if self.redo else "MSG_UNDO_DONE_FINAL")
        lines = [i18n.get(head, lang, action_id=self.action_id, undo_id=self.undo_id)]
        for item in self.items:
            lines.extend(_item_lines(item, lang))
        return "\n".join(lines)


def _item_lines(item: UndoItem, lang: str | None) -> list[str]:
    lines = []
    if item.status in ("moved_back", "restored"):
        lines.append(i18n.get("MSG_UNDO_ITEM_RESTORED", lang, path=item.path))
    elif item.status == "trashed":
        lines.append(i18n.get("MSG_UNDO_ITEM_TRASHED", lang, path=item.path,
                              trash=item.displaced_to))
    elif item.status == "failed":
        reason = i18n.get(item.key or "ERR_UNDO_FAILED", lang, **item.vars)
        lines.append(i18n.get("MSG_UNDO_ITEM_FAILED", lang, path=item.path, reason=reason))
    if item.displaced_to and item.status != "trashed":
        lines.append(i18n.get("MSG_UNDO_ITEM_DISPLACED", lang, path=item.path,
                              trash=item.displaced_to))
    return lines


def is_undone(state_dir: Path, action_id: object) -> bool:
    """Whether `action_id` was undone already (its marker exists)."""
    return valid_action_id(action_id) and (
        state_dir / "before" / str(action_id) / UNDONE_MARKER).is_file()


def undo(action_id: str, *, state_dir: Path, workspace: Path, public_key: Ed25519PublicKey,
         private_key: Ed25519PrivateKey, audit: AuditLog | None = None, sender: str = "owner",
         channel: str = "cli") -> UndoReport:
    """Undo `action_id`; one audit line whatever happens (refused, done or failed).

    Raises UndoError: ERR_UNDO_NOT_FOUND, ERR_UNDO_ALREADY_DONE, ERR_UNDO_MANIFEST_INVALID,
    ERR_UNDO_NOTHING_RECORDED."""
    return audited(audit_undo(audit, action_id, sender, channel),
                   lambda: _undo(action_id, state_dir, workspace, public_key, private_key))


AuditLine = Callable[..., None]


def audit_undo(audit: AuditLog | None, action_id: str, sender: str, channel: str) -> AuditLine:
    """How one undo writes its audit line (action "undo"), whatever the action's kind."""
    def line(**fields: Any) -> None:
        if audit is not None:
            audit.append(sender=sender, channel=channel, action="undo",
                         action_id=action_id if valid_action_id(action_id) else None,
                         args={"action_id": action_id}, **fields)
    return line


def audited(line: AuditLine, run: Callable[[], UndoReport]) -> UndoReport:
    """`run()`'s report with its one audit line: refused, failed on the way, or how it went."""
    try:
        report = run()
    except UndoFailed as exc:
        line(decision="error", reason=exc.key, outcome="failed")
        raise
    except UndoError as exc:
        line(decision="deny", reason=exc.key, outcome="refused")
        raise
    except Exception:
        line(decision="error", reason="ERR_INTERNAL_UNEXPECTED", outcome="failed")
        raise
    failed = [i.key for i in report.items if i.status == "failed"]
    line(decision="allow", reason=failed[0] if failed else "ok", outcome=report.outcome)
    return report


def refuse_undone(folder: Path, action_id: str) -> None:
    """ERR_UNDO_ALREADY_DONE when the action of the before-record `folder` was undone."""
    marker = folder / UNDONE_MARKER
    if marker.exists():
        done = json.loads(marker.read_text(encoding="utf-8"))
        raise UndoError("ERR_UNDO_ALREADY_DONE", action_id=action_id,
                        undo_id=done.get("undo_id", "?"))


def purged_on(folder: Path) -> datetime | None:
    """When the copies kept in the before-record `folder` were cleared (metnos.turns.trash)."""
    try:
        doc = json.loads((folder / PURGED_MARKER).read_bytes())
        return datetime.fromisoformat(doc["at"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def mark_undone(folder: Path, undo_id: str) -> None:
    """Record in an action's before-record folder that it was undone (by `undo_id`): a second
    undo is refused, and the surfaces no longer offer an Undo button."""
    write_atomic(folder / UNDONE_MARKER, json.dumps(
        {"undo_id": undo_id, "at": datetime.now(UTC).isoformat()}).encode())


def _undo(action_id: str, state_dir: Path, workspace: Path, public_key: Ed25519PublicKey,
          private_key: Ed25519PrivateKey) -> UndoReport:
    folder = state_dir / "before" / action_id if valid_action_id(action_id) else None
    if folder is None or not folder.is_dir():
        raise UndoError("ERR_UNDO_NOT_FOUND", action_id=str(action_id)[:80])
    with locked(folder):
        refuse_undone(folder, action_id)
        cleared = purged_on(folder)
        if cleared is not None:  # its copies were cleared from the trash: refused, plainly
            raise UndoError("ERR_UNDO_PURGED", action_id=action_id, when=cleared.isoformat(),
                            date=i18n_date(cleared, i18n.normalise_lang(None)))
        manifest = verify_before(state_dir, action_id, public_key)
        if not manifest["paths"]:  # e.g. a command with no path inputs: nothing to restore
            raise UndoError("ERR_UNDO_NOTHING_RECORDED", action_id=action_id)
        undo_id = uuid.uuid4().hex
        ws_fd = open_workspace(workspace)
        try:
            restorer = Restorer(ws_fd, manifest, folder, undo_id)
            # no copies: an undo only renames, so its bytes stay in the workspace or the trash
            record_before(state_dir, undo_id, workspace, "undo", restorer.touched(),
                          private_key, copy=False, undoes=action_id)
            items = restorer.run()
        finally:
            os.close(ws_fd)
        outcome = "failed" if any(i.status == "failed" for i in items) else "done"
        if outcome == "done":
            mark_undone(folder, undo_id)
    return UndoReport(action_id, undo_id, manifest["executor"], outcome, items)


@contextlib.contextmanager
def locked(folder: Path) -> Iterator[None]:
    """One undo of an action at a time (a second one waits, then finds the marker)."""
    fd = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def verify_before(state_dir: Path, action_id: str, public_key: Ed25519PublicKey) -> dict[str, Any]:
    """The before manifest of `action_id`, if its signature and content hold; else
    ERR_UNDO_MANIFEST_INVALID (tampered, unsigned, another action's, inconsistent)."""
    path = state_dir / "before" / action_id / "manifest.json"
    try:
        doc = json.loads(path.read_bytes())
        manifest = doc["manifest"]
        signature = base64.b64decode(doc["signature"], validate=True)
        public_key.verify(signature, canonical(manifest))
        _check_manifest(manifest, action_id)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, InvalidSignature) as exc:
        raise UndoError("ERR_UNDO_MANIFEST_INVALID", action_id=action_id) from exc
    if not isinstance(manifest, dict):
        raise UndoError("ERR_UNDO_MANIFEST_INVALID", action_id=action_id)
    return manifest


def _check_manifest(manifest: dict[str, Any], action_id: str) -> None:
    """Even a signed manifest is checked: paths inside the workspace, known kinds, digests
    consistent with the entries (so a bug never turns into a write somewhere else)."""
    if manifest["version"] != MANIFEST_VERSION or manifest["action_id"] != action_id:
        raise ValueError("another action's manifest, or another version")
    for state in manifest["paths"]:
        if not split_rel(state["path"]) or state["kind"] not in _KINDS:
            raise ValueError("bad path")
        if split_rel(state["path"])[0] == TRASH and manifest["executor"] != "undo":
            raise ValueError("only an undo records trash paths")
        for entry in [state, *(state.get("entries") or [])]:
            if entry is not state and (not split_rel(entry["path"])
                                       or entry["path"] != "/".join(split_rel(entry["path"]))):
                raise ValueError("bad entry path")
            snap = entry.get("snapshot")
            if snap is not None and not _BLOB_RE.fullmatch(snap):
                raise ValueError("bad snapshot name")
            if entry["kind"] == "symlink" and not isinstance(entry["target"], str):
                raise ValueError("bad link")
            if entry["kind"] == "file" and not isinstance(entry["mode"], int):
                raise ValueError("bad mode")
        if state["digest"] != digest(state):
            raise ValueError("digest does not match the entries")
