"""`/api/schedules`: the owner's scheduled tasks (SPEC §12), what `metnos schedule` calls.

- `GET /api/schedules`: the owner's active tasks, each with its next run as Prefect has it;
  `?all=true`: every task of the household, a paired member's too (`user_id` says whose).
- `POST /api/schedules` `{"when", "text", "lang"?, "channel"?}`: a new task. `when` is a
  cron expression or the everyday form ("every Monday at 8", "ogni lunedì alle 8"); the
  reply goes to the preferred channel (`[notify] channel`) unless `channel` names one.
- `DELETE /api/schedules/{id}`: remove a task, whoever's it is (its Prefect schedule goes
  too).
Without a model, a task whose text the embedded planner could not run is refused when it is
added (`metnos.features.schedules.spoken.require_runnable`), with the forms it reads.

Owner only (bearer token or web session with our Origin, as every `/api/` route); every
change and every refusal leaves one audit line (`schedule.add`, `schedule.remove`).
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from fastapi import APIRouter, HTTPException, Request
from pydantic import BaseModel, Field
from sqlmodel import Session

from metnos.faces.gateway.deps import LangDep, OwnerDep, ServiceDep, gateway_state
from metnos.faces.gateway.schemas import error_responses
from metnos.features.notify.effect import Destination, destination, last_written
from metnos.features.schedules import owner, spoken
from metnos.features.schedules.notices import FALLBACK
from metnos.features.schedules.owner import ScheduleError, Sync
from metnos.ground import i18n
from metnos.ground.db.engine import in_session
from metnos.turns.runtime import Runtime

router = APIRouter(prefix="/api/schedules", tags=["schedules"])
_STATUS = {"ERR_SCHEDULE_NOT_FOUND": 404, "ERR_SCHEDULE_TOO_MANY": 409}


class ScheduleCreate(BaseModel):
    when: str = Field(min_length=1, max_length=200)
    text: str = Field(min_length=1, max_length=4000)
    lang: str | None = Field(None, max_length=16)
    channel: Literal["web", "telegram", "cli"] | None = None


def _sync(request: Request) -> Sync | None:
    found: Sync | None = gateway_state(request).edges.sync
    return found


def _where(db: Session, settings: Any, owner_id: str, channel: str | None) -> Destination:
    """Where the replies go: the chat on `channel` the owner last wrote from, else the
    preferred one (`[notify] channel`); with none known, what `metnos chat` shows."""
    if channel is None:
        return destination(db, settings, owner_id, FALLBACK)
    return last_written(db, owner_id, channel) or FALLBACK


def _channel(request: Request) -> str:
    return "api" if request.headers.get("authorization") else "web"


def _refused(service: Runtime, request: Request, owner_id: str, action: str,
             exc: ScheduleError, lang: str) -> HTTPException:
    service.audit.append(sender=owner_id, channel=_channel(request), action=action,
                         decision="deny", reason=exc.key, outcome="refused")
    return HTTPException(_STATUS.get(exc.key, 422), detail={"key": exc.key,
                                                            "message": i18n.message(exc, lang)})


@router.get("", responses=error_responses(401))
async def list_schedules(request: Request, service: ServiceDep, owner_id: OwnerDep,
                         all: bool = False) -> dict[str, Any]:
    """The owner's active tasks (`all`: everybody's), oldest first, each with `next_run`."""
    whose = None if all else owner_id
    return {"schedules": await owner.listing(service.engine, _sync(request), whose),
            "timezone": service.settings.timezone}


@router.post("", status_code=201, responses=error_responses(401, 409, 422))
async def add_schedule(body: ScheduleCreate, request: Request, service: ServiceDep,
                       owner_id: OwnerDep, lang: LangDep) -> dict[str, Any]:
    """A new task: in the database, then in Prefect (`in_prefect` says whether it is there
    already; if not, the runner's next start puts it in)."""
    task_lang = body.lang if body.lang in service.settings.active_languages else lang
    engine, settings = service.engine, service.settings
    found = await asyncio.to_thread(in_session, engine, _where, settings, owner_id, body.channel)
    try:
        if service.port is None:  # no model: what runs each time is the embedded planner's
            owner.checked(settings, body.when, body.text, task_lang)  # "when" is told first
            await asyncio.to_thread(spoken.require_runnable, body.text, task_lang,
                                    service.registry.tool_specs, settings.active_languages)
        task = await asyncio.to_thread(
            owner.new_task, engine, settings, when=body.when, text=body.text, user_id=owner_id,
            lang=task_lang, channel=found.channel, address=found.address)
    except ScheduleError as exc:
        raise _refused(service, request, owner_id, "schedule.add", exc, lang) from exc
    sync = _sync(request)
    published = sync is not None and await owner.publish(sync, task)
    await asyncio.to_thread(service.audit.append, sender=owner_id, channel=_channel(request),
                            action="schedule.add", action_id=task.id, decision="allow",
                            reason="ok", outcome="done",
                            args={"task_id": task.id, "cron": task.cron})
    return {"schedule": owner.public(task), "in_prefect": published}


@router.delete("/{task_id}", responses=error_responses(401, 404))
async def remove_schedule(task_id: str, request: Request, service: ServiceDep,
                          owner_id: OwnerDep, lang: LangDep) -> dict[str, Any]:
    sync = _sync(request) or Sync(add=_nothing, remove=_nothing, next_runs=_no_runs)
    try:
        task = await owner.remove(service.engine, sync, task_id, None)
    except ScheduleError as exc:
        raise _refused(service, request, owner_id, "schedule.remove", exc, lang) from exc
    await asyncio.to_thread(service.audit.append, sender=owner_id, channel=_channel(request),
                            action="schedule.remove", action_id=task.id, decision="allow",
                            reason="ok", outcome="done", args={"task_id": task.id})
    return {"removed": task.id}


async def _nothing(_: Any) -> None:
    return None


async def _no_runs() -> dict[str, Any]:
    return {}
