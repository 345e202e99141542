"""What the mail digest remembers between runs (SPEC §12): per folder the last (uidvalidity,
uidnext) it saw, and the digest messages it sent (its own daily quota).

"New" is decided from `imap_status` alone, without downloading anything: a folder is new
when its uidnext grew with the same uidvalidity. A folder seen for the first time is a
baseline (the mail already there is not news: nothing is fetched); a changed uidvalidity (the
server renumbered the folder) is a baseline again. The tables live here and are created on
first use (`ensure_tables`); importing this module also registers them for `create_tables`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import BigInteger, DateTime, func
from sqlalchemy.engine import Engine
from sqlmodel import Field, Session, SQLModel, col, select

from metnos.ground.db.models import new_id, utcnow


def _stamp(**kwargs: Any) -> Any:
    return Field(sa_type=DateTime(timezone=True), **kwargs)


class MailFolderSeen(SQLModel, table=True):
    """The last state of one watched folder the digest has taken into account."""

    __tablename__ = "mail_folder_seen"

    folder: str = Field(primary_key=True)
    # RFC 3501: both are unsigned 32-bit (pymap, Dovecot and others use the whole range)
    uidvalidity: int = Field(sa_type=BigInteger)
    uidnext: int = Field(sa_type=BigInteger)
    updated_at: datetime = _stamp(default_factory=utcnow)


class MailDigestSent(SQLModel, table=True):
    """One digest message queued for the owner (the daily quota counts these)."""

    __tablename__ = "mail_digest_sent"

    id: str = Field(default_factory=new_id, primary_key=True)
    turn_id: str = Field(index=True)
    outbox_id: str | None = None
    messages: int = 0
    sent_at: datetime = _stamp(default_factory=utcnow)


def ensure_tables(engine: Engine) -> None:
    SQLModel.metadata.create_all(engine, tables=[
        MailFolderSeen.__table__, MailDigestSent.__table__])  # type: ignore[attr-defined]


@dataclass(frozen=True)
class FolderNews:
    """One folder's verdict: `since_uid` is the last uid already seen (fetch above it)."""

    folder: str
    uidvalidity: int
    uidnext: int
    since_uid: int
    verdict: str  # "new" | "same" | "baseline"


def status_folders(result: Mapping[str, Any] | None) -> dict[str, tuple[int, int]]:
    """(uidvalidity, uidnext) per folder of an `imap_status` result; malformed rows left out."""
    found: dict[str, tuple[int, int]] = {}
    for row in (result or {}).get("folders") or ():
        if not isinstance(row, Mapping) or not isinstance(row.get("name"), str):
            continue
        validity, uidnext = row.get("uidvalidity"), row.get("uidnext")
        if isinstance(validity, int) and isinstance(uidnext, int):
            found[row["name"]] = (validity, uidnext)
    return found


def compare(now: Mapping[str, tuple[int, int]],
            seen: Mapping[str, tuple[int, int]]) -> list[FolderNews]:
    """Each folder's verdict against what the digest saw last (pure)."""
    news: list[FolderNews] = []
    for folder, (validity, uidnext) in sorted(now.items()):
        last = seen.get(folder)
        if last is None or last[0] != validity:
            verdict, since = "baseline", uidnext - 1
        elif uidnext > last[1]:
            verdict, since = "new", last[1] - 1
        else:
            verdict, since = "same", last[1] - 1
        news.append(FolderNews(folder, validity, uidnext, max(since, 0), verdict))
    return news


def load_seen(db: Session, folders: Iterable[str]) -> dict[str, tuple[int, int]]:
    names = list(folders)
    rows = db.exec(select(MailFolderSeen).where(col(MailFolderSeen.folder).in_(names)))
    return {r.folder: (r.uidvalidity, r.uidnext) for r in rows}


def save_seen(db: Session, news: Iterable[FolderNews]) -> None:
    """Remember the folders' current state (after a run that took them into account)."""
    for item in news:
        row = db.get(MailFolderSeen, item.folder)
        if row is None:
            row = MailFolderSeen(folder=item.folder, uidvalidity=item.uidvalidity,
                                 uidnext=item.uidnext)
        row.uidvalidity, row.uidnext, row.updated_at = item.uidvalidity, item.uidnext, utcnow()
        db.add(row)


def sent_today(db: Session, tz: ZoneInfo, now: datetime | None = None) -> int:
    """Digest messages queued since midnight in the instance's time zone."""
    local = (now or datetime.now(UTC)).astimezone(tz)
    midnight = datetime.combine(local.date(), time(0), tzinfo=tz).astimezone(UTC)
    count = db.exec(select(func.count()).select_from(MailDigestSent).where(
        col(MailDigestSent.sent_at) >= midnight,
        col(MailDigestSent.sent_at) < midnight + timedelta(days=1))).one()
    return int(count)


def record_sent(db: Session, *, turn_id: str, outbox_id: str | None, messages: int) -> None:
    db.add(MailDigestSent(turn_id=turn_id, outbox_id=outbox_id, messages=messages))
