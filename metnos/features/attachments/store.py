"""Photos and documents someone sends: kept outside the workspace, filed by the turn that uses
them, described to the model as data.

`keep` checks what was sent (its size, and its kind from its bytes: a claim that lies is
refused) and keeps the bytes in `METNOS_HOME/attachments/<id>`, with a row saying whose they
are. A turn that names attachments files each into the workspace (`inbox/<day>/<name>`, never
over another file, never through a link), where the executors reach it through their sandbox
like any file, and hands the model a description of each as an untrusted block (its name is
outside text). Only the person who sent a file may use it. The kept bytes are deleted after
`[attachments] keep_days` (a filed file lives on in the workspace), with the row of a file
nobody used.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from sqlalchemy import Engine
from sqlmodel import col, select

from metnos.features.attachments.kinds import EXTENSION, Sniffed, claimed, sniff
from metnos.features.attachments.models import Attachment
from metnos.ground.db.engine import session as db_session
from metnos.ground.db.models import utcnow
from metnos.ground.durable import fsync_dir, make_dir, write_atomic
from metnos.ground.errors import MetnosError
from metnos.ground.fdpaths import open_dir, open_workspace, rename_noreplace
from metnos.ground.settings import Settings
from metnos.mechanisms.audit.log import AuditLog
from metnos.mechanisms.policy.untrusted import TAG

ACTION = "attachment"
MAX_PER_TURN = 10
_NAME_CHARS = 100
_UNSAFE_NAME = re.compile(r"[\x00-\x1f\x7f-\x9f/\\:*?\"<>|`]+")
# an attachment's block in a stored user message (`Filed.described`, wrapped as data)
_BLOCK = re.compile(rf'<{TAG} source="attachment" id="([^"<>]+)">\n(.*?)\n</{TAG} id="\1">',
                    re.DOTALL)
_WRITE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class AttachmentRefused(MetnosError, ValueError):
    """A sent file that is not kept, or an attachment a turn may not use: the key says why."""

    key = "ERR_ATTACHMENT_TYPE_UNSUPPORTED"


@dataclass(frozen=True)
class Filed:
    """An attachment placed in the workspace for one turn."""

    attachment: Attachment
    path: str  # workspace-relative
    placed: bool = True  # by this turn (False: filed by an earlier turn, still there)

    def described(self) -> tuple[str, str]:
        """The untrusted `(source, text)` piece the model reads: what was sent, and where."""
        item = self.attachment
        facts = {"path": self.path, "name": item.name, "kind": item.kind, "bytes": item.size,
                 "width": item.width, "height": item.height}
        return "attachment", json.dumps({k: v for k, v in facts.items() if v is not None},
                                        ensure_ascii=False)


def folder(settings: Settings) -> Path:
    return settings.home / "attachments"


def keep(engine: Engine, settings: Settings, audit: AuditLog | None, data: bytes, *,
         name: str, media_type: str | None, user_id: str, channel: str) -> Attachment:
    """Keep a sent file, or refuse it (`AttachmentRefused`, with an audit line)."""
    shown = clean_name(name)
    try:
        found = _check(data, settings.attachments.max_bytes, shown, media_type)
    except AttachmentRefused as exc:
        _audit(audit, user_id, channel, "deny", reason=exc.key,
               outcome=f"{shown} ({len(data)} bytes)")
        raise
    item = Attachment(user_id=user_id, channel=channel, name=_named(shown, found.kind),
                      kind=found.kind, size=len(data), sha256=hashlib.sha256(data).hexdigest(),
                      width=found.width, height=found.height)
    make_dir(folder(settings))
    write_atomic(folder(settings) / item.id, data)
    with db_session(engine) as db:
        db.add(item)
        db.flush()
        db.refresh(item)
    _audit(audit, user_id, channel, "info", reason="stored",
           outcome=f"{item.id} {item.kind} {item.size} {item.sha256[:16]}")
    forget_unused(engine, settings)
    return item


def owned(engine: Engine, ids: Sequence[str], *, user_id: str, channel: str,
          audit: AuditLog | None) -> list[Attachment]:
    """The attachments `ids` in order, each sent by `user_id`; one that is not (unknown,
    deleted, or someone else's) refuses them all with the same answer, and an audit line."""
    if len(ids) > MAX_PER_TURN:
        raise AttachmentRefused("ERR_ATTACHMENT_TOO_MANY", max=MAX_PER_TURN)
    with db_session(engine) as db:
        rows = {a.id: a for a in db.exec(select(Attachment).where(col(Attachment.id).in_(ids)))}
    for wanted in ids:
        row = rows.get(wanted)
        if row is None or row.user_id != user_id:
            _audit(audit, user_id, channel, "deny", reason="not_owned",
                   outcome=str(wanted)[:64])
            raise AttachmentRefused("ERR_ATTACHMENT_NOT_FOUND")
    return [rows[i] for i in dict.fromkeys(ids)]


def file_all(settings: Settings, items: Sequence[Attachment],
             now: datetime | None = None) -> list[Filed]:
    """Place each attachment in the workspace (`<folder>/<day>/<name>`; a taken name gets a
    number); one already filed and still there keeps its place. One whose bytes are gone
    (`keep_days` after it was sent) refuses them all, and what was placed is taken back."""
    day = (now or utcnow()).astimezone(settings.tz).date().isoformat()
    filed: list[Filed] = []
    try:
        for item in items:
            if item.filed_path and _still_there(settings, item):
                filed.append(Filed(item, str(item.filed_path), placed=False))
                continue
            try:
                data = (folder(settings) / item.id).read_bytes()
            except FileNotFoundError:
                raise AttachmentRefused("ERR_ATTACHMENT_NOT_FOUND") from None
            path = _place(settings.workspace, [settings.attachments.folder, day], item.name,
                          data)
            filed.append(Filed(item, path, placed=True))
    except BaseException:
        unfile(settings, filed)
        raise
    return filed


def unfile(settings: Settings, filed: Sequence[Filed]) -> None:
    """Take back what `file_all` placed for a turn that did not start (never a file that was
    there before it, never through a link)."""
    for one in filed:
        if not one.placed:
            continue
        *parts, name = one.path.split("/")
        with contextlib.suppress(OSError):
            ws_fd = open_workspace(settings.workspace)
            try:
                dir_fd = open_dir(ws_fd, parts)
            finally:
                os.close(ws_fd)
            try:
                os.unlink(name, dir_fd=dir_fd)
            finally:
                os.close(dir_fd)


def mark_filed(engine: Engine, audit: AuditLog | None, filed: Sequence[Filed], *,
               turn_id: str) -> None:
    """Record where each attachment went and for which turn (an audit line each)."""
    with db_session(engine) as db:
        for one in filed:
            row = db.get(Attachment, one.attachment.id)
            if row is None:
                continue
            row.turn_id, row.filed_path, row.filed_at = turn_id, one.path, utcnow()
            db.add(row)
            if audit is not None:
                audit.append(sender=row.user_id, channel=row.channel, turn_id=turn_id,
                             action=ACTION, decision="info", reason="filed",
                             outcome=f"{row.id} {one.path}")
        db.commit()


def forget_unused(engine: Engine, settings: Settings, now: datetime | None = None) -> int:
    """Delete the kept bytes of the attachments sent more than `keep_days` ago (a filed one
    lives on in the workspace), and the rows of those never filed; how many."""
    cutoff = (now or utcnow()) - timedelta(days=settings.attachments.keep_days)
    with db_session(engine) as db:
        old = list(db.exec(select(Attachment).where(col(Attachment.created_at) < cutoff)))
        for row in old:
            with contextlib.suppress(FileNotFoundError):
                (folder(settings) / row.id).unlink()
            if row.filed_path is None:
                db.delete(row)
        db.commit()
    return len(old)


def as_sent(content: str) -> str:
    """A stored user message as the person sent it: each attachment's block (what the model
    read) becomes one line, "📎 <name>" (the history shows it as text)."""
    def line(found: re.Match[str]) -> str:
        try:
            name = json.loads(found.group(2)).get("name")
        except (ValueError, AttributeError):
            return found.group(0)
        return f"📎 {name}" if isinstance(name, str) else found.group(0)
    return _BLOCK.sub(line, content)


def clean_name(name: str) -> str:
    """A sent file's name as one plain file name: no folders, controls or reserved marks."""
    base = unicodedata.normalize("NFC", name.replace("\\", "/").rsplit("/", 1)[-1])
    base = "".join("\x00" if unicodedata.category(c)[0] == "C" else c for c in base)
    base = _UNSAFE_NAME.sub("_", base).strip(" .")
    if len(base) > _NAME_CHARS:
        stem, dot, extension = base.rpartition(".")
        keep_ext = f".{extension}" if dot and len(extension) <= 8 else ""
        base = (stem if keep_ext else base)[:_NAME_CHARS - len(keep_ext)] + keep_ext
    return base


def _check(data: bytes, max_bytes: int, name: str, media_type: str | None) -> Sniffed:
    if not data:
        raise AttachmentRefused("ERR_ATTACHMENT_EMPTY", name=name or "-")
    if len(data) > max_bytes:
        raise AttachmentRefused("ERR_ATTACHMENT_TOO_LARGE", name=name or "-",
                                max_mb=max(1, max_bytes >> 20))
    found = sniff(data)
    if found is None:
        raise AttachmentRefused("ERR_ATTACHMENT_TYPE_UNSUPPORTED", name=name or "-")
    lies = claimed(name, media_type) - {found.kind}
    if lies:
        raise AttachmentRefused("ERR_ATTACHMENT_TYPE_MISMATCH", name=name or "-",
                                claimed=", ".join(sorted(lies)), actual=found.kind)
    return found


def _named(name: str, kind: str) -> str:
    """`name` with the extension of its kind when it has none of its own."""
    extension = EXTENSION[kind]
    if not name:
        return f"{'document' if kind in ('pdf', 'text') else 'photo'}.{extension}"
    stem, dot, _ = name.rpartition(".")
    return name if dot and stem and claimed(name, None) else f"{name}.{extension}"


def _still_there(settings: Settings, item: Attachment) -> bool:
    return bool(item.filed_path) and (settings.workspace / str(item.filed_path)).is_file()


def _place(workspace: Path, parts: list[str], name: str, data: bytes) -> str:
    """Write `data` as `parts/name` below the workspace, links never followed, never over
    another file (`name-2.ext`, ...); the workspace-relative path."""
    ws_fd = open_workspace(workspace)
    try:
        dir_fd = open_dir(ws_fd, parts, create=True)
    except OSError as exc:
        os.close(ws_fd)
        raise AttachmentRefused("ERR_ATTACHMENT_FILING_FAILED", path="/".join(parts)) from exc
    os.close(ws_fd)
    try:
        tmp = f".{name}.{os.getpid()}.part"
        fd = os.open(tmp, _WRITE, 0o644, dir_fd=dir_fd)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        final = _free_name(dir_fd, tmp, name)
        fsync_dir(workspace.joinpath(*parts))
        return "/".join([*parts, final])
    finally:
        os.close(dir_fd)


def _free_name(dir_fd: int, tmp: str, name: str) -> str:
    stem, dot, extension = name.rpartition(".")
    if not (dot and stem):
        stem, extension = name, ""
    for n in range(1, 1000):
        candidate = name if n == 1 else f"{stem}-{n}{'.' + extension if extension else ''}"
        try:
            rename_noreplace(dir_fd, tmp, dir_fd, candidate)
            return candidate
        except FileExistsError:
            continue
    os.unlink(tmp, dir_fd=dir_fd)
    raise AttachmentRefused("ERR_ATTACHMENT_FILING_FAILED", path=name)


def _audit(audit: AuditLog | None, user_id: str, channel: str, decision: str, *,
           reason: str, outcome: str) -> None:
    if audit is not None:
        audit.append(sender=user_id, channel=channel, action=ACTION, decision=decision,
                     reason=reason, outcome=outcome)
