"""The owner's scheduled tasks: add, list, remove (SPEC §12). Plain functions; the Prefect
calls come in as a `Sync` built by `flows/owner_task.py` (nothing here imports prefect).

Adding writes the row first (the source of truth), then the Prefect schedule; a Prefect that
does not answer leaves the row, and `deployments.serve` puts the schedule in at its next
start (`wanted_schedules`). Removing deactivates the row, then drops the schedule.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.engine import Engine

from metnos.features.schedules import cadence, store
from metnos.features.schedules.models import ScheduledTask
from metnos.ground.db.engine import in_session
from metnos.ground.db.engine import session as db_session
from metnos.ground.errors import MetnosError
from metnos.ground.settings import Settings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Sync:
    """How tasks reach Prefect (`flows.owner_task.sync()` builds the real one)."""

    add: Callable[[ScheduledTask], Awaitable[None]]
    remove: Callable[[str], Awaitable[None]]
    next_runs: Callable[[], Awaitable[dict[str, datetime]]]  # task id → its next run


class ScheduleError(MetnosError, ValueError):
    key = "ERR_SCHEDULE_INVALID"


def slug(task_id: str) -> str:
    return f"task-{task_id}"


def checked(settings: Settings, when: str, text: str, lang: str) -> tuple[cadence.Cadence, str]:
    """The cadence and the tidied text of a new task. Raises ScheduleError."""
    what = " ".join(text.split())
    if not what or len(what) > settings.schedules.max_text:
        raise ScheduleError("ERR_SCHEDULE_TEXT_INVALID", limit=settings.schedules.max_text)
    try:
        return cadence.parse(when, lang), what
    except cadence.CadenceError as exc:
        raise ScheduleError("ERR_SCHEDULE_WHEN_UNKNOWN", when=" ".join(when.split())[:80]) \
            from exc


def new_task(engine: Engine, settings: Settings, *, when: str, text: str, user_id: str,
             lang: str, channel: str, address: str, action_id: str | None = None,
             task_id: str | None = None, spoken: str | None = None) -> ScheduledTask:
    """The row of a new task, written (blocking); `spoken`: how the owner said `when`, when
    `when` is the cron read from it already. Raises ScheduleError."""
    found, what = checked(settings, when, text, lang)
    with db_session(engine) as db:
        if len(store.active(db, user_id)) >= settings.schedules.max_tasks:
            raise ScheduleError("ERR_SCHEDULE_TOO_MANY", limit=settings.schedules.max_tasks)
        task = ScheduledTask(user_id=user_id, cron=found.cron, timezone=settings.timezone,
                             when_text=spoken or found.spoken, text=what, channel=channel,
                             address=address, lang=lang, action_id=action_id)
        if task_id:
            task.id = task_id
        return store.add(db, task)


async def publish(sync: Sync, task: ScheduledTask) -> bool:
    """The task's Prefect schedule; False when Prefect did not take it (the next start of the
    runner does)."""
    try:
        await sync.add(task)
    except Exception as exc:  # Prefect down, deployment not served yet: the row stays
        log.warning("schedule.publish_failed id=%s: %s", task.id, type(exc).__name__)
        return False
    return True


async def remove(engine: Engine, sync: Sync, task_id: str, user_id: str | None
                 ) -> ScheduledTask:
    """Deactivate the task and drop its schedule; `user_id` None: whoever owns it (the
    owner removes any task of the household). Raises ScheduleError ERR_SCHEDULE_NOT_FOUND."""
    task = await asyncio.to_thread(in_session, engine, store.get, task_id)
    if task is None or (user_id is not None and task.user_id != user_id) or \
            not await asyncio.to_thread(in_session, engine, store.deactivate, task_id):
        raise ScheduleError("ERR_SCHEDULE_NOT_FOUND", task_id=task_id[:40])
    try:
        await sync.remove(task_id)
    except Exception as exc:  # the next start of the runner drops it (`stale_slugs`)
        log.warning("schedule.unpublish_failed id=%s: %s", task_id, type(exc).__name__)
    return task


async def listing(engine: Engine, sync: Sync | None, user_id: str | None
                  ) -> list[dict[str, Any]]:
    """The user's active tasks (`user_id` None: everybody's), each with its next run as
    Prefect has it (else from the cron, marked `in_prefect: false`)."""
    tasks = await asyncio.to_thread(in_session, engine, store.active, user_id)
    runs: dict[str, datetime] = {}
    if sync is not None:
        try:
            runs = await sync.next_runs()
        except Exception as exc:  # the list still shows what the database holds
            log.warning("schedule.next_runs_failed: %s", type(exc).__name__)
    now = datetime.now(UTC)
    out = []
    for task in tasks:
        nxt = runs.get(task.id) or cadence.next_times(task.cron, task.timezone, now)[0]
        out.append(public(task) | {"next_run": nxt.isoformat(timespec="minutes"),
                                   "in_prefect": task.id in runs})
    return out


def public(task: ScheduledTask) -> dict[str, Any]:
    return {"id": task.id, "user_id": task.user_id, "when": task.when_text, "cron": task.cron,
            "timezone": task.timezone, "text": task.text, "channel": task.channel,
            "lang": task.lang, "active": task.active,
            "created_at": task.created_at.isoformat(timespec="seconds")}


def wanted_schedules(engine: Engine) -> list[ScheduledTask]:
    """What the served deployment's schedules must be (blocking): every active task."""
    return in_session(engine, store.active)


def stale_slugs(existing: list[str | None], wanted: list[ScheduledTask]) -> list[str | None]:
    """The deployment's schedules no active task accounts for (removed while Prefect was
    away, or without a slug): dropped before the runner applies the deployment."""
    keep = {slug(task.id) for task in wanted}
    return [s for s in existing if s not in keep]
