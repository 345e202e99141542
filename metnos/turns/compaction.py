"""Folding the earlier conversation into the running session summary (issue 11, point 7).

`summarise` asks the `fast` tier, with the `summary` prompt (`prompts/<lang>/summary.j2`), for
a new summary from the previous one and the exchanges that no longer fit the history budget,
oldest first, in rounds of at most one budget of tokens each. Tool results go in wrapped as
data; so does a previous summary that folded untrusted content. Each round is charged to the
day's LLM budget (`metnos.mechanisms.policy.limits`), persisted on the `ChatSession` (`summary`,
`summary_upto`, `summary_sources`) with a conditional update (a concurrent fold of the same
session wins once), and leaves one audit line (`session.summary`). A failed call, an empty
answer or a spent budget ends the rounds: the caller drops what was not folded.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine, update
from sqlmodel import col

from metnos.ground.db.engine import session as db_session
from metnos.ground.db.models import ChatSession
from metnos.ground.errors import LLMError
from metnos.ground.settings import Settings
from metnos.mechanisms import prompts
from metnos.mechanisms.llm import tokens
from metnos.mechanisms.policy import limits
from metnos.mechanisms.policy.decide import Decision
from metnos.mechanisms.policy.untrusted import wrap_untrusted
from metnos.turns.exchanges import Exchange, trim

if TYPE_CHECKING:
    from metnos.mechanisms.audit import AuditLog
    from metnos.mechanisms.llm.port import LLMPort, LLMReply

log = logging.getLogger(__name__)

__all__ = ["MAX_ROUNDS", "ROLE", "Folding", "Summary", "clip", "summarise"]

ROLE = "summary"
MAX_ROUNDS = 4
_TRANSCRIPT_CHARS = 4000  # one message's text in the summariser's material, head and tail
_WORDS_PER_TOKEN = 0.6


@dataclass(frozen=True)
class Summary:
    """The running summary of a session up to ChatMessage `upto`; `sources` are the untrusted
    executors whose results it folded."""

    text: str | None = None
    upto: int | None = None
    sources: tuple[str, ...] = ()


@dataclass(frozen=True)
class Folding:
    """What `summarise` reached: the summary, how many of the exchanges it folded and what
    its calls cost (USD)."""

    summary: Summary
    done: int
    cost_usd: float


@dataclass(frozen=True)
class _Session:
    id: str
    user_id: str
    channel: str
    lang: str


async def summarise(engine: Engine, settings: Settings, chat: ChatSession, previous: Summary,
                    exchanges: list[Exchange], *, port: LLMPort,
                    untrusted: Callable[[str], bool], audit: AuditLog | None,
                    turn_id: str | None, marker: Callable[[int], str]) -> Folding:
    """Fold `exchanges` (oldest first) into `previous`, round by round, until they are all
    folded, MAX_ROUNDS were made or a round failed."""
    who = _Session(chat.id, chat.user_id, chat.channel,
                   chat.interaction_language or settings.lang)
    budget = settings.agent.history_tokens
    summary, done, cost = previous, 0, 0.0
    for _ in range(MAX_ROUNDS):
        chunk = _chunk(exchanges[done:], budget)
        if not chunk:
            break
        folded, spent = await _round(engine, settings, who, summary, chunk, port=port,
                                     untrusted=untrusted, audit=audit, turn_id=turn_id,
                                     marker=marker)
        cost += spent
        if folded is None:
            break
        summary, done = folded, done + len(chunk)
    return Folding(summary, done, cost)


def _chunk(exchanges: list[Exchange], budget: int) -> list[Exchange]:
    """The oldest exchanges that fit one budget of tokens (at least one)."""
    chunk: list[Exchange] = []
    total = 0
    for exchange in exchanges:
        if chunk and total + exchange.tokens > budget:
            break
        chunk.append(exchange)
        total += exchange.tokens
    return chunk


async def _round(engine: Engine, settings: Settings, who: _Session, previous: Summary,
                 chunk: list[Exchange], *, port: LLMPort, untrusted: Callable[[str], bool],
                 audit: AuditLog | None, turn_id: str | None,
                 marker: Callable[[int], str]) -> tuple[Summary | None, float]:
    """One summary call: the new summary (None when it failed) and what it cost."""
    sources = set(previous.sources) | {n for e in chunk for n in e.tools if untrusted(n)}
    cap = max(1, settings.agent.history_tokens // 4)
    prompt = prompts.get(ROLE, who.lang, previous=_previous(previous),
                         messages=_material(chunk, marker), session_lang=who.lang,
                         max_words=int(cap * _WORDS_PER_TOKEN))
    model = port.resolve("fast") or ""
    slot = await asyncio.to_thread(_reserve, engine, settings)
    if isinstance(slot, Decision):
        await _audit(audit, who, turn_id, decision="deny", reason=slot.key, outcome="refused")
        return None, 0.0
    reply: LLMReply | None = None
    try:
        reply = await port.complete([{"role": "user", "content": prompt}], tier="fast")
    except LLMError as exc:
        log.warning("history.summary_failed session=%s key=%s", who.id, exc.key)
        await _audit(audit, who, turn_id, decision="error", reason=exc.key, outcome="failed")
        return None, 0.0
    finally:  # the real cost replaces the estimate; a failed call gives it back
        await asyncio.to_thread(_settle, engine, slot, who, turn_id, model, reply)
    text, cost = (reply.text or "").strip() or None, reply.cost_usd
    if text is None:
        await _audit(audit, who, turn_id, decision="error", reason="ERR_HISTORY_SUMMARY_EMPTY",
                     outcome="failed", cost_usd=cost)
        return None, cost
    summary = Summary(clip(text, cap, model), chunk[-1].upto, tuple(sorted(sources)))
    if await asyncio.to_thread(_persist, engine, who.id, previous, summary):
        await _audit(audit, who, turn_id, decision="info", reason="MSG_HISTORY_FOLDED",
                     outcome="done", cost_usd=cost)
    return summary, cost


def _previous(summary: Summary) -> str:
    if not summary.text:
        return ""
    return wrap_untrusted(summary.text, source="summary") if summary.sources else summary.text


def _material(chunk: list[Exchange], marker: Callable[[int], str]) -> list[dict[str, str]]:
    """The exchanges as the template lists them: role, executor name, text (tool results and
    any tool-call arguments as data)."""
    items: list[dict[str, str]] = []
    for exchange in chunk:
        for message in exchange.messages:
            text = trim(str(message.get("content") or ""), _TRANSCRIPT_CHARS, marker)
            name = str(message.get("name") or "")
            if message["role"] == "tool":
                text = wrap_untrusted(text, source=name or "tool")
            calls = [c["function"] for c in message.get("tool_calls") or []]
            items.append({"role": str(message["role"]), "name": name, "text": text,
                          "calls": "; ".join(f"{c['name']} {trim(str(c['arguments']), 200, marker)}"
                                             for c in calls)})
    return items


def clip(text: str, cap: int, model: str | None) -> str:
    """`text` within `cap` tokens: a summariser that writes too much is cut, never sent whole."""
    while tokens.count_text(text, model) > cap:
        text = text[: max(1, int(len(text) * 0.9))].rstrip() + "…"
    return text


def _persist(engine: Engine, session_id: str, previous: Summary, summary: Summary) -> bool:
    """Store `summary` if the session still has `previous` (else a concurrent turn folded)."""
    upto = col(ChatSession.summary_upto)
    same = upto.is_(None) if previous.upto is None else upto == previous.upto
    query = (update(ChatSession).where(col(ChatSession.id) == session_id, same)
             .values(summary=summary.text, summary_upto=summary.upto,
                     summary_sources=list(summary.sources)))
    with db_session(engine) as db:
        return bool(db.exec(query).rowcount == 1)


def _reserve(engine: Engine, settings: Settings) -> limits.Reservation | Decision:
    policy = settings.policy
    with db_session(engine) as db:
        return limits.reserve_llm(db, cap_usd_per_day=policy.max_llm_cost_per_day_usd,
                                  estimate_usd=policy.llm_call_reserve_usd)


def _settle(engine: Engine, slot: limits.Reservation, who: _Session, turn_id: str | None,
            model: str, reply: LLMReply | None) -> None:
    with db_session(engine) as db:
        if reply is None:
            limits.release(db, slot)
        else:
            limits.settle_llm(db, slot, turn_id=turn_id, user_id=who.user_id,
                              model=reply.model or model, cost_usd=reply.cost_usd)


async def _audit(audit: AuditLog | None, who: _Session, turn_id: str | None,
                 **fields: Any) -> None:
    if audit is not None:
        await asyncio.to_thread(audit.append, sender="metnos", channel=who.channel,
                                session_id=who.id, turn_id=turn_id, action="session.summary",
                                **fields)

