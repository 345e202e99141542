"""The outbox: messages Metnos sends on its own (a reminder at its time; later, digests), each
to the channel and chat it belongs to, delivered by the gateway (`gateway/outbox_delivery.py`).

A row is due once `due_at` is set (a reminder's flow run sets it at the reminder's time; a
message for now is inserted due) and delivered once `delivered_at` is: only after the channel
took it (a web chat that is not open gets it when it connects again). A cancelled row (an
undone reminder) is never delivered. `run_closed` says the row's Prefect run was cancelled too.
All datetimes are timezone-aware UTC.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import CheckConstraint, Index, update
from sqlmodel import Field, Session, SQLModel, col, select

from metnos.ground.db.models import _stamp, new_id, utcnow

CHANNELS = ("web", "telegram", "cli")


class Outbox(SQLModel, table=True):
    __tablename__ = "outbox"
    __table_args__ = (
        CheckConstraint(f"channel IN {CHANNELS!r}", name="outbox_channel_valid"),
        Index("outbox_pending", "delivered_at", "cancelled_at"),
    )

    id: str = Field(default_factory=new_id, primary_key=True)
    kind: str = "message"  # "reminder" | "message"
    user_id: str = Field(index=True)
    channel: str  # where it goes: web | telegram | cli
    address: str  # the chat session it was set from (telegram-<chat id> for Telegram)
    text: str  # as the user reads it, in `lang`
    lang: str
    created_at: datetime = _stamp(default_factory=utcnow)
    scheduled_for: datetime | None = _stamp(default=None, nullable=True)  # a reminder's time
    due_at: datetime | None = _stamp(default=None, nullable=True)
    delivered_at: datetime | None = _stamp(default=None, nullable=True)
    cancelled_at: datetime | None = _stamp(default=None, nullable=True)
    action_id: str | None = Field(default=None, index=True)  # the step that set it (undo)
    turn_id: str | None = None
    flow_run_id: str | None = None
    run_closed: bool = False


def channel_of(turn_channel: str) -> str:
    """Where a message set from a turn's channel goes back: the CLI talks to the API."""
    return {"telegram": "telegram", "web": "web"}.get(turn_channel, "cli")


def add(db: Session, row: Outbox) -> Outbox:
    db.add(row)
    return row


def get(db: Session, outbox_id: str) -> Outbox | None:
    return db.get(Outbox, outbox_id)


def by_action(db: Session, action_id: str) -> Outbox | None:
    return db.exec(select(Outbox).where(Outbox.action_id == action_id)).first()


def set_run(db: Session, outbox_id: str, flow_run_id: str) -> None:
    db.execute(update(Outbox).where(col(Outbox.id) == outbox_id)
               .values(flow_run_id=flow_run_id))


def mark_due(db: Session, outbox_id: str) -> bool:
    """The reminder's time has come: due now, unless it was cancelled (or is due already)."""
    done = db.execute(update(Outbox).where(
        col(Outbox.id) == outbox_id, col(Outbox.cancelled_at).is_(None),
        col(Outbox.due_at).is_(None)).values(due_at=utcnow()))
    return bool(done.rowcount)  # type: ignore[attr-defined]


def cancel(db: Session, outbox_id: str) -> bool:
    """Cancel a row not delivered yet; False when it was delivered or cancelled already."""
    done = db.execute(update(Outbox).where(
        col(Outbox.id) == outbox_id, col(Outbox.cancelled_at).is_(None),
        col(Outbox.delivered_at).is_(None)).values(cancelled_at=utcnow()))
    return bool(done.rowcount)  # type: ignore[attr-defined]


def pending(db: Session, *, channel: str | None = None, user_id: str | None = None,
            limit: int = 50) -> list[Outbox]:
    """Due rows (due now or earlier: a notice held past quiet hours waits) not delivered nor
    cancelled, oldest first."""
    query = select(Outbox).where(col(Outbox.due_at).is_not(None),
                                 col(Outbox.due_at) <= utcnow(),
                                 col(Outbox.delivered_at).is_(None),
                                 col(Outbox.cancelled_at).is_(None))
    if channel is not None:
        query = query.where(Outbox.channel == channel)
    if user_id is not None:
        query = query.where(Outbox.user_id == user_id)
    return list(db.exec(query.order_by(col(Outbox.due_at)).limit(limit)))


def claim(db: Session, outbox_ids: list[str]) -> list[str]:
    """Mark these rows delivered; the ids that were still undelivered (one taker each)."""
    if not outbox_ids:
        return []
    taken = db.execute(update(Outbox).where(
        col(Outbox.id).in_(outbox_ids), col(Outbox.delivered_at).is_(None),
        col(Outbox.cancelled_at).is_(None)).values(delivered_at=utcnow())
        .returning(col(Outbox.id)))
    return [str(row[0]) for row in taken]


def runs_to_close(db: Session) -> list[Outbox]:
    """Cancelled rows whose Prefect run may still be scheduled."""
    return list(db.exec(select(Outbox).where(
        col(Outbox.cancelled_at).is_not(None), col(Outbox.flow_run_id).is_not(None),
        col(Outbox.run_closed).is_(False))))


def close_run(db: Session, outbox_id: str) -> None:
    db.execute(update(Outbox).where(col(Outbox.id) == outbox_id).values(run_closed=True))
