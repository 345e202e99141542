"""The trash has a bottom (SPEC §5): the copies kept so a change can be undone are cleared
when the person confirms the change, when the owner empties the trash, or by the retention
policy (`[trash] max_age_days`, `max_bytes`: oldest first).

What an action keeps: its before-record's copies (`state/before/<id>/blobs/`) and, in the
workspace, what it moved to the trash (`.trash/<id>/`, fs_delete) or what its undo moved out
of the way (`.trash/undo-<id>/`). Clearing an action removes those and leaves in its record
a `purged.json` (when, why): the signed manifest stays, so the audit and the record still
say what the change was, and an undo of it is refused in plain words with the date. Each
clearing leaves one audit line (action `trash.purge`); the audit chain is only appended to.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from metnos.ground import i18n
from metnos.ground.durable import write_atomic
from metnos.ground.restore import TRASH
from metnos.ground.reversibility import PARTIAL_PREFIX, valid_action_id
from metnos.mechanisms.audit import AuditLog
from metnos.mechanisms.undo import PURGED_MARKER, UNDONE_MARKER, purged_on

if TYPE_CHECKING:
    from metnos.ground.settings import Settings
    from metnos.turns.context import TurnContext
    from metnos.turns.service import TurnService

ACTION = "trash.purge"
log = logging.getLogger(__name__)


@dataclass
class Kept:
    """One action's kept copies."""

    action_id: str
    executor: str
    created_at: datetime
    size: int
    undone: bool
    purged_at: datetime | None = None


def purged_at(state_dir: Path, action_id: str) -> datetime | None:
    """When the copies of `action_id` were cleared; None when they are still kept."""
    return purged_on(state_dir / "before" / action_id)


def _size(path: Path) -> int:
    total = 0
    if path.is_symlink() or not path.exists():
        return 0
    if path.is_file():
        return path.stat().st_size
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                continue
    return total


def _workspace_copies(workspace: Path, action_id: str) -> list[Path]:
    trash = workspace / TRASH
    try:
        names = os.listdir(trash)
    except OSError:
        return []
    mine = (action_id, f"undo-{action_id}")
    return [trash / n for n in names
            if n in mine or (n.startswith(f"undo-{action_id}-") and n[len(mine[1]) + 1:].isdigit())]


