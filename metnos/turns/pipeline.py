"""A turn end to end (SPEC §2): with a model, the agent loop; without one, the embedded
planner, one step, as before the loop existed. Both keep the session's history.

`run_pipeline` is the composition; `flows/turn.py` runs the same composition with each
executor run as a Prefect task and the approval wait as a Prefect pause, so the logic lives
here once and the flow stays thin. The model calls (`think`) are plain code in either case:
the run's card shows them step by step (`runview.card`). The bench and the plain path pass
nothing and get the same pipeline as plain function calls (an approval then waits on the
database).

`head_start` is the flow's head start: it opens the conversation and starts the first model
call while Prefect is still creating the flow run; the pipeline then takes the conversation
and that first call from it (`head=`).

Before either, the Tutor's pre-check (SPEC §10, `service.hooks.precheck`, set by the runtime) may
answer a question about Metnos itself from the signed docs catalog; it runs first in the
head start, so a question the Tutor answers never costs a model call of the loop.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from dataclasses import dataclass, replace
from functools import partial

from metnos.ground import i18n
from metnos.ground.errors import LLMError
from metnos.ground.system_lang import Lang
from metnos.mechanisms import identity
from metnos.mechanisms.llm.embedded import plan_embedded
from metnos.mechanisms.llm.port import LLMReply
from metnos.mechanisms.workspace import REFUSED_ACTION, prompt_context
from metnos.turns import degraded, gate, history, language, steps, undo_said
from metnos.turns.budget import Budget
from metnos.turns.context import TurnContext
from metnos.turns.conversation import Conversation
from metnos.turns.loop import AgentLoop, ModelBudgetSpent, ThinkFn
from metnos.turns.reply import StepOutcome, compose
from metnos.turns.service import TurnService
from metnos.turns.thinking import think as plain_think


@dataclass
class HeadStart:
    """A turn's conversation, opened, and its first model call under way; or the Tutor's
    answer (`tutored`), and then neither."""

    convo: Conversation | None = None
    window: history.Window | None = None
    first: asyncio.Task[LLMReply] | None = None
    tutored: str | None = None


async def head_start(service: TurnService, ctx: TurnContext) -> HeadStart | None:
    """The Tutor's pre-check, then (no answer from it) open the conversation and start the
    first model call (None without a model)."""
    tutored = await _precheck(service, ctx)
    if tutored is not None:
        return HeadStart(tutored=tutored)
    if service.port is None or not service.model_health.allows():
        return None  # no model, or its breaker is open: the embedded planner serves
    convo, window = await _open(service, ctx)
    return HeadStart(convo, window,
                     asyncio.create_task(plain_think(service, ctx, convo, True, 1)))


async def _precheck(service: TurnService, ctx: TurnContext) -> str | None:
    """The Tutor's answer, or None: the turn goes on to the loop or the embedded planner.
    The Tutor is optional help: any failure of it steps aside (the pre-check audits why).
    It runs first for every message, so a plain yes to the Tutor's pending confirmation of
    a mixed request is settled before any plan: the confirmed clause, verbatim, becomes
    `ctx.text`, and the loop or the planner runs it as any turn, with every check."""
    if service.hooks.precheck is None:
        return None
    spoken = undo_said.said(ctx.text, [ctx.lang, *service.settings.active_languages])
    if spoken is not None and spoken[0] == "undo":  # "annulla", "undo that": never a question
        return None  # about Metnos ("conferma" goes first to the Tutor's pending yes, if any)
    ctx.confirm_said = spoken is not None
    started = time.perf_counter()
    answer = await service.hooks.precheck(ctx)
    ctx.mark("tutor", started)
    return answer


async def discard(head: asyncio.Task[HeadStart | None]) -> None:
    """Stop what a head start left running when its turn never took it (the runner failed
    first); a head start the turn took is left as it is."""
    if not head.done():
        head.cancel()
    await asyncio.wait([head])
    if head.cancelled() or head.exception() is not None or (started := head.result()) is None:
        return
    if started.first is None:
        return
    if not started.first.done():
        started.first.cancel()
    await asyncio.wait([started.first])
    if not started.first.cancelled():
        started.first.exception()  # retrieved: a failure there is the turn's, told already


async def run_pipeline(service: TurnService, ctx: TurnContext, *,
                       think: ThinkFn | None = None, execute: steps.ExecuteFn | None = None,
                       await_approval: steps.AwaitFn | None = None, via: str = "api",
                       head: Awaitable[HeadStart | None] | None = None) -> str:
    """One turn; the reply is published to the waiting channel and returned. With `head`,
    the conversation comes from a head start (whose first call `think` must take)."""
    how = steps.Steps(execute or steps.execute, await_approval or gate.wait_in_db, via)
    added: list[dict[str, object]] = [{"role": "user", "content": ctx.text}]
    try:
        started = await head if head is not None else None
        tutored = started.tutored if started is not None else (
            None if head is not None else await _precheck(service, ctx))
        added[0]["content"] = ctx.text  # a confirmed clause of a mixed request is the text
        if tutored is not None:
            reply = tutored
            added.append({"role": "assistant", "content": reply})
        elif service.port is not None and _model_serves(service, started):
            try:
                thinking = think or (plain_think if head is None else _taking(head))
                reply, added = await _agent(service, ctx, thinking, how, head)
            except ModelBudgetSpent as exc:  # the day's LLM budget is spent: the planner serves
                reply = await _embedded(service, ctx, how, i18n.get(exc.key, ctx.lang,
                                                                    **exc.vars))
                added.append({"role": "assistant", "content": reply})
            except LLMError:  # the first model call failed, nothing ran: the planner serves
                reply = await _without_model(service, ctx, how)
                added.append({"role": "assistant", "content": reply})
        elif service.port is not None:  # the model's breaker is open: the planner serves
            reply = await _without_model(service, ctx, how)
            added.append({"role": "assistant", "content": reply})
        else:
            reply = await _embedded(service, ctx, how)
            added.append({"role": "assistant", "content": reply})
        service.record.publish(ctx, reply)
        return reply
    finally:  # what this turn said stays in the session, even when it failed half-way;
        # a known secret (the model may have put one in a refused call) is never stored or
        # sent again with a later turn's history (Law 2)
        await asyncio.to_thread(_remember, service, ctx, added)


def _taking(head: Awaitable[HeadStart | None]) -> ThinkFn:
    """The model calls of a turn with a head start: the first is the call it began."""
    async def think(service: TurnService, ctx: TurnContext, convo: Conversation, tools: bool,
                    index: int) -> LLMReply:
        started = await head if index == 1 else None
        if started is not None and started.first is not None:
            return await started.first
        return await plain_think(service, ctx, convo, tools, index)
    return think


def _model_serves(service: TurnService, started: HeadStart | None) -> bool:
    """The model answers this turn: its first call is under way already, or the breaker
    lets a call through (`metnos.mechanisms.llm.health.ModelHealth`)."""
    if started is not None and started.first is not None:
        return True
    return service.model_health.allows()


async def _without_model(service: TurnService, ctx: TurnContext, how: steps.Steps) -> str:
    """The embedded planner's answer, and once the line that the model is not there."""
    reply = await _embedded(service, ctx, how)
    return degraded.with_note(reply, degraded.note(service, ctx))


