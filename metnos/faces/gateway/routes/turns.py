"""`/api/turns`: send a message, read a turn.

Two languages travel with a turn and are never mixed (SPEC §9.6): `interaction_language`,
the session's persisted language that the reply is written in (a new session takes it from
the client's UI locale; a resumed one keeps it whatever the request says), and `ui_locale`,
the locale of this request (`lang`, else Accept-Language, else METNOS_LANG), used for the
request's own chrome such as error messages.

`GET /api/turns/{id}/events` streams the turn's progress as server-sent events (`status`,
`step`, `approval`, `delta`, `reply`, `end`; `id:` is the event's `seq`, so a client resumes with
`Last-Event-ID`). Events come from the in-process bus (`TurnHandle.follow`); a turn no longer
in memory is told from the database: its status, its reply, `end`. A stream opened with a web
session's cookie ends when that session logs out.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from contextlib import AbstractContextManager
from typing import Any

from fastapi import APIRouter, Header, HTTPException, Query, Request
from fastapi.responses import StreamingResponse
from sqlmodel import Session

from metnos.faces.gateway.deps import PersonDep, ServiceDep, TurnsDep, gateway_state
from metnos.faces.gateway.drain import draining, refusal
from metnos.faces.gateway.schemas import ErrorPublic, StepPublic, TurnCreate, TurnPublic
from metnos.features.attachments.turn import start_turn
from metnos.ground import i18n
from metnos.ground.db import models
from metnos.ground.db.engine import session as db_session
from metnos.ground.errors import MetnosError
from metnos.mechanisms import approvals
from metnos.mechanisms.policy.approver import OWNER_USER_ID
from metnos.turns.events import TurnEvent
from metnos.turns.language import ui_locale
from metnos.turns.runtime import Runtime
from metnos.turns.service import Published, TurnContext

router = APIRouter(prefix="/api/turns", tags=["turns"])
log = logging.getLogger(__name__)

_REFUSED = {"ERR_MESSAGE_TOO_LONG": 413, "ERR_ATTACHMENT_NOT_FOUND": 404}
KEEP_ALIVE_S = 15.0  # an SSE comment this often keeps proxies and clients from timing out
_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorPublic} for code in (401, 404, 413, 422)}


class TurnLanguages(TurnPublic):
    interaction_language: str | None = None  # the session's: the reply's language
    ui_locale: str | None = None  # this request's: its error messages and chrome
    text: str | None = None  # the person's message (the web chat shows a pending turn's)


@router.post("", response_model=TurnLanguages, responses={
    **_ERRORS, 503: {"model": ErrorPublic, "description": "Metnos is stopping (Retry-After)."}})
async def create_turn(body: TurnCreate, request: Request, turns: TurnsDep,
                      person: PersonDep, wait: bool = Query(
                          True, description="Wait for the reply; false answers at once with "
                          "status `running` (then follow GET /api/turns/{id}/events).")
                      ) -> TurnLanguages:
    """Start a turn and answer with its reply as soon as it is composed. While Metnos is
    stopping: 503 with `Retry-After`, and no turn. Once the turn exists, the answer is
    that turn (failed, with its reply, if it failed), never an error."""
    service = turns.service
    accept = request.headers.get("accept-language")
    locale = ui_locale(body.lang, accept, service.settings)
    if draining(gateway_state(request)):  # stopping: no turn row, come back after the restart
        raise refusal(locale)
    try:
        ctx, _ = await start_turn(turns, body.text, body.attachments, session_id=body.session_id,
                               lang=locale, channel=_channel(request), sender=person,
                               ask_all=body.ask_all,
                               untrusted=[("forwarded", t) for t in body.forwarded])
    except MetnosError as exc:
        code = _REFUSED.get(exc.key, 400)
        raise HTTPException(code, detail={"key": exc.key, "message": i18n.message(exc,
            locale)}) from exc
    # the turn has its row: from here on the client gets that turn, never an error
    try:
        answered = await turns.reply(ctx.turn_id) if wait else None
        if answered is None and ctx.closed:  # failed as it opened: its record tells how
            return await _recorded(service, ctx, locale)
        return _answer(ctx, answered)
    except Exception as exc:  # e.g. building the answer failed
        log.exception("turn.answer_failed turn_id=%s", ctx.turn_id)
        if not ctx.closed:
            await service.fail_turn(ctx, exc)
        return await _recorded(service, ctx, locale)


def _answer(ctx: TurnContext, answered: Published | None) -> TurnLanguages:
    langs = {"interaction_language": ctx.lang, "ui_locale": ctx.ui_locale}
    if answered is None:
        return TurnLanguages(turn_id=ctx.turn_id, session_id=ctx.session_id, status="running",
                             reply=None, flow_run_id=ctx.flow_run_id,
                             timings_ms=dict(ctx.timings), **langs)
    return TurnLanguages(turn_id=ctx.turn_id, session_id=ctx.session_id,
                         status=answered.status, reply=answered.reply,
                         approvals=answered.approvals, flow_run_id=ctx.flow_run_id,
                         timings_ms=dict(ctx.timings), activity=answered.activity,
                         stop_reason=answered.stop_reason, **langs)


async def _recorded(service: Runtime, ctx: TurnContext, locale: str) -> TurnLanguages:
    """The turn as its row says; if even that cannot be read, the turn as failed here
    (its row is closed failed already, or the next start closes it)."""
    try:
        found = await asyncio.to_thread(_read_turn, service, ctx.turn_id, locale)
    except Exception:
        log.exception("turn.read_failed turn_id=%s", ctx.turn_id)
        found = None
    if found is not None:
        return found
    return TurnLanguages(turn_id=ctx.turn_id, session_id=ctx.session_id, status="failed",
                         reply=i18n.get("ERR_INTERNAL_UNEXPECTED", ctx.lang),
                         flow_run_id=ctx.flow_run_id, interaction_language=ctx.lang,
                         ui_locale=locale)


@router.get("/{turn_id}", response_model=TurnLanguages, responses=_ERRORS)
async def read_turn(turn_id: str, request: Request, service: ServiceDep,
                    person: PersonDep) -> TurnLanguages:
    locale = ui_locale(None, request.headers.get("accept-language"), service.settings)
    found = await asyncio.to_thread(_read_turn, service, turn_id, locale, person)
    if found is None:
        raise HTTPException(404, detail={"key": "ERR_TURN_NOT_FOUND", "message": i18n.get(
            "ERR_TURN_NOT_FOUND", locale, turn_id=turn_id[:64])})
    return found


def _read_turn(service: Runtime, turn_id: str, locale: str,
               person: str | None = None) -> TurnLanguages | None:
    """The turn and its approvals from the database (blocking: called in a worker thread);
    None when it does not exist or, `person` given, is another's turn and `person` is not
    the owner (audited: Law 4)."""
    with db_session(service.engine) as db:
        turn = models.get_turn(db, turn_id)
        if turn is None:
            return None
        # the owner reads any turn (they decide what members' turns wait for)
        if person not in (None, OWNER_USER_ID) and not _theirs(service, db, turn, person):
            return None
        waiting = [approvals.public(a) for a in approvals.approvals_of_turn(db, turn.id)]
        steps = [StepPublic.model_validate({**step.model_dump(), "seen": step.seen or []})
                 for step in models.turn_steps(db, turn.id)]
        return TurnLanguages(turn_id=turn.id, session_id=turn.session_id, status=turn.status,
                             reply=turn.reply, approvals=waiting, created_at=turn.created_at,
                             finished_at=turn.finished_at, flow_run_id=turn.flow_run_id,
                             timings_ms=turn.timings or {}, interaction_language=turn.lang,
                             ui_locale=locale, activity=turn.activity or [],
                             stop_reason=turn.stop_reason, steps=steps, text=turn.text)


@router.get("/{turn_id}/events", response_class=StreamingResponse, responses={
    **_ERRORS, 200: {"content": {"text/event-stream": {}}}})
async def turn_events(turn_id: str, request: Request, turns: TurnsDep, person: PersonDep,
                      last_event_id: str | None = Header(None)) -> StreamingResponse:
    """The turn's progress as server-sent events, until its `end`."""
    service = turns.service
    locale = ui_locale(None, request.headers.get("accept-language"), service.settings)
    resume = (last_event_id or "").strip()
    after = int(resume) if resume.isdigit() else 0
    stored = await asyncio.to_thread(_stored_events, service, turn_id, person)
    if stored is None:
        raise HTTPException(404, detail={"key": "ERR_TURN_NOT_FOUND", "message": i18n.get(
            "ERR_TURN_NOT_FOUND", locale, turn_id=turn_id[:64])})
    source = (turns.follow(turn_id, after) if service.events.known(turn_id)
              else _replay([e for e in stored if e.seq > after]))
    auth = getattr(request.state, "auth", None)  # set by the person dependency
    held = gateway_state(request).connections.hold(getattr(auth, "connection", None))
    return StreamingResponse(_sse(source, held), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


def _stored_events(service: Runtime, turn_id: str, person: str) -> list[TurnEvent] | None:
    """None for a turn that does not exist or is another user's; else what the database
    says of it as events (used when the turn's events are no longer in memory)."""
    with db_session(service.engine) as db:
        turn = models.get_turn(db, turn_id)
        if turn is None or not _theirs(service, db, turn, person):
            return None
        at = (turn.finished_at or turn.created_at).isoformat(timespec="milliseconds")
        found: list[tuple[Any, dict[str, Any]]] = [("status", {"status": turn.status})]
        found += [("approval", approvals.public(a))
                  for a in approvals.approvals_of_turn(db, turn.id) if a.status == "pending"]
        if turn.reply is not None and turn.status != "awaiting_approval":
            found.append(("reply", {"text": turn.reply, "status": turn.status}))
        found.append(("end", {"status": turn.status}))
    return [TurnEvent(turn_id, seq, kind, data, at)
            for seq, (kind, data) in enumerate(found, start=1)]


def _theirs(service: Runtime, db: Session, turn: models.Turn, person: str) -> bool:
    """The turn is of `person`'s own conversation; another's leaves an audit line."""
    chat = db.get(models.ChatSession, turn.session_id)
    if chat is not None and chat.user_id == person:
        return True
    service.audit.append(sender=person, channel="web", action="turn.read", decision="deny",
                         reason="ERR_TURN_NOT_FOUND", outcome="another person's turn",
                         turn_id=turn.id)
    return False


async def _replay(events: list[TurnEvent]) -> AsyncIterator[TurnEvent]:
    for event in events:
        yield event


async def _sse(events: AsyncIterator[TurnEvent],
               held: AbstractContextManager[asyncio.Event]) -> AsyncIterator[str]:
    """`id:`/`event:`/`data:` frames, with a keep-alive comment when the turn is quiet; the
    stream ends when its turn ends, or at once when its web session logs out (`held`)."""
    yield "retry: 2000\n\n"
    with held as ended:
        logout = asyncio.ensure_future(ended.wait())
        pending: asyncio.Task[TurnEvent] | None = None
        try:
            while True:
                pending = pending or asyncio.ensure_future(anext(events))
                done, _ = await asyncio.wait({pending, logout}, timeout=KEEP_ALIVE_S,
                                             return_when=asyncio.FIRST_COMPLETED)
                if logout in done:
                    return
                if not done:
                    yield ": keep-alive\n\n"
                    continue
                try:
                    event = pending.result()
                except StopAsyncIteration:
                    return
                pending = None
                data = json.dumps(event.to_json(), ensure_ascii=False)
                yield f"id: {event.seq}\nevent: {event.kind}\ndata: {data}\n\n"
        finally:  # the client left or logged out: stop waiting for the turn
            logout.cancel()
            if pending is not None:
                pending.cancel()


def _channel(request: Request) -> str:
    """`web` for the browser (a session cookie or a device), `api` for a
    bearer client: the audit log tells them apart."""
    return "api" if request.headers.get("authorization") else "web"
