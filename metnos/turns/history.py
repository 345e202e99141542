"""Conversation memory (issue 11, point 7): what the model sees of a session's earlier turns.

- `record` stores a turn's messages (OpenAI format) as `ChatMessage` rows, in order, and
  titles the session from its first user message; `session_messages` reads them back for
  the web chat.
- `window` builds the history sent between the system prompt and the current user message:
  the running summary first (as data when it folded untrusted content), then whole earlier
  turns, oldest first, within `[agent] history_tokens` (counted offline,
  `metnos.mechanisms.llm.tokens`). A turn is never split: an assistant message with tool calls
  travels with all its results or not at all (`metnos.turns.exchanges`). Tool results older than the
  last two turns are trimmed in what is sent; the rows stay whole. What does not fit is folded into
  the summary by the `fast` tier (`metnos.turns.compaction`); with no model, or when folding
  fails, the oldest turns are dropped and the window says so (`note`, and a line in its first
  message), so the history never grows without bound.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine
from sqlmodel import col, select

from metnos.ground import i18n
from metnos.ground.db.engine import session as db_session
from metnos.ground.db.models import ChatMessage, ChatSession
from metnos.ground.settings import Settings
from metnos.mechanisms.llm import tokens
from metnos.mechanisms.policy.untrusted import wrap_untrusted
from metnos.turns.compaction import MAX_ROUNDS, Summary, clip, summarise
from metnos.turns.exchanges import Exchange, exchanges, load, trim_results

if TYPE_CHECKING:
    from metnos.mechanisms.audit import AuditLog
    from metnos.mechanisms.llm.port import LLMPort

__all__ = ["NOTE_DROPPED", "Window", "record", "session_messages", "title_of", "window"]

NOTE_DROPPED = "MSG_HISTORY_DROPPED"
TITLE_CHARS = 60
PER_NOTE = 8  # the separator a note adds to the first message
_SPACES = re.compile(r"\s+")


@dataclass
class Window:
    """The history to send: `messages` (OpenAI format), the untrusted `sources` among them
    (executors, and "summary" when the summary folded any), their `tokens`, how many messages
    this call `folded` into the summary (and the `cost_usd` of doing it), and `note`
    (NOTE_DROPPED) with the `dropped` count when the fallback left messages out."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    tokens: int = 0
    folded: int = 0
    note: str | None = None
    dropped: int = 0
    cost_usd: float = 0.0  # what the summary calls of this window cost (charged already)


# -- persisting ----------------------------------------------------------------------------
def record(engine: Engine, *, session_id: str, turn_id: str | None,
           messages: Sequence[dict[str, Any]]) -> list[int]:
    """Append `messages` (OpenAI format; a tool message may carry `full_chars`) to the
    session, in order; the session gets its title from the first user message when it has
    none. Returns the new rows' ids."""
    rows = [_row(session_id, turn_id, message) for message in messages]
    with db_session(engine) as db:
        for row in rows:  # one at a time: ids follow the order given
            db.add(row)
            db.flush()
        chat = db.get(ChatSession, session_id)
        first = next((r.content for r in rows if r.role == "user" and r.content), None)
        if chat is not None and not chat.title and first:
            chat.title = title_of(first)
            db.add(chat)
    return [int(row.id or 0) for row in rows]


def session_messages(engine: Engine, session_id: str, *, limit: int = 100,
                     before: int | None = None) -> list[ChatMessage]:
    """The session's last `limit` messages (with an id below `before` when given), oldest
    first: page back with `before` = the first id of the previous page."""
    query = select(ChatMessage).where(col(ChatMessage.session_id) == session_id)
    if before is not None:
        query = query.where(col(ChatMessage.id) < before)
    query = query.order_by(col(ChatMessage.id).desc()).limit(max(0, limit))
    with db_session(engine) as db:
        return list(reversed(db.exec(query).all()))


