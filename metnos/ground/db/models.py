"""Metnos's own tables (SQLModel) and the few queries the gateway and the turns need.

The helpers take an open `Session` and commit their own change, so each one is a unit the
caller can rely on (a turn is on disk before anything runs: nothing is lost on a crash).
All datetimes are timezone-aware UTC.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, CheckConstraint, Column, DateTime, UniqueConstraint, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlmodel import Field, Session, SQLModel, col, select

from metnos.ground.errors import MetnosError

TURN_STATUSES = ("running", "completed", "awaiting_approval", "failed")
_FINAL_STATUSES = ("completed", "failed")


class TurnNotFound(MetnosError, LookupError):
    key = "ERR_TURN_NOT_FOUND"


def utcnow() -> datetime:
    return datetime.now(UTC)


def new_id() -> str:
    return str(uuid.uuid4())


def _stamp(**kwargs: Any) -> Any:
    """A timezone-aware timestamp column."""
    return Field(sa_type=DateTime(timezone=True), **kwargs)


class ChatSession(SQLModel, table=True):
    """A conversation of one user on one channel; its language and autonomy are sticky.

    `interaction_language` is set when the session is created (from the client's UI locale)
    and never rewritten by a later request (SPEC §9.6). It is NULL only on sessions stored
    before it existed; `get_or_create_session` pins those once.
    """

    __tablename__ = "chat_session"

    id: str = Field(default_factory=new_id, primary_key=True)
    user_id: str = Field(index=True)
    channel: str
    interaction_language: str | None = Field(default=None, nullable=True)
    autonomy: str = "Supervised"
    # the owner's "ask for everything": every change in this session asks, even one that
    # could be undone (issue 27); NULL on a session stored before it existed: off
    ask_all: bool | None = Field(default=False, nullable=True)
    created_at: datetime = _stamp(default_factory=utcnow)
    updated_at: datetime = _stamp(default_factory=utcnow)
    title: str | None = Field(default=None, nullable=True)  # its first message, shortened
    # the running summary of the messages up to `summary_upto` (a ChatMessage id), folded
    # when the history no longer fits the budget of [agent] history_tokens
    summary: str | None = Field(default=None, nullable=True)
    summary_upto: int | None = Field(default=None, nullable=True)
    # the untrusted sources (executor names) whose results the summary folded: data, never orders
    summary_sources: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=True))


class Turn(SQLModel, table=True):
    """One user message and what Metnos made of it."""

    __tablename__ = "turn"
    __table_args__ = (
        CheckConstraint(f"status IN {TURN_STATUSES!r}", name="turn_status_valid"),
    )

    id: str = Field(default_factory=new_id, primary_key=True)
    session_id: str = Field(foreign_key="chat_session.id", index=True)
    channel: str
    sender: str
    text: str
    lang: str
    status: str = "running"
    reply: str | None = None
    error_key: str | None = None
    flow_run_id: str | None = None
    created_at: datetime = _stamp(default_factory=utcnow)
    finished_at: datetime | None = _stamp(default=None, nullable=True)
    timings: dict[str, float] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    # what ran, beside the reply: one item per step (executor, status, i18n text, undo id...)
    activity: list[dict[str, Any]] = Field(default_factory=list,
                                           sa_column=Column(JSON, nullable=True))
    stop_reason: str | None = None  # why the agent loop ended (an i18n key), when a budget did


class TurnStep(SQLModel, table=True):
    """One executor call inside a turn: what the policy decided and how it went."""

    __tablename__ = "turn_step"
    __table_args__ = (UniqueConstraint("turn_id", "seq", name="turn_step_seq_unique"),)

    id: str = Field(default_factory=new_id, primary_key=True)
    turn_id: str = Field(foreign_key="turn.id", index=True)
    seq: int
    executor: str
    args_digest: str
    decision: str
    outcome: str | None = None
    error_key: str | None = None
    audit_seq: int | None = None
    created_at: datetime = _stamp(default_factory=utcnow)
    # the step trace (hand-offs, SPEC §2 step 4): the model call that asked for it, the
    # earlier steps whose results the model had seen then, the tool call id, the action id
    think: int = 0
    seen: list[int] = Field(default_factory=list, sa_column=Column(JSON, nullable=True))
    call_id: str = ""
    action_id: str | None = None
    started_at: datetime | None = _stamp(default=None, nullable=True)
    finished_at: datetime | None = _stamp(default=None, nullable=True)
    # the whole (redacted) result; the model was sent at most [agent] max_tool_result_chars
    result: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))


class ChatMessage(SQLModel, table=True):
    """One message of a conversation as the model sees it (SPEC §2 step 5): the user's
    text, the assistant's text and tool calls, a tool result (capped, wrapped as data).
    Ordered by `id`, which grows across all sessions."""

    __tablename__ = "chat_message"

    id: int | None = Field(default=None, primary_key=True)
    session_id: str = Field(foreign_key="chat_session.id", index=True)
    turn_id: str | None = Field(default=None, foreign_key="turn.id", index=True)
    role: str  # "user" | "assistant" | "tool"
    content: str | None = None
    # the assistant's calls: [{"id", "name", "arguments"}] (arguments as the JSON text sent)
    tool_calls: list[dict[str, Any]] = Field(default_factory=list,
                                             sa_column=Column(JSON, nullable=True))
    tool_call_id: str | None = None
    name: str | None = None  # the executor of a tool message
    full_chars: int = 0  # a tool result's length before the cap
    created_at: datetime = _stamp(default_factory=utcnow)


class BeforeManifest(SQLModel, table=True):
    """The signed record of the state before a mutating action (files under state/before/<id>/)."""

    __tablename__ = "before_manifest"

    id: str = Field(primary_key=True)  # the action id
    turn_id: str | None = Field(default=None, foreign_key="turn.id", index=True)
    executor: str
    created_at: datetime = _stamp(default_factory=utcnow)
    manifest: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    signature: str


# -- helpers --------------------------------------------------------------------------------
@dataclass(frozen=True)
class OpenedSession:
    """A session as a turn found it: `created` now, or a legacy one whose language was
    `pinned` by this call (and by no other)."""

    chat: ChatSession
    created: bool = False
    pinned: bool = False


def open_session(db: Session, session_id: str | None, *, user_id: str, channel: str,
                 lang: str, legacy_lang: str | None = None,
                 autonomy: str = "Supervised") -> OpenedSession:
    """The user's session `session_id`, or a new one in `lang`.

    An unknown id is created as given (a channel may use stable ids), by an upsert: two
    requests creating the same new id at once share one session, the one that inserted it
    says `created`. An id that belongs to another user is never reused: that caller gets a
    new session with a fresh id. A found session keeps its `interaction_language` whatever
    `lang` says; a legacy one without it gets `legacy_lang` (else `lang`) pinned, once even
    under concurrent turns.
    """
    fresh = ChatSession(user_id=user_id, channel=channel, interaction_language=lang,
                        autonomy=autonomy)
    if session_id:
        found = db.get(ChatSession, session_id)
        if found is None:
            fresh.id = session_id
            inserted = _insert_if_absent(db, fresh)
            found = db.get(ChatSession, session_id, populate_existing=True)
            if inserted and found is not None:
                return OpenedSession(found, created=True)
            fresh = ChatSession(user_id=user_id, channel=channel, interaction_language=lang,
                                autonomy=autonomy)  # another user's id after all: a fresh one
        if found is not None and found.user_id == user_id:
            return _reopen(db, found, legacy_lang or lang)
    db.add(fresh)
    db.commit()
    return OpenedSession(fresh, created=True)


def _insert_if_absent(db: Session, chat: ChatSession) -> bool:
    """INSERT ... ON CONFLICT (id) DO NOTHING; True when this call inserted the row."""
    stmt = (pg_insert(ChatSession).values(**chat.model_dump())
            .on_conflict_do_nothing(index_elements=["id"])
            .returning(col(ChatSession.id)))
    inserted = db.exec(stmt).first() is not None
    db.commit()
    return inserted


def _reopen(db: Session, found: ChatSession, pin_lang: str) -> OpenedSession:
    pinned = False
    if found.interaction_language is None:
        pinned = pin_language(db, found.id, pin_lang)
        db.refresh(found)
    found.updated_at = utcnow()
    db.add(found)
    db.commit()
    return OpenedSession(found, pinned=pinned)


def get_or_create_session(db: Session, session_id: str | None, *, user_id: str, channel: str,
                          lang: str, legacy_lang: str | None = None,
                          autonomy: str = "Supervised") -> ChatSession:
    """`open_session(...).chat`."""
    return open_session(db, session_id, user_id=user_id, channel=channel, lang=lang,
                        legacy_lang=legacy_lang, autonomy=autonomy).chat


def pin_language(db: Session, session_id: str, lang: str) -> bool:
    """Give a legacy session (language NULL) `lang`; True when this call set it. The
    conditional UPDATE makes it happen once, whoever else tries at the same moment."""
    query = (update(ChatSession)
             .where(col(ChatSession.id) == session_id,
                    col(ChatSession.interaction_language).is_(None))
             .values(interaction_language=lang))
    result = db.exec(query)
    db.commit()
    return result.rowcount == 1


def record_turn_start(db: Session, *, session_id: str, channel: str, sender: str, text: str,
                      lang: str, flow_run_id: str | None = None,
                      turn_id: str | None = None) -> Turn:
    """Store a new `running` turn (and touch its session)."""
    turn = Turn(session_id=session_id, channel=channel, sender=sender, text=text, lang=lang,
                flow_run_id=flow_run_id)
    if turn_id:
        turn.id = turn_id
    chat = db.get(ChatSession, session_id)
    if chat is not None:
        chat.updated_at = turn.created_at
        db.add(chat)
    db.add(turn)
    db.commit()
    return turn


def finish_turn(db: Session, turn_id: str, *, status: str, reply: str | None = None,
                error_key: str | None = None, timings: dict[str, float] | None = None,
                flow_run_id: str | None = None) -> Turn:
    """Set a turn's outcome; `completed`/`failed` also stamp `finished_at`.

    `awaiting_approval` (and `running` again, on resume) leave it open. `timings` are merged
    into those already stored.
    """
    if status not in TURN_STATUSES:
        raise ValueError(f"unknown turn status {status!r}; one of {TURN_STATUSES}")
    turn = db.get(Turn, turn_id)
    if turn is None:
        raise TurnNotFound(turn_id=turn_id)
    turn.status = status
    turn.reply = reply if reply is not None else turn.reply
    turn.error_key = error_key
    turn.flow_run_id = flow_run_id or turn.flow_run_id
    turn.timings = {**(turn.timings or {}), **(timings or {})}  # a new dict: JSON is not tracked
    turn.finished_at = utcnow() if status in _FINAL_STATUSES else None
    db.add(turn)
    db.commit()
    return turn


def get_turn(db: Session, turn_id: str) -> Turn | None:
    return db.get(Turn, turn_id)


def record_step(db: Session, *, turn_id: str, seq: int, executor: str, args_digest: str,
                decision: str, outcome: str | None = None, error_key: str | None = None,
                audit_seq: int | None = None) -> TurnStep:
    step = TurnStep(turn_id=turn_id, seq=seq, executor=executor, args_digest=args_digest,
                    decision=decision, outcome=outcome, error_key=error_key, audit_seq=audit_seq)
    db.add(step)
    db.commit()
    return step


def turn_steps(db: Session, turn_id: str) -> list[TurnStep]:
    """The steps of a turn in order."""
    query = select(TurnStep).where(TurnStep.turn_id == turn_id).order_by(TurnStep.seq)  # type: ignore[arg-type]
    return list(db.exec(query))


def record_before_manifest(db: Session, *, action_id: str, turn_id: str | None, executor: str,
                           manifest: dict[str, Any], signature: str) -> BeforeManifest:
    record = BeforeManifest(id=action_id, turn_id=turn_id, executor=executor,
                            manifest=manifest, signature=signature)
    db.add(record)
    db.commit()
    return record
