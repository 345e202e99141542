"""The stored messages of a session as whole turns, ready to send (issue 11, point 7).

`load` reads the rows after the session summary (the current turn's left out) as plain
columns; `exchanges` groups them into turns (a turn starts at a user message or a new turn id)
and makes each valid to send on its own: a tool call whose result is missing (a turn cut
short) loses the call and its partial results, a result without its call is left out, and
every tool result is an untrusted-data block. Tool results older than the last two turns are
trimmed (`trim_results`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine, func
from sqlalchemy import select as sa_select
from sqlmodel import col, select

from metnos.ground.db.engine import session as db_session
from metnos.ground.db.models import ChatMessage, ChatSession
from metnos.mechanisms.llm import tokens
from metnos.mechanisms.policy.untrusted import TAG, wrap_untrusted

__all__ = ["OLD_RESULT_CHARS", "RECENT_TURNS", "Exchange", "exchanges", "load", "trim",
           "trim_results", "wrapped"]

OLD_RESULT_CHARS = 500  # a tool result older than the last two turns, as sent
RECENT_TURNS = 2


@dataclass
class Exchange:
    """One earlier turn as it is sent: its messages (OpenAI format, valid on their own: no
    tool call without its result), the ChatMessage ids they came from, the executors whose
    results it holds, its token count and the id of its last row."""

    messages: list[dict[str, Any]]
    ids: list[int]
    tools: list[str] = field(default_factory=list)
    tokens: int = 0
    upto: int = 0  # the turn's last row (a row left out of `messages` included)


@dataclass(frozen=True)
class _Row:
    """The columns of a ChatMessage the window reads."""

    id: int
    turn_id: str | None
    role: str
    content: str | None
    tool_calls: list[dict[str, Any]] | None
    tool_call_id: str | None
    name: str | None


_FIELDS = ("id", "turn_id", "role", "content", "tool_calls", "tool_call_id", "name")


def trim(text: str, limit: int, marker: Callable[[int], str]) -> str:
    """`text` cut to about `limit` characters, head and tail kept, `marker(cut)` between."""
    if len(text) <= limit:
        return text
    head = limit * 3 // 5
    tail = limit - head
    return f"{text[:head]}\n{marker(len(text) - limit)}\n{text[-tail:]}"


def wrapped(text: str) -> bool:
    """True when `text` is already an untrusted-data block (as the loop stores tool results)."""
    return text.lstrip().startswith(f"<{TAG} ")


def load(engine: Engine, session_id: str, turn_id: str | None,
         cap: int) -> tuple[ChatSession | None, list[_Row], int]:
    """The session, its newest `cap` rows after the summary (the current turn's left out),
    oldest first, and how many older ones were not loaded."""
    with db_session(engine) as db:
        chat = db.get(ChatSession, session_id)
        if chat is None:
            return None, [], 0
        where = [col(ChatMessage.session_id) == session_id]
        if chat.summary_upto is not None:
            where.append(col(ChatMessage.id) > chat.summary_upto)
        if turn_id is not None:
            where.append(col(ChatMessage.turn_id).is_distinct_from(turn_id))
        query = (sa_select(*(col(getattr(ChatMessage, name)) for name in _FIELDS))
                 .where(*where).order_by(col(ChatMessage.id).desc()).limit(cap))
        # plain rows, not SQLModel objects: building those costs ~0.2 ms each
        rows = [_Row(*values) for values in reversed(db.connection().execute(query).all())]
        if len(rows) < cap:
            return chat, rows, 0
        total = db.exec(select(func.count()).select_from(ChatMessage).where(*where)).one()
        return chat, rows, int(total) - len(rows)


def exchanges(rows: list[_Row], marker: Callable[[int], str],
               model: str | None) -> list[Exchange]:
    """The rows as whole turns (a turn starts at a user message or a new turn id), each
    valid to send, tool results trimmed but in the last RECENT_TURNS."""
    groups: list[list[_Row]] = []
    for row in rows:
        if not groups or row.role == "user" or row.turn_id != groups[-1][-1].turn_id:
            groups.append([])
        groups[-1].append(row)
    found = [e for e in (_exchange(group) for group in groups) if e.messages]
    for exchange in found[:-RECENT_TURNS]:
        trim_results(exchange, marker)
    for exchange in found:
        exchange.tokens = tokens.count_messages(exchange.messages, model)
    return found


def _exchange(group: list[_Row]) -> Exchange:
    """One turn's rows as OpenAI messages; a tool call whose result is missing (a turn cut
    short) loses its call and its partial results, a result without its call is left out."""
    messages: list[dict[str, Any]] = []
    ids: list[int] = []
    tools: list[str] = []
    i = 0
    while i < len(group):
        row = group[i]
        i += 1
        if row.role == "tool":
            continue  # orphaned: its call is not right before it
        calls = (row.tool_calls or []) if row.role == "assistant" else []
        results: list[_Row] = []
        while calls and i < len(group) and group[i].role == "tool":
            results.append(group[i])
            i += 1
        wanted = {str(call.get("id")) for call in calls}
        complete = wanted == {str(r.tool_call_id) for r in results} and len(results) == len(wanted)
        message = _message(row, calls if complete else [])
        if message is not None:
            messages.append(message)
            ids.append(row.id)
        if calls and complete:
            for result in results:
                messages.append(_tool_message(result))
                ids.append(result.id)
                tools.append(str(result.name or ""))
    return Exchange(messages, ids, tools, upto=group[-1].id)


def _message(row: _Row, calls: list[dict[str, Any]]) -> dict[str, Any] | None:
    if not calls and not row.content:
        return None
    message: dict[str, Any] = {"role": row.role, "content": row.content or ""}
    if calls:
        message["content"] = row.content or None
        message["tool_calls"] = [
            {"id": str(c.get("id")), "type": "function",
             "function": {"name": str(c.get("name")), "arguments": str(c.get("arguments"))}}
            for c in calls]
    return message


def _tool_message(row: _Row) -> dict[str, Any]:
    name = str(row.name or "")
    content = row.content or ""
    if not wrapped(content):  # every tool result is data (the loop stores them wrapped)
        content = wrap_untrusted(content, source=name or "tool")
    return {"role": "tool", "tool_call_id": str(row.tool_call_id), "name": name,
            "content": content}


def trim_results(exchange: Exchange, marker: Callable[[int], str]) -> None:
    for message in exchange.messages:
        if message["role"] == "tool":
            message["content"] = trim(message["content"], OLD_RESULT_CHARS, marker)
