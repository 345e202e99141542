"""`/api/sessions`: the caller's conversations, their messages, their autonomy level (SPEC §4).

`GET /api/sessions` lists the caller's own sessions, most recently active first
(`offset`/`limit`); `GET /api/sessions/{id}/messages` gives a session's messages as the model
saw them (the `chat_message` rows, oldest first; `before` a message id and `limit` page back
in time), each turn's activity items on its last assistant message, and the running summary.
Another user's session answers 404, like an unknown id. The web chat shows a conversation
again after a reload, and past conversations, from these two.

Autonomy is per session: `ReadOnly`, `Supervised` (the default of new sessions, from
`policy.autonomy`) or `Full`, and so is "ask for everything" (`ask_all`: every change asks,
even an ordinary reversible one that `Supervised` would run with Undo). Only the session's
own user changes them, and each change is audited. A member's session never decides for
the owner's things: those wait for the owner whatever it says (`metnos.mechanisms.policy.approver`).
Forbidden paths, the Laws and the sandbox apply at every level.

`interaction_language` is the session's persisted language (SPEC §9.6): read-only here, set
when the session was created and never rewritten; null only on a legacy session no turn has
resumed yet (the first one pins the workspace language). `ui_locale` is this request's
locale (Accept-Language, else METNOS_LANG), in which its error messages are written.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import Engine, func, or_
from sqlmodel import Session, col, select

from metnos.faces.gateway.deps import PersonDep, ServiceDep, get_service
from metnos.faces.gateway.schemas import ErrorPublic
from metnos.features.attachments.store import as_sent
from metnos.ground import i18n
from metnos.ground.db.engine import session as db_session
from metnos.ground.db.models import ChatMessage, ChatSession, Turn, utcnow
from metnos.ground.settings import Autonomy
from metnos.mechanisms.undo import is_undone
from metnos.turns import history
from metnos.turns.language import ui_locale
from metnos.turns.runtime import Runtime

router = APIRouter(prefix="/api/sessions", tags=["sessions"])


def request_locale(request: Request) -> str:
    service = get_service(request)
    return ui_locale(None, request.headers.get("accept-language"), service.settings)


LocaleDep = Annotated[str, Depends(request_locale)]
MAX_SESSIONS, MAX_OFFSET = 100, 1_000_000
MAX_MESSAGES, MAX_MESSAGE_ID = 200, 2**53
_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorPublic} for code in (401, 404, 422)}


class SessionPublic(BaseModel):
    session_id: str
    channel: str
    interaction_language: str | None
    autonomy: str
    ask_all: bool = Field(False, description="Every change asks, even one that can be undone.")
    ui_locale: str | None = None


class SessionSummary(BaseModel):
    session_id: str
    title: str | None = Field(description="Its title: its first message, shortened.")
    channel: str
    interaction_language: str | None
    created_at: datetime
    updated_at: datetime


class SessionList(BaseModel):
    sessions: list[SessionSummary]
    next_offset: int | None = Field(description="The next page's offset; null on the last.")


class MessagePublic(BaseModel):
    id: int = Field(description="Grows with time: the order of the messages.")
    role: str = Field(description="user, assistant or tool.")
    content: str | None
    name: str | None = Field(description="The executor, for a tool message.")
    turn_id: str | None
    created_at: datetime
    activity: list[dict[str, Any]] | None = Field(
        None, description="What ran in the turn, on the turn's last assistant message.")


class MessagesPublic(BaseModel):
    session_id: str
    summary: str | None = Field(description="The running summary of the older messages.")
    messages: list[MessagePublic]
    next_before: int | None = Field(
        description="Pass as `before` for the older messages; null when none is left.")


class SessionUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    autonomy: Autonomy | None = None
    ask_all: bool | None = Field(
        None, description="True: every change in this session asks first, even one that can "
                          "be undone; false: an ordinary reversible change runs with Undo.")


CHANNELS = r"^([a-z][a-z0-9_-]{0,31}(,[a-z][a-z0-9_-]{0,31}){0,19})?$"  # "web,telegram"


@router.get("", response_model=SessionList, responses=_ERRORS)
async def list_sessions(service: ServiceDep, person: PersonDep,
                        offset: int = Query(0, ge=0, le=MAX_OFFSET),
                        limit: int = Query(20, ge=1, le=MAX_SESSIONS),
                        channel: Annotated[str, Query(pattern=CHANNELS)] = "",
                        exclude_channel: Annotated[str, Query(pattern=CHANNELS)] = "",
                        spoken: bool = False) -> SessionList:
    """The caller's own sessions, the most recently active first; `next_offset` is null on
    the last page. `channel` (names separated by commas) keeps only those channels' sessions,
    `exclude_channel` leaves those out (the web chat lists the terminal's `api` sessions in a
    group of their own);
    `spoken=true` leaves out the sessions no message was ever said in."""
    return await asyncio.to_thread(_list_sessions, service.engine, person,
                                   offset=offset, limit=limit,
                                   channels=_names(channel), excluded=_names(exclude_channel),
                                   spoken=spoken)


def _names(listed: str) -> list[str]:
    return [name for name in listed.split(",") if name]


@router.get("/{session_id}/messages", response_model=MessagesPublic, responses=_ERRORS)
async def read_messages(session_id: str, service: ServiceDep, person: PersonDep,
                        lang: LocaleDep,
                        before: int | None = Query(None, ge=1, le=MAX_MESSAGE_ID),
                        limit: int = Query(50, ge=1, le=MAX_MESSAGES)
                        ) -> MessagesPublic:
    """The latest `limit` messages (older than message `before` when given), oldest first;
    `next_before` pages further back, null when nothing older is left."""
    def read() -> MessagesPublic:
        with db_session(service.engine) as db:
            chat = _own(service, db.get(ChatSession, session_id[:64]), person, session_id, lang)
            return _messages_page(db, service.engine, chat, before=before, limit=limit,
                                  state_dir=service.settings.state_dir)
    return await asyncio.to_thread(read)


@router.get("/{session_id}", response_model=SessionPublic, responses=_ERRORS)
async def read_session(session_id: str, service: ServiceDep, person: PersonDep,
                       lang: LocaleDep) -> SessionPublic:
    return await asyncio.to_thread(_read, service, session_id, person, lang)


@router.patch("/{session_id}", response_model=SessionPublic, responses=_ERRORS)
async def update_session(session_id: str, body: SessionUpdate, service: ServiceDep,
                         person: PersonDep, lang: LocaleDep) -> SessionPublic:
    def change() -> SessionPublic:
        with db_session(service.engine) as db:
            chat = _own(service, db.get(ChatSession, session_id[:64]), person, session_id, lang)
            changes: list[tuple[str, str]] = []
            if body.autonomy is not None:
                changes.append(("session.autonomy", f"{chat.autonomy}->{body.autonomy}"))
                chat.autonomy = body.autonomy
            if body.ask_all is not None:
                changes.append(("session.ask_all", f"{bool(chat.ask_all)}->{body.ask_all}"))
                chat.ask_all = body.ask_all
            chat.updated_at = utcnow()
            db.add(chat)
            db.commit()
        for action, reason in changes:
            service.audit.append(sender=person, channel="api", session_id=chat.id,
                                 action=action, decision="info", reason=reason, outcome="done")
        return _public(chat, lang)
    return await asyncio.to_thread(change)


def _read(service: Runtime, session_id: str, person: str, lang: str) -> SessionPublic:
    with db_session(service.engine) as db:
        chat = _own(service, db.get(ChatSession, session_id[:64]), person, session_id, lang)
        return _public(chat, lang)


def _own(service: Runtime, chat: ChatSession | None, person: str, session_id: str,
         lang: str) -> ChatSession:
    """`person`'s own conversation; another person's is not found, and the attempt is
    audited (Law 4: one person's things are not another's)."""
    if chat is not None and chat.user_id != person:
        service.audit.append(sender=person, channel="web", session_id=chat.id,
                             action="session.read", decision="deny",
                             reason="ERR_SESSION_NOT_FOUND", outcome="another person's session")
    if chat is None or chat.user_id != person:
        raise HTTPException(404, detail={"key": "ERR_SESSION_NOT_FOUND", "message": i18n.get(
            "ERR_SESSION_NOT_FOUND", lang, session_id=session_id[:64])})
    return chat


def _public(chat: ChatSession, locale: str) -> SessionPublic:
    return SessionPublic(session_id=chat.id, channel=chat.channel,
                         interaction_language=chat.interaction_language, autonomy=chat.autonomy,
                         ask_all=bool(chat.ask_all), ui_locale=locale)


def _list_sessions(engine: Engine, person: str, *, offset: int, limit: int,
                   channels: Sequence[str] = (), excluded: Sequence[str] = (),
                   spoken: bool = False) -> SessionList:
    first_text = (select(Turn.text).where(col(Turn.session_id) == col(ChatSession.id))
                  .order_by(col(Turn.created_at)).limit(1).scalar_subquery())
    query = select(ChatSession, first_text).where(col(ChatSession.user_id) == person)
    if channels:
        query = query.where(col(ChatSession.channel).in_(list(channels)))
    if excluded:
        query = query.where(col(ChatSession.channel).not_in(list(excluded)))
    if spoken:  # a turn or a stored message: something was said in it
        query = query.where(or_(
            select(Turn.id).where(col(Turn.session_id) == col(ChatSession.id)).exists(),
            select(ChatMessage.id).where(
                col(ChatMessage.session_id) == col(ChatSession.id)).exists()))
    query = (query.order_by(col(ChatSession.updated_at).desc(), col(ChatSession.id))
             .offset(offset).limit(limit + 1))
    with db_session(engine) as db:
        rows = list(db.exec(query).all())
    sessions = [SessionSummary(
        session_id=chat.id, title=chat.title or (history.title_of(text) if text else None),
        channel=chat.channel,
        interaction_language=chat.interaction_language, created_at=chat.created_at,
        updated_at=chat.updated_at) for chat, text in rows[:limit]]
    return SessionList(sessions=sessions,
                       next_offset=offset + limit if len(rows) > limit else None)


def _messages_page(db: Session, engine: Engine, chat: ChatSession, *, before: int | None,
                   limit: int, state_dir: Path) -> MessagesPublic:
    """The latest `limit` messages before `before`, oldest first, with each turn's activity
    on its last assistant message (found over the whole session, not only this page); a
    change already undone says so (`undone: true`), for the web chat's Undo buttons."""
    rows = history.session_messages(engine, chat.id, limit=limit + 1, before=before)
    more, rows = len(rows) > limit, rows[-limit:]
    turn_ids = {m.turn_id for m in rows if m.turn_id is not None}
    last_reply: dict[int, list[dict[str, Any]]] = {}
    if turn_ids:
        ends = db.exec(select(func.max(ChatMessage.id), Turn.activity)
                       .join(Turn, col(Turn.id) == col(ChatMessage.turn_id))
                       .where(col(ChatMessage.session_id) == chat.id,
                              col(ChatMessage.role) == "assistant",
                              col(ChatMessage.turn_id).in_(turn_ids))
                       .group_by(col(Turn.id))).all()
        last_reply = {end: _with_undone(activity, state_dir) for end, activity in ends
                      if end is not None}
    messages = [MessagePublic(id=m.id or 0, role=m.role, name=m.name,
                              content=as_sent(m.content) if m.role == "user" and m.content
                              else m.content,
                              turn_id=m.turn_id, created_at=m.created_at,
                              activity=last_reply.get(m.id or 0)) for m in rows]
    return MessagesPublic(session_id=chat.id, summary=chat.summary, messages=messages,
                          next_before=rows[0].id if more and rows else None)


def _with_undone(activity: Sequence[Any] | None, state_dir: Path) -> list[Any]:
    return [{**a, "undone": is_undone(state_dir, a.get("action_id"))}
            if isinstance(a, dict) and a.get("undo") else a for a in activity or []]