def kept(settings: Settings) -> list[Kept]:
    """Every action with a before-record, oldest first (cleared ones too, with their date)."""
    before = settings.state_dir / "before"
    try:
        names = [n for n in os.listdir(before)
                 if not n.startswith(PARTIAL_PREFIX) and valid_action_id(n)]
    except FileNotFoundError:
        return []
    found = []
    for name in names:
        folder = before / name
        try:
            manifest = json.loads((folder / "manifest.json").read_bytes())["manifest"]
            created = datetime.fromisoformat(manifest["created_at"])
            executor = str(manifest["executor"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        size = _size(folder / "blobs") + sum(
            _size(p) for p in _workspace_copies(settings.workspace, name))
        found.append(Kept(name, executor, created, size, (folder / UNDONE_MARKER).exists(),
                          purged_at(settings.state_dir, name)))
    return sorted(found, key=lambda k: k.created_at)


def purge(settings: Settings, action_id: str, *, audit: AuditLog | None, sender: str,
          channel: str, reason: str) -> int | None:
    """Clear what `action_id` keeps; the bytes freed, None when it keeps nothing (unknown,
    or cleared already). One audit line when something was cleared."""
    folder = settings.state_dir / "before" / action_id
    if not valid_action_id(action_id) or not folder.is_dir() or \
            purged_at(settings.state_dir, action_id) is not None:
        return None
    copies = _workspace_copies(settings.workspace, action_id)
    freed = _size(folder / "blobs") + sum(_size(p) for p in copies)
    # the marker first: from now on an undo is refused, even if the clearing stops half-way
    write_atomic(folder / PURGED_MARKER, json.dumps(
        {"at": datetime.now(UTC).isoformat(), "reason": reason}).encode())
    shutil.rmtree(folder / "blobs", ignore_errors=True)
    for path in copies:
        shutil.rmtree(path, ignore_errors=True)
    if audit is not None:
        audit.append(sender=sender, channel=channel, action=ACTION, action_id=action_id,
                     args={"action_id": action_id, "bytes": freed}, decision="allow",
                     reason=reason, outcome="done")
    return freed


def purge_all(settings: Settings, *, audit: AuditLog | None, sender: str, channel: str,
              reason: str, older_than: timedelta | None = None,
              now: datetime | None = None) -> list[tuple[str, int]]:
    """Clear every action's copies (only those older than `older_than`, when given)."""
    now = now or datetime.now(UTC)
    done = []
    for item in kept(settings):
        if item.purged_at is not None:
            continue
        if older_than is not None and now - item.created_at < older_than:
            continue
        freed = purge(settings, item.action_id, audit=audit, sender=sender, channel=channel,
                      reason=reason)
        if freed is not None:
            done.append((item.action_id, freed))
    return done


def apply_retention(settings: Settings, *, audit: AuditLog | None,
                    now: datetime | None = None) -> list[tuple[str, int]]:
    """The `[trash]` limits: copies older than `max_age_days` are cleared, then the oldest
    until the rest fit in `max_bytes`."""
    limits, now = settings.trash, now or datetime.now(UTC)
    done: list[tuple[str, int]] = []
    if limits.max_age_days > 0:
        done += purge_all(settings, audit=audit, sender="metnos", channel="system",
                          reason="retention_age", now=now,
                          older_than=timedelta(days=limits.max_age_days))
    if limits.max_bytes > 0:
        live = [k for k in kept(settings) if k.purged_at is None]
        total = sum(k.size for k in live)
        for item in live:  # oldest first
            if total <= limits.max_bytes:
                break
            freed = purge(settings, item.action_id, audit=audit, sender="metnos",
                          channel="system", reason="retention_size")
            if freed is not None:
                done.append((item.action_id, freed))
                total -= item.size
    return done


def resolve(settings: Settings, handle: str) -> str | None:
    """The action id a short handle (a unique prefix, as git takes) stands for; None when
    none or several match."""
    handle = handle.strip().lower()
    if valid_action_id(handle) and (settings.state_dir / "before" / handle).is_dir():
        return handle
    if len(handle) < 4 or not handle.isalnum():
        return None
    try:
        names = [n for n in os.listdir(settings.state_dir / "before")
                 if n.startswith(handle) and valid_action_id(n)]
    except FileNotFoundError:
        return None
    return names[0] if len(names) == 1 else None


def confirm_last(service: TurnService, ctx: TurnContext) -> str:
    """"conferma" said in a chat: the newest undoable change of this session by this sender
    is kept for good; its copies are cleared (blocking)."""
    from metnos.turns.undo_said import candidates

    found = candidates(service, ctx.session_id, ctx.sender)
    if not found:
        return i18n.get("MSG_TRASH_CONFIRM_NOTHING", ctx.lang)
    action_id = found[0][0]
    purge(service.settings, action_id, audit=service.audit, sender=ctx.sender,
          channel=ctx.channel, reason="confirmed")
    return i18n.get("MSG_TRASH_CONFIRMED", ctx.lang)


def describe(item: Kept) -> dict[str, Any]:
    return {"action_id": item.action_id, "executor": item.executor,
            "created_at": item.created_at.isoformat(), "size": item.size,
            "undone": item.undone,
            "purged_at": item.purged_at.isoformat() if item.purged_at else None}


async def keep(settings: Settings, audit: AuditLog | None) -> None:
    """The retention policy in the running instance: once at start, then every
    `[trash] check_every_s` (the gateway runs it beside the turns; cancelled at stop)."""
    while True:
        try:
            done = await asyncio.to_thread(apply_retention, settings, audit=audit)
            if done:
                log.info("trash.retention cleared=%d bytes=%d", len(done),
                         sum(n for _, n in done))
        except Exception as exc:  # a full disk, a folder gone: tried again next time
            log.warning("trash.retention_failed: %s", type(exc).__name__)
        await asyncio.sleep(settings.trash.check_every_s)


def size_words(size: int, lang: str) -> str:
    """`size` bytes as a person reads it ("1.2 MB")."""
    from babel.units import format_unit

    from metnos.ground.i18n.formatting import locale_for

    for unit, scale in (("digital-gigabyte", 1 << 30), ("digital-megabyte", 1 << 20),
                        ("digital-kilobyte", 1 << 10)):
        if size >= scale:
            return str(format_unit(round(size / scale, 1), unit, length="short",
                                   locale=locale_for(lang)))
    return str(format_unit(size, "digital-byte", length="short", locale=locale_for(lang)))


def purged_words(count: int, size: int, lang: str) -> str:
    if not count:
        return i18n.get("MSG_TRASH_PURGED_NONE", lang)
    return i18n.get("MSG_TRASH_PURGED", lang, count=count, size=size_words(size, lang))
