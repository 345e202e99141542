"""What the gateway does with a `schedule_set` result the sandbox validated (SPEC §12): the
owner's new scheduled task, written as `metnos schedule add` writes it (the row first, the
source of truth; then its Prefect schedule), bound to the chat it was asked from and to the
step's action id, so `metnos undo` removes it again (`undoer`).

"Every Monday at 8 tell me …" from a chat: the host read the cadence before the owner was
asked (`metnos.mechanisms.policy.host_checks`, check `cadence`), the owner approved the exact
schedule (the step's risk is medium), and here the result must be that approved schedule: a result
the executor should never give is refused, never scheduled.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from babel.dates import format_datetime

from metnos.features.reminders.outbox import channel_of
from metnos.features.schedules import cadence, owner, store
from metnos.features.schedules.owner import ScheduleError, Sync
from metnos.ground import i18n
from metnos.ground.db.engine import in_session
from metnos.ground.i18n.formatting import locale_for
from metnos.mechanisms import identity
from metnos.mechanisms.undo import UndoError, UndoReport, audit_undo, mark_undone
from metnos.turns.context import CheckedStep, TurnContext
from metnos.turns.reply import StepOutcome

if TYPE_CHECKING:
    from metnos.turns.runtime import Runtime, Undoer

log = logging.getLogger(__name__)

EXECUTOR = "schedule_set"
EFFECT = "schedule_task"  # its manifest's `effect`


def effect(service: Runtime, sync: Sync | None) -> Callable[
        [TurnContext, CheckedStep, StepOutcome], Awaitable[StepOutcome]]:
    """The runner's hook for `schedule_set` (registered by `metnos.faces.wiring`); `sync` is None
    when this process has no way to Prefect (the runner's next start publishes the task)."""
    async def carry_out(ctx: TurnContext, checked: CheckedStep,
                        outcome: StepOutcome) -> StepOutcome:
        return await schedule_task(service, sync, ctx, checked, outcome)
    return carry_out


def checked_result(result: dict[str, Any], approved: dict[str, Any]) -> tuple[str, str, str]:
    """(task id, cron, text) of a `schedule_set` result: its cron and "when" must be the ones
    the host read (check `cadence`) and the owner approved. Raises ValueError."""
    try:
        task_id = str(result["task_id"])
        when, text, cron = str(result["when"]), str(result["text"]), str(result["cron"])
    except (KeyError, TypeError) as exc:
        raise ValueError(f"incomplete result: {exc!r}") from exc
    if len(task_id) != 10 or not all(c in "0123456789abcdef" for c in task_id):
        raise ValueError("task id malformed")
    if cron != approved.get("cron") or " ".join(when.split()) != approved.get("when"):
        raise ValueError("the result is not the schedule that was approved")
    return task_id, cron, text


async def schedule_task(service: Runtime, sync: Sync | None, ctx: TurnContext,
                        checked: CheckedStep, outcome: StepOutcome) -> StepOutcome:
    result = dict(outcome.result or {})
    approved = checked.request.args if checked.request is not None else {}
    try:
        task_id, cron, text = checked_result(result, approved)
    except ValueError as exc:
        log.error("schedule.result_refused action_id=%s: %s", outcome.action_id, exc)
        return await _not_scheduled(service, ctx, outcome, "ERR_SCHEDULE_INVALID", {})
    try:  # the cron the host read before the approval; "when" as the owner said it
        task = await asyncio.to_thread(
            owner.new_task, service.engine, service.settings, when=cron, text=text,
            user_id=ctx.user_id, lang=ctx.lang, channel=channel_of(ctx.channel),
            address=ctx.session_id, action_id=outcome.action_id, task_id=task_id,
            spoken=str(approved["when"]))
    except ScheduleError as exc:
        return await _not_scheduled(service, ctx, outcome, exc.key, exc.vars)
    if ctx.tainted:  # its text came after outside data: when it runs, that turn is tainted
        await asyncio.to_thread(_tainted_text, service, ctx, task.id, text, outcome.action_id)
    published = sync is not None and await owner.publish(sync, task)
    nxt = cadence.next_times(task.cron, task.timezone, datetime.now(UTC))[0]
    result.update(when=task.when_text, timezone=task.timezone, next_run=format_datetime(
        nxt, format="medium", locale=locale_for(ctx.lang)), in_prefect=published)
    return StepOutcome(EXECUTOR, "done", result=result, audit_seq=outcome.audit_seq,
                       action_id=outcome.action_id)


def _tainted_text(service: Runtime, ctx: TurnContext, task_id: str, text: str,
                  action_id: str | None) -> None:
    identity.record_text(service.engine, identity.text_key("schedule", task_id), text,
                         sources=ctx.sources, turn_id=ctx.turn_id, action_id=action_id)
    service.record.audit_line(ctx, action=EXECUTOR, decision="info",
                              reason="MSG_SCHEDULE_TAINTED_SET", outcome="recorded",
                              action_id=action_id)


async def _not_scheduled(service: Runtime, ctx: TurnContext, outcome: StepOutcome,
                         key: str, vars: dict[str, Any]) -> StepOutcome:
    """The step fails, with its audit line: the owner is told nothing was scheduled."""
    seq = await asyncio.to_thread(
        service.record.audit_line, ctx, action=EXECUTOR, decision="allow", reason=key,
        outcome="failed", action_id=outcome.action_id)
    return StepOutcome(EXECUTOR, "failed", key=key, vars={**vars, "executor": EXECUTOR},
                       audit_seq=seq, action_id=outcome.action_id)


async def _awaited(call: Awaitable[None]) -> None:
    await call


class ScheduleUndo(UndoReport):
    """An undone scheduled task: nothing in the workspace changed, it will not run again."""

    text: str = ""
    when: str = ""

    def message(self, lang: str | None = None) -> str:
        head = super().message(lang)
        return head + "\n" + i18n.get("MSG_SCHEDULE_UNDONE", lang, text=self.text,
                                      when=self.when)


def undoer(service: Runtime, sync: Sync | None) -> Undoer:
    """Its undo (`service.hooks.undoers[EFFECT]`, asked by `metnos.features.reversal.Effects`;
    blocking, in a worker thread): None when the action set no scheduled task."""
    def run(action_id: str, sender: str, channel: str) -> UndoReport | None:
        return remove_task(service, sync, action_id, sender=sender, channel=channel)
    return run


def remove_task(service: Runtime, sync: Sync | None, action_id: str, *, sender: str,
                channel: str) -> UndoReport | None:
    """Undo the task `action_id` set: the row is deactivated at once (a firing of it then
    does nothing), then its Prefect schedule is dropped (a Prefect that does not answer
    drops it at the runner's next start). Raises UndoError ERR_UNDO_ALREADY_DONE."""
    task = in_session(service.engine, store.by_action, action_id)
    if task is None:
        return None
    audit_line = audit_undo(service.audit, action_id, sender, channel)
    if not in_session(service.engine, store.deactivate, task.id):
        audit_line(decision="deny", reason="ERR_UNDO_ALREADY_DONE", outcome="refused")
        raise UndoError("ERR_UNDO_ALREADY_DONE", action_id=action_id, undo_id="-")
    if sync is not None:
        try:  # this worker thread has no loop of its own: one for the Prefect call
            asyncio.run(_awaited(sync.remove(task.id)))
        except Exception as exc:  # `stale_slugs` at the runner's next start
            log.warning("schedule.unpublish_failed id=%s: %s", task.id, type(exc).__name__)
    audit_line(decision="allow", reason="ok", outcome="done")
    report = ScheduleUndo(action_id, uuid.uuid4().hex, EXECUTOR, "done", [])
    report.text, report.when = task.text, task.when_text
    folder = service.settings.state_dir / "before" / action_id
    if folder.is_dir():  # as a file undo leaves it: the surfaces no longer offer an Undo
        mark_undone(folder, report.undo_id)
    return report
