"""The gateway's side of a scheduled task: a due run (made due by the `owner-task` flow run
in the runner's process) becomes a turn from the owner, in the chat the task belongs to, and
its reply an outbox notice for that chat.

Why the gateway and not the flow run: the gateway holds the instance's runtime (sessions,
the mnestoma, approvals, the event bus), and a turn there is an in-process flow (0.2-0.3 s);
the flow run in the runner is the clock, visible in the Prefect UI, and waits for the end.
A gateway that is down leaves the run due: it runs when the gateway is back, or the flow run
times out, is retried, and is reported.

The turn says the task's text in the form the embedded planner reads (`spoken.runnable`): a
task set without a model always has one (it was refused otherwise when it was set), so it runs
the same on a morning the model is down. A task set with a model that the planner cannot read,
on a morning the model does not answer, is not answered "I didn't understand": its run fails
(`ERR_SCHEDULE_RUN_NOT_UNDERSTOOD`), Prefect retries it once 30 s later, then the person is
told once that it could not run (`notices.report_failed`).

`loop` claims the due runs and fires each through the gateway's turn handle; the gateway
runs it (`metnos.faces.gateway.scheduled.with_schedules`); the `schedule_set` executor's effect and
undo (`metnos.features.schedules.effect`) are registered with every runtime (`metnos.faces.wiring`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from metnos.features.reminders import outbox
from metnos.features.reminders.outbox import Outbox
from metnos.features.schedules import spoken, store
from metnos.features.schedules.models import TaskRun
from metnos.ground import i18n
from metnos.ground.db.engine import in_session
from metnos.ground.db.models import utcnow
from metnos.ground.errors import MetnosError
from metnos.mechanisms import identity
from metnos.turns.context import TurnContext
from metnos.turns.handle import TurnHandle
from metnos.turns.language import ui_locale
from metnos.turns.runtime import Runtime

log = logging.getLogger(__name__)

CHANNEL = "schedule"  # the turn's channel: audit lines tell a scheduled turn apart
KIND = "schedule"  # the outbox row's kind


async def fire(turns: TurnHandle, run: TaskRun) -> None:
    """Run `run`'s task as a turn and deliver its reply; the run ends done or failed."""
    service = turns.service
    engine = service.engine
    task = await asyncio.to_thread(in_session, engine, store.get, run.task_id)
    if task is None or not task.active:
        await asyncio.to_thread(in_session, engine, store.finish, run.id, "done", error="inactive")
        return
    said = await asyncio.to_thread(_said, service, task.text, task.lang)
    locale = ui_locale(task.lang, None, service.settings)  # the task's language, if active
    try:
        ctx = await turns.start(
            said, session_id=task.address, lang=locale, channel=CHANNEL, sender=task.user_id,
            prepare=lambda ctx: _taint_if_outside(service, ctx, task.id, task.text))
    except MetnosError as exc:
        await asyncio.to_thread(in_session, engine, store.finish, run.id, "failed", error=exc.key)
        return
    answered = await turns.reply(ctx.turn_id, service.settings.schedules.run_timeout_s)
    if answered is None or answered.status == "failed" or not ctx.understood:
        # not understood: a task set with a model, on a morning the model did not answer;
        # no "I didn't understand" in the chat: the run fails, is retried once, then reported
        key = "ERR_SCHEDULE_RUN_TIMEOUT" if answered is None else (
            "ERR_SCHEDULE_RUN_FAILED" if answered.status == "failed"
            else "ERR_SCHEDULE_RUN_NOT_UNDERSTOOD")
        await asyncio.to_thread(in_session, engine, store.finish, run.id, "failed",
                                turn_id=ctx.turn_id, error=key)
        return
    text = i18n.get("MSG_SCHEDULE_REPLY", task.lang, when=task.when_text, reply=answered.reply)
    row = await asyncio.to_thread(in_session, engine, outbox.add, Outbox(
        kind=KIND, user_id=task.user_id, channel=task.channel, address=task.address,
        text=text, lang=task.lang, due_at=utcnow(), turn_id=ctx.turn_id))
    await asyncio.to_thread(in_session, engine, store.finish, run.id, "done", turn_id=ctx.turn_id,
                            outbox_id=row.id)


def _said(service: Runtime, text: str, lang: str) -> str:
    """What the task's turn says: the form of its text the embedded planner reads ("dimmi
    cosa c'è nella lista della spesa" → "cosa c'è nella lista della spesa"), so a morning
    without the model runs it too; the text itself when the planner reads no form of it."""
    langs = service.settings.active_languages
    tools = service.registry.tool_specs(lang)
    others = {code: service.registry.tool_specs(code) for code in langs if code != lang}
    return spoken.runnable(text, lang, tools, others) or text


def _taint_if_outside(service: Runtime, ctx: TurnContext, task_id: str,
                     text: str) -> None:
    """A task a tainted turn set runs its text as data from outside: its turn starts tainted
    (acting steps ask the owner, naming where the text came from), with an audit line."""
    sources = identity.text_sources(service.engine, identity.text_key("schedule", task_id),
                                    text)
    if sources is None:
        return
    ctx.tainted = True
    ctx.sources.append(i18n.get("MSG_SCHEDULE_SOURCE", ctx.lang,
                                sources=identity.read_label(sources)))
    service.record.audit_line(ctx, action="schedule_set", decision="info",
                              reason="MSG_SCHEDULE_RUN_UNTRUSTED", outcome="tainted")


async def loop(turns: TurnHandle, stopping: Callable[[], bool]) -> None:
    """Claim the due runs every `poll_s` and fire each in the background; none while the
    gateway is `stopping`."""
    service = turns.service
    while True:
        try:
            runs = [] if stopping() else await asyncio.to_thread(
                in_session, service.engine, store.claim_due)
            for run in runs:
                turns.launch(fire(turns, run))
        except Exception:  # the loop's boundary: a bad round must not end the firing
            log.warning("schedules.round_failed", exc_info=True)
        await asyncio.sleep(service.settings.schedules.poll_s)
