"""What the gateway does with a `reminder_set` result the sandbox validated: an outbox row and
a Prefect flow run scheduled for its time (`flows/reminder.py` passes the scheduling calls in:
nothing here imports prefect). An undo cancels both (`cancel_reminder`).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from metnos.features.reminders import outbox
from metnos.features.reminders.outbox import Outbox, channel_of
from metnos.ground import i18n
from metnos.ground.db.engine import in_session
from metnos.ground.i18n.formatting import spoken_time
from metnos.mechanisms.undo import UndoError, UndoReport, audit_undo, mark_undone
from metnos.turns.context import CheckedStep, TurnContext
from metnos.turns.reply import StepOutcome

if TYPE_CHECKING:
    from metnos.turns.runtime import Runtime, Undoer

log = logging.getLogger(__name__)

EXECUTOR = "reminder_set"
EFFECT = "schedule_reminder"  # its manifest's `effect`
# (outbox id, when to run, run name, tags) → the flow run's id
Schedule = Callable[[str, datetime, str, list[str]], Awaitable[str]]
Cancel = Callable[[str], Awaitable[None]]  # a scheduled flow run's id


@dataclass(frozen=True)
class Scheduler:
    """How reminders reach Prefect: `flows.reminder.scheduler()` builds the real one."""

    schedule: Schedule
    cancel: Cancel


def effect(service: Runtime, scheduler: Scheduler) -> Callable[
        [TurnContext, CheckedStep, StepOutcome], Awaitable[StepOutcome]]:
    """The runner's hook for `reminder_set` (registered by `metnos.faces.wiring`)."""
    async def carry_out(ctx: TurnContext, checked: CheckedStep,
                        outcome: StepOutcome) -> StepOutcome:
        return await schedule_reminder(service, scheduler, ctx, outcome)
    return carry_out


MAX_TEXT = 200  # as the executor checks it
MAX_AHEAD = timedelta(days=366)


def checked_result(result: dict[str, Any], now: datetime) -> tuple[str, datetime, str]:
    """(id, time, text) of a `reminder_set` result, checked again on this side of the
    sandbox: a result the executor should never give is refused, never scheduled.
    Raises ValueError."""
    try:
        reminder_id = str(uuid.UUID(str(result["reminder_id"])))
        at = datetime.fromisoformat(str(result["at"]))
        text = result["text"]
    except (KeyError, TypeError) as exc:
        raise ValueError(f"incomplete result: {exc!r}") from exc
    if at.tzinfo is None or not now - timedelta(minutes=1) <= at <= now + MAX_AHEAD:
        raise ValueError(f"time out of range: {result['at']!r}")
    if not isinstance(text, str) or not text.strip() or len(text) > MAX_TEXT:
        raise ValueError("text missing or too long")
    return reminder_id, at, " ".join(text.split())


async def schedule_reminder(service: Runtime, scheduler: Scheduler, ctx: TurnContext,
                            outcome: StepOutcome) -> StepOutcome:
    result = dict(outcome.result or {})
    now = datetime.now(UTC)
    try:
        reminder_id, at, text = checked_result(result, now)
    except ValueError as exc:
        log.error("reminder.result_refused action_id=%s: %s", outcome.action_id, exc)
        return await _not_scheduled(service, ctx, outcome)
    row = Outbox(id=reminder_id, kind="reminder",
                 user_id=ctx.user_id, channel=channel_of(ctx.channel), address=ctx.session_id,
                 text=i18n.get("MSG_REMINDER_NOTICE", ctx.lang, text=text),
                 lang=ctx.lang, scheduled_for=at.astimezone(UTC),
                 action_id=outcome.action_id, turn_id=ctx.turn_id)
    await asyncio.to_thread(in_session, service.engine, outbox.add, row)
    wait = max(0.0, (at - now).total_seconds()) * service.settings.reminders.time_scale
    tags = ["reminder", f"channel:{row.channel}", f"user:{ctx.user_id}"]
    try:
        run_id = await scheduler.schedule(row.id, now + timedelta(seconds=wait),
                                          f"reminder-{row.id[:8]}", tags)
    except Exception as exc:  # the Prefect API down, the deployment not served: say so
        log.warning("reminder.schedule_failed id=%s: %s", row.id, exc, exc_info=True)
        await asyncio.to_thread(in_session, service.engine, outbox.cancel, row.id)
        return await _not_scheduled(service, ctx, outcome)
    await asyncio.to_thread(in_session, service.engine, outbox.set_run, row.id, run_id)
    result["when"] = spoken_time(at, ctx.lang, service.settings.tz, now)
    return StepOutcome(EXECUTOR, "done", result=result, audit_seq=outcome.audit_seq,
                       action_id=outcome.action_id)


async def _not_scheduled(service: Runtime, ctx: TurnContext,
                         outcome: StepOutcome) -> StepOutcome:
    """The step fails, with its audit line: the user is told nothing was set."""
    seq = await asyncio.to_thread(
        service.record.audit_line, ctx, action=EXECUTOR, decision="allow",
        reason="ERR_REMINDER_NOT_SCHEDULED", outcome="failed", action_id=outcome.action_id)
    return StepOutcome(EXECUTOR, "failed", key="ERR_REMINDER_NOT_SCHEDULED",
                       vars={"executor": EXECUTOR}, audit_seq=seq, action_id=outcome.action_id)


class ReminderUndo(UndoReport):
    """An undone reminder: nothing in the workspace changed, the message will not be sent."""

    text: str = ""

    def message(self, lang: str | None = None) -> str:
        head = super().message(lang)
        return head + "\n" + i18n.get("MSG_REMINDER_CANCELLED", lang, text=self.text)


def undoer(service: Runtime) -> Undoer:
    """Its undo (`service.hooks.undoers[EFFECT]`, asked by `metnos.features.reversal.Effects`)."""
    def run(action_id: str, sender: str, channel: str) -> UndoReport | None:
        return cancel_reminder(service, action_id, sender=sender, channel=channel)
    return run


def cancel_reminder(service: Runtime, action_id: str, *, sender: str,
                    channel: str) -> UndoReport | None:
    """Undo a reminder (blocking): its row is cancelled at once (the flow run then sends
    nothing; the gateway cancels the run too). None when `action_id` set no reminder.
    Raises UndoError ERR_REMINDER_ALREADY_SENT / ERR_UNDO_ALREADY_DONE."""
    row = in_session(service.engine, outbox.by_action, action_id)
    if row is None:
        return None
    audit_line = audit_undo(service.audit, action_id, sender, channel)
    if not in_session(service.engine, outbox.cancel, row.id):
        key = "ERR_UNDO_ALREADY_DONE" if row.cancelled_at is not None else \
            "ERR_REMINDER_ALREADY_SENT"
        audit_line(decision="deny", reason=key, outcome="refused")
        raise UndoError(key, action_id=action_id, undo_id="-")
    audit_line(decision="allow", reason="ok", outcome="done")
    report = ReminderUndo(action_id, uuid.uuid4().hex, EXECUTOR, "done", [])
    report.text = row.text
    folder = service.settings.state_dir / "before" / action_id
    if folder.is_dir():  # as a file undo leaves it: the surfaces no longer offer an Undo
        mark_undone(folder, report.undo_id)
    return report