def title_of(text: str) -> str:
    """`text` on one line, cut at a word boundary to about TITLE_CHARS characters."""
    line = _SPACES.sub(" ", text).strip()
    if len(line) <= TITLE_CHARS:
        return line
    cut = line.rfind(" ", 0, TITLE_CHARS)
    return line[: cut if cut > TITLE_CHARS // 2 else TITLE_CHARS].rstrip(" ,.;:") + "…"


def _row(session_id: str, turn_id: str | None, message: dict[str, Any]) -> ChatMessage:
    calls = [_stored_call(call) for call in message.get("tool_calls") or []]
    return ChatMessage(session_id=session_id, turn_id=turn_id, role=str(message["role"]),
                       content=message.get("content"), tool_calls=calls,
                       tool_call_id=message.get("tool_call_id"), name=message.get("name"),
                       full_chars=int(message.get("full_chars") or 0))


def _stored_call(call: dict[str, Any]) -> dict[str, Any]:
    """{"id", "name", "arguments"} from an OpenAI tool call (or one already in that shape)."""
    function = call.get("function") or call
    arguments = function.get("arguments")
    return {"id": str(call.get("id") or ""), "name": str(function.get("name") or ""),
            "arguments": arguments if isinstance(arguments, str) else _json(arguments)}


def _json(value: Any) -> str:
    return json.dumps(value if value is not None else {}, ensure_ascii=False)


# -- the window ----------------------------------------------------------------------------
async def window(engine: Engine, settings: Settings, session_id: str, *,
                 port: LLMPort | None, untrusted: Callable[[str], bool],
                 audit: AuditLog | None = None, turn_id: str | None = None) -> Window:
    """The history of `session_id` to send with the current turn (`turn_id`, whose own rows
    are left out). Folds what does not fit with `port` (None: drop instead)."""
    budget = settings.agent.history_tokens
    cap = (MAX_ROUNDS + 1) * budget // tokens.PER_MESSAGE  # more could never be sent or folded
    chat, rows, skipped = await asyncio.to_thread(load, engine, session_id, turn_id, cap)
    if chat is None:
        return Window()
    lang = chat.interaction_language or settings.lang
    model = (port.resolve("fast") if port is not None else None) or settings.llm.model
    marker = _marker(lang)
    turns = exchanges(rows, marker, model)
    summary = Summary(clip(chat.summary, budget // 4, model) if chat.summary else None,
                      chat.summary_upto, tuple(chat.summary_sources or ()))
    head = _summary_messages(summary, lang)
    if tokens.count_messages(head, model) + sum(e.tokens for e in turns) <= budget:
        return _fallback(head, turns, summary, untrusted, model, budget=budget, lang=lang,
                         folded=0, skipped=skipped, marker=marker)  # all of it, or a note
    kept = _keep(turns, soft=budget // 2, hard=budget - budget // 4 - 64, marker=marker,
                 model=model)
    older = turns[: len(turns) - len(kept)]
    folded, cost = 0, 0.0
    if port is not None and older:
        folding = await summarise(engine, settings, chat, summary, older, port=port,
                                  untrusted=untrusted, audit=audit, turn_id=turn_id,
                                  marker=marker)
        summary, cost = folding.summary, folding.cost_usd
        folded = sum(len(e.ids) for e in older[: folding.done])
        older = older[folding.done:]
    head = _summary_messages(summary, lang)
    shown = _fallback(head, [*older, *kept], summary, untrusted, model, budget=budget,
                      lang=lang, folded=folded, skipped=skipped, marker=marker)
    shown.cost_usd = cost
    return shown


def _keep(exchanges: list[Exchange], *, soft: int, hard: int, marker: Callable[[int], str],
          model: str | None) -> list[Exchange]:
    """The newest exchanges within `soft` tokens (the newest alone within `hard`, its tool
    results trimmed if that is what it takes)."""
    kept: list[Exchange] = []
    total = 0
    for exchange in reversed(exchanges):
        if not kept and exchange.tokens > hard:
            trim_results(exchange, marker)
            exchange.tokens = tokens.count_messages(exchange.messages, model)
        if exchange.tokens + total > (soft if kept else hard):
            break
        kept.insert(0, exchange)
        total += exchange.tokens
    return kept


def _fallback(head: list[dict[str, Any]], exchanges: list[Exchange], summary: Summary,
              untrusted: Callable[[str], bool], model: str | None, *, budget: int, lang: str,
              folded: int, skipped: int, marker: Callable[[int], str]) -> Window:
    """`head` and `exchanges` when they fit; else without the oldest exchanges, and a note
    the model reads (`skipped`: older messages not even loaded)."""
    whole = _done(head, exchanges, summary, untrusted, model, folded=folded)
    if not skipped and whole.tokens <= budget:
        return whole
    room = budget - tokens.count_messages(head, model) - PER_NOTE
    room -= tokens.count_text(i18n.get(NOTE_DROPPED, lang, count=10**6), model)
    kept = _keep(exchanges, soft=room, hard=room, marker=marker, model=model)
    dropped = skipped + sum(len(e.ids) for e in exchanges[: len(exchanges) - len(kept)])
    result = _done(head, kept, summary, untrusted, model, folded=folded)
    if not dropped:  # the newest turn fits once its tool results are trimmed
        return result
    note = i18n.get(NOTE_DROPPED, lang, count=dropped)
    first = result.messages[0] if result.messages else None
    if first is not None and first["role"] == "user" and isinstance(first["content"], str):
        noted = {**first, "content": f"{note}\n\n{first['content']}"}
        result.messages[0] = noted
        result.tokens += (tokens.count_messages([noted], model)
                          - tokens.count_messages([first], model))
    else:
        result.messages.insert(0, {"role": "user", "content": note})
        result.tokens += tokens.count_messages(result.messages[:1], model)
    result.note, result.dropped = NOTE_DROPPED, dropped
    return result


def _done(head: list[dict[str, Any]], kept: list[Exchange], summary: Summary,
          untrusted: Callable[[str], bool], model: str | None, *, folded: int = 0) -> Window:
    messages = [*(dict(m) for m in head), *(dict(m) for e in kept for m in e.messages)]
    sources = list(dict.fromkeys(n for e in kept for n in e.tools if untrusted(n)))
    if head and summary.sources:
        sources.append("summary")
    count = tokens.count_messages(head, model) + sum(e.tokens for e in kept)  # additive
    return Window(messages, sources, count, folded)


def _summary_messages(summary: Summary, lang: str) -> list[dict[str, Any]]:
    """The summary as one user-role message (never system: it holds what others said)."""
    if not summary.text:
        return []
    label = i18n.get("MSG_HISTORY_SUMMARY_LABEL", lang)
    body = (wrap_untrusted(summary.text, source="summary") if summary.sources
            else summary.text)
    return [{"role": "user", "content": f"{label}\n\n{body}"}]


def _marker(lang: str) -> Callable[[int], str]:
    def marker(cut: int) -> str:
        return i18n.get("MSG_HISTORY_TRIMMED", lang, count=cut)

    return marker
