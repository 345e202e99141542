"""Telling the owner about scheduled runs that did not happen as planned (SPEC §12): a run
missed while the instance was stopped, reported once at the next start of the runner, and a
run that failed after its retries. Each becomes one outbox notice on the preferred channel
(`metnos.features.notify.effect.destination`), and each flow run named in one is recorded
(`ScheduleNotice`), so a second start says nothing.

Missed runs are not silently skipped: of each deployment's (each task's) runs past their time
when the runner starts, the latest runs now, late, once; the earlier ones are skipped (the
caller cancels them in Prefect) and the notice says both. The notice speaks of the family's
tasks only, in each task's own chat and language: the instance's own jobs (`ager/check`,
`introvert/nightly`) are collapsed the same way without a word.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from babel.dates import format_datetime
from sqlalchemy.engine import Engine
from sqlmodel import Session

from metnos.features.notify.effect import Destination, destination
from metnos.features.pairing.service import OWNER_USER_ID
from metnos.features.reminders import outbox
from metnos.features.reminders.outbox import Outbox
from metnos.features.schedules import store
from metnos.features.schedules.models import ScheduleNotice
from metnos.ground import i18n
from metnos.ground.db.engine import in_session
from metnos.ground.db.engine import session as db_session
from metnos.ground.i18n.formatting import locale_for
from metnos.ground.settings import Settings

KIND = "schedule"  # the outbox rows' kind
FALLBACK = Destination("cli", "schedule-notices")  # no chat known: `metnos chat` shows it


@dataclass(frozen=True)
class MissedRun:
    flow_run_id: str
    deployment: str  # "flow/deployment"
    due_at: datetime  # aware
    task_id: str | None = None  # an owner's task (parameters of owner-task/scheduled)


@dataclass(frozen=True)
class Plan:
    run_late: list[MissedRun]  # one per deployment (per task): the latest
    skip: list[MissedRun]  # the earlier ones: the caller cancels them


def plan(runs: list[MissedRun], engine: Engine) -> Plan:
    """What to do with missed runs not reported yet: the latest of each runs late."""
    seen = in_session(engine, store.reported, [r.flow_run_id for r in runs], "missed")
    groups: dict[tuple[str, str | None], list[MissedRun]] = {}
    for run in sorted((r for r in runs if r.flow_run_id not in seen), key=lambda r: r.due_at):
        groups.setdefault((run.deployment, run.task_id), []).append(run)
    late = [group[-1] for group in groups.values()]
    skip = [run for group in groups.values() for run in group[:-1]]
    return Plan(late, skip)


def _name(db: Session, deployment: str, task_id: str | None, lang: str) -> str:
    task = store.get(db, task_id) if task_id else None
    if task is None:
        return deployment
    return i18n.get("MSG_SCHEDULE_TASK_NAME", lang, when=task.when_text, text=task.text[:80])


def _when(at: datetime, settings: Settings, lang: str) -> str:
    return format_datetime(at.astimezone(settings.tz), format="short", locale=locale_for(lang))


def report_missed(engine: Engine, settings: Settings, found: Plan,
                  now: datetime | None = None) -> list[Outbox]:
    """The notices of the missed runs of `found`: one per chat, naming the family's tasks
    of that chat (the instance's own jobs run late or are skipped without a word), each
    once; a run late by less than `missed_grace_s` with none skipped before it is no news.
    Every run of `found` is recorded, so no later start tells it again."""
    at = (now or datetime.now(UTC)).astimezone(UTC)
    before = at - timedelta(seconds=settings.schedules.missed_grace_s)
    chats: dict[Destination, tuple[str, list[str]]] = {}
    with db_session(engine) as db:
        for run in found.run_late:
            task = store.get(db, run.task_id) if run.task_id else None
            if task is None or run.deployment != settings.schedules.deployment:
                continue  # not a task of the family's: nobody asked for it
            earlier = sum(1 for s in found.skip if (s.deployment, s.task_id) ==
                          (run.deployment, run.task_id))
            if not earlier and run.due_at > before:
                continue  # on time, give or take a moment
            where = Destination(task.channel, task.address)
            lang, lines = chats.setdefault(where, (task.lang, []))
            key = "MSG_SCHEDULE_MISSED_LINE_SKIPPED" if earlier else "MSG_SCHEDULE_MISSED_LINE"
            lines.append(i18n.get(key, lang, name=_name(db, run.deployment, run.task_id, lang),
                                  when=_when(run.due_at, settings, lang), skipped=earlier))
        rows = [_send(db, where, i18n.get("MSG_SCHEDULE_MISSED", lang, lines="\n".join(lines)),
                      lang, [], at) for where, (lang, lines) in chats.items()]
        by_chat = {(row.channel, row.address): row.id for row in rows}
        records = []
        for run in [*found.run_late, *found.skip]:
            task = store.get(db, run.task_id) if run.task_id else None
            outbox_id = by_chat.get((task.channel, task.address)) if task is not None else None
            records.append(ScheduleNotice(flow_run_id=run.flow_run_id, kind="missed",
                                          deployment=run.deployment, due_at=run.due_at,
                                          outbox_id=outbox_id))
        store.record_reported(db, records)
    return rows


def report_failed(engine: Engine, settings: Settings, *, flow_run_id: str, deployment: str,
                  attempts: int, task_id: str | None = None,
                  due_at: datetime | None = None) -> Outbox | None:
    """The notice of a run that failed after its retries; None when told already."""
    with db_session(engine) as db:
        if store.reported(db, [flow_run_id], "failed"):
            return None
        lang = settings.lang
        where = destination(db, settings, OWNER_USER_ID, FALLBACK)
        task = store.get(db, task_id) if task_id else None
        if task is not None:
            where = Destination(task.channel, task.address)
        text = i18n.get("MSG_SCHEDULE_FAILED", lang, attempts=attempts,
                        name=_name(db, deployment, task_id, lang))
        return _send(db, where, text, lang, [ScheduleNotice(
            flow_run_id=flow_run_id, kind="failed", deployment=deployment, due_at=due_at)],
            None)


def _send(db: Session, where: Destination, text: str, lang: str,
          records: list[ScheduleNotice], now: datetime | None) -> Outbox:
    at = (now or datetime.now(UTC)).astimezone(UTC)
    row = outbox.add(db, Outbox(kind=KIND, user_id=OWNER_USER_ID, channel=where.channel,
                                address=where.address, text=text, lang=lang, due_at=at))
    for record in records:
        record.outbox_id = row.id
    store.record_reported(db, records)
    return row


def summary(found: Plan) -> dict[str, Any]:
    return {"late": len(found.run_late), "skipped": len(found.skip)}
