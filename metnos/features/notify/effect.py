"""What the gateway does with a `notify` result the sandbox validated: an outbox row (kind
"notify") for the person's preferred channel, delivered by the gateway's outbox loop.

The channel is `[notify] channel`, or with "auto" a channel the person actually reads
(`destination`): their Telegram chat when they paired one, else the web chat they last wrote
from, and a terminal (`metnos chat`, whose queue waits for its next start) only when it is the
only channel they ever used, so one `metnos chat` by the owner never takes the digest and
the notices away from their phone; with none known, the turn's own chat. Quiet hours
are checked here, in code: inside them the row's `due_at` is their end (`quiet_until`), so
the delivery waits; outside them it is due at once. An undo cancels the row until it is
delivered (`metnos.features.reminders.effect.cancel_reminder` finds any outbox row by its action
id).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlmodel import Session, col, select

from metnos.features.notify.quiet import quiet_until
from metnos.features.pairing.service import paired_user
from metnos.features.reminders import outbox
from metnos.features.reminders.outbox import Outbox
from metnos.ground import i18n
from metnos.ground.db.engine import in_session
from metnos.ground.db.models import ChatSession, Turn
from metnos.ground.i18n.formatting import spoken_time
from metnos.ground.settings import Settings
from metnos.turns.context import CheckedStep, TurnContext
from metnos.turns.reply import StepOutcome

if TYPE_CHECKING:
    from metnos.turns.runtime import Runtime

log = logging.getLogger(__name__)

EXECUTOR = "notify"
EFFECT = "notify"  # its manifest's `effect`
KIND = "notify"  # the outbox row's kind
MAX_TEXT = 1500  # as the executor checks them
MAX_TITLE = 120
# a turn's channel → the outbox channel that reaches the same person back
TURN_CHANNELS = {"web": "web", "telegram": "telegram", "api": "cli", "cli": "cli"}


@dataclass(frozen=True)
class Notification:
    id: str
    text: str
    title: str | None


@dataclass(frozen=True)
class Destination:
    channel: str  # web | telegram | cli (outbox.CHANNELS)
    address: str  # the chat session (telegram-<chat id> for Telegram)


def checked_result(result: dict[str, Any]) -> Notification:
    """The notification of a `notify` result, checked again on this side of the sandbox.
    Raises ValueError."""
    note = result.get("notification")
    if not isinstance(note, dict):
        raise ValueError("no notification in the result")
    try:
        note_id = uuid.UUID(str(note["id"])).hex
    except (KeyError, ValueError) as exc:
        raise ValueError(f"bad id: {exc!r}") from exc
    text, title = note.get("text"), note.get("title")
    if not isinstance(text, str) or not text.strip() or len(text) > MAX_TEXT:
        raise ValueError("text missing or too long")
    if title is not None and (not isinstance(title, str) or len(title) > MAX_TITLE):
        raise ValueError("bad title")
    return Notification(note_id, text.strip(), title.strip() if title else None)


def last_written(db: Session, user_id: str, channel: str | None = None) -> Destination | None:
    """Where `user_id` last wrote from (their latest own turn), on `channel` only if given."""
    turn_channels = [t for t, c in TURN_CHANNELS.items() if channel is None or c == channel]
    query = (select(Turn.channel, Turn.session_id)
             .join(ChatSession, col(ChatSession.id) == col(Turn.session_id))
             .where(ChatSession.user_id == user_id, Turn.sender == user_id,
                    col(Turn.channel).in_(turn_channels))
             .order_by(col(Turn.created_at).desc()).limit(1))
    row = db.exec(query).first()
    return None if row is None else Destination(TURN_CHANNELS[row[0]], row[1])


# "auto": the channels a person reads, in order; a terminal's queue only as the last one
AUTO_ORDER = ("telegram", "web", "cli")


def telegram_chat(db: Session, user_id: str) -> Destination | None:
    """The chat the user last wrote from on Telegram, else their paired Telegram chat (a
    private chat's id is the sender's)."""
    found = last_written(db, user_id, "telegram")
    if found is not None:
        return found
    paired = paired_user(db, "telegram", user_id)
    return Destination("telegram", f"telegram-{paired.sender_id}") if paired else None


def destination(db: Session, settings: Settings, user_id: str,
                fallback: Destination) -> Destination:
    """The preferred channel's chat: `[notify] channel`; with "auto" the first of
    `AUTO_ORDER` the user has (a paired or used Telegram chat, then the web chat they last
    wrote from, then the terminal); `fallback` (the turn's own chat) when none is known."""
    preferred = settings.notify.channel
    for channel in AUTO_ORDER if preferred == "auto" else (preferred,):
        found = (telegram_chat(db, user_id) if channel == "telegram"
                 else last_written(db, user_id, channel))
        if found is not None:
            return found
    if preferred != "auto":
        log.warning("notify.no_chat_on_channel channel=%s user=%s", preferred, user_id)
    return fallback


def notice_text(note: Notification, lang: str) -> str:
    if note.title:
        return i18n.get("MSG_NOTIFY_NOTICE_TITLED", lang, title=note.title, text=note.text)
    return i18n.get("MSG_NOTIFY_NOTICE", lang, text=note.text)


def notification_row(note: Notification, where: Destination, *, settings: Settings,
                     user_id: str, lang: str, now: datetime, action_id: str | None,
                     turn_id: str | None) -> Outbox:
    """The outbox row: due now, or at the end of the quiet hours `now` falls in."""
    later = quiet_until(settings, now)
    return Outbox(id=note.id, kind=KIND, user_id=user_id, channel=where.channel,
                  address=where.address, text=notice_text(note, lang), lang=lang,
                  scheduled_for=later, due_at=later or now.astimezone(UTC),
                  action_id=action_id, turn_id=turn_id)


def effect(service: Runtime) -> Callable[
        [TurnContext, CheckedStep, StepOutcome], Awaitable[StepOutcome]]:
    """The runner's hook for `notify` (registered by `metnos.faces.wiring`)."""
    async def carry_out(ctx: TurnContext, checked: CheckedStep,
                        outcome: StepOutcome) -> StepOutcome:
        return await send_notification(service, ctx, outcome)
    return carry_out


async def send_notification(service: Runtime, ctx: TurnContext, outcome: StepOutcome,
                            now: datetime | None = None) -> StepOutcome:
    """Queue the notification of a done `notify` step; a result that does not hold fails
    the step with its audit line (nothing is sent)."""
    now = now or datetime.now(UTC)
    result = dict(outcome.result or {})
    try:
        note = checked_result(result)
    except ValueError as exc:
        log.error("notify.result_refused action_id=%s: %s", outcome.action_id, exc)
        seq = await asyncio.to_thread(
            service.record.audit_line, ctx, action=EXECUTOR, decision="allow",
            reason="ERR_NOTIFY_NOT_QUEUED", outcome="failed", action_id=outcome.action_id)
        return StepOutcome(EXECUTOR, "failed", key="ERR_NOTIFY_NOT_QUEUED",
                           vars={"executor": EXECUTOR}, audit_seq=seq,
                           action_id=outcome.action_id)
    fallback = Destination(outbox.channel_of(ctx.channel), ctx.session_id)
    settings = service.settings
    where = await asyncio.to_thread(in_session, service.engine, destination, settings,
                                    ctx.user_id, fallback)
    row = notification_row(note, where, settings=settings, user_id=ctx.user_id,
                           lang=ctx.lang, now=now, action_id=outcome.action_id,
                           turn_id=ctx.turn_id)
    await asyncio.to_thread(in_session, service.engine, outbox.add, row)
    later = row.scheduled_for
    result.update(reply="deferred" if later else "done", text=note.text,
                  channel=i18n.get(f"MSG_NOTIFY_CHANNEL_{where.channel}", ctx.lang),
                  when=spoken_time(later, ctx.lang, settings.tz, now) if later else "")
    return StepOutcome(EXECUTOR, "done", result=result, audit_seq=outcome.audit_seq,
                       action_id=outcome.action_id)