def _remember(service: TurnService, ctx: TurnContext, added: list[dict[str, object]]) -> None:
    """Store this turn's messages, known secrets redacted (blocking: a worker thread)."""
    kept, _ = service.guard.redact(added)
    history.record(service.engine, session_id=ctx.session_id, turn_id=ctx.turn_id,
                   messages=kept)


async def _agent(service: TurnService, ctx: TurnContext, think: ThinkFn, how: steps.Steps,
                 head: Awaitable[HeadStart | None] | None) -> tuple[str, list[dict[str, object]]]:
    started = await head if head is not None else None
    if started is not None and started.convo is not None and started.window is not None:
        convo, window = started.convo, started.window
    else:
        convo, window = await _open(service, ctx)
    ctx.activity.extend(_history_items(window, ctx.lang))
    how.budget = Budget(service.settings.agent)
    how.budget.cost_usd = window.cost_usd  # a fold's call is this turn's spend too
    loop = AgentLoop(service, ctx, convo, think, how, how.budget)
    reply = await loop.run()
    return reply, list(convo.added)


async def _open(service: TurnService, ctx: TurnContext) -> tuple[Conversation, history.Window]:
    """The conversation the model sees: the session's history window, then this message."""
    started = time.perf_counter()
    settings = service.settings
    window = await history.window(
        service.engine, settings, ctx.session_id, port=service.port,
        untrusted=lambda name: _untrusted(service, name), audit=service.audit,
        turn_id=ctx.turn_id)
    if window.sources:  # earlier outside data is still in what the model reads
        ctx.tainted = True
        ctx.sources.extend(window.sources)
    voiced = await asyncio.to_thread(_identity_taint, service, ctx)
    workspace, hints = await asyncio.gather(
        asyncio.to_thread(prompt_context, settings.workspace,
                          refused=partial(_identity_refused, service, ctx), untrusted=voiced),
        asyncio.to_thread(_hints, service, ctx))
    if hints:  # the accepted compositions (the synt): Metnos's own lines, after the files
        workspace = "\n\n".join(part for part in (workspace, "\n".join(hints)) if part)
    convo = Conversation.open(ctx.text, ctx.lang, service.tools(ctx), history=window.messages,
                              workspace_context=workspace, untrusted=ctx.untrusted,
                              intents=settings.i18n,
                              result_chars=settings.agent.max_tool_result_chars)
    ctx.mark("history", started)
    return convo, window


def _identity_refused(service: TurnService, ctx: TurnContext, name: str, reason: str) -> None:
    """An identity file left out of the prompt (a link, not a plain file): a deny line."""
    service.record.audit_line(ctx, action=f"{REFUSED_ACTION}/{name}", decision="deny",
                              reason=f"ERR_WORKSPACE_IDENTITY_{reason.upper()}",
                              outcome="refused", args={"file": name})


def _hints(service: TurnService, ctx: TurnContext) -> list[str]:
    """The accepted compositions' lines (the synt's `hints` hook), none without it."""
    hints = service.hooks.hints
    return [] if hints is None else hints(service.registry.names(), ctx.lang)


def _identity_taint(service: TurnService, ctx: TurnContext) -> dict[str, str]:
    """The identity files a tainted turn wrote and the owner has not confirmed: given to the
    model as data, and this turn is tainted by them (acting steps ask), with an audit line."""
    found = identity.untrusted_files(service.engine, service.settings.workspace)
    for name, sources in found.items():
        ctx.tainted = True
        label = i18n.get("MSG_IDENTITY_SOURCE", ctx.lang, file=name,
                         sources=identity.read_label(sources))
        if label not in ctx.sources:
            ctx.sources.append(label)
        service.record.audit_line(ctx, action=f"identity:{name}", decision="info",
                                  reason="MSG_IDENTITY_READ_UNTRUSTED", outcome="tainted")
    return {name: name for name in found}


def _history_items(window: history.Window, lang: str) -> list[dict[str, object]]:
    """The activity of the history itself: a fold into the summary, or dropped messages."""
    items = []
    if window.folded:
        items.append(i18n.get("MSG_HISTORY_FOLDED", lang, count=window.folded))
    if window.note:
        items.append(i18n.get("MSG_AGENT_HISTORY_DROPPED", lang, count=window.dropped))
    return [{"executor": "history", "status": "done", "text": text, "action_id": None,
             "undo": False, "approval_id": None} for text in items]


def _untrusted(service: TurnService, executor: str) -> bool:
    tool = service.hooks.host_tools.get(executor)  # wish: Metnos's own words, never outside data
    if tool is not None:
        return tool.outside_text
    spec = service.registry.find(executor)
    return spec is None or spec.manifest.outside_text


async def _embedded(service: TurnService, ctx: TurnContext, how: steps.Steps,
                    said: str | None = None) -> str:
    """The embedded planner's single step (no model, or the day's model budget is spent)."""
    started = time.perf_counter()
    spoken = await asyncio.to_thread(  # "annulla", "undo that", "confirm": before any plan
        undo_said.said, ctx.text, [ctx.lang, *service.settings.active_languages])
    if spoken is not None:
        ctx.understood = True
        if spoken[1] != ctx.lang:  # said in another active language
            ctx.lang = spoken[1]
        return await asyncio.to_thread(undo_said.answer, service, ctx, spoken[0])

    def speaks(matched: str) -> Lang:  # another active language, with words enough to tell
        return language.plan_language(matched, ctx.text, ctx.lang, service.settings)

    plan = await asyncio.to_thread(plan_embedded, ctx.text, ctx.lang, service.tools(ctx),
                                   others=service.other_tools(ctx), speaks=speaks,
                                   first=service.hooks.planners)
    if said is not None:
        plan = replace(plan, text=said)
    ctx.understood = plan.understood
    # understood in another active language, with words enough to tell ("ciao" is not):
    # this turn answers in it; the session's pinned language is the session row's, unchanged
    ctx.lang = speaks(plan.lang) if plan.lang else ctx.lang
    ctx.mark("plan", started)
    service.events.publish(ctx.turn_id, "status", status="running")
    outcomes: list[StepOutcome] = []
    for seq, step in enumerate(plan.steps, start=1):
        _, outcome, done = await steps.one(
            service, ctx, step, how, seq=seq,
            done_so_far=compose(outcomes, None, ctx.lang) if outcomes else "")
        if done.item is not None:
            ctx.activity.append(done.item)  # its Undo button
        outcomes.append(outcome)
    started = time.perf_counter()
    reply = compose(outcomes, plan.text, ctx.lang)
    ctx.mark("compose", started)
    return reply
