"""One model call of a turn (the `think` step): budget, streaming, cost, timings.

Each call first reserves its estimate of the day's LLM budget (the reservation is settled to
the real cost, or given back when the call fails; a spent day raises `ModelBudgetSpent` with
one audit line), streams its text to the turn's events as `delta`s, and adds its time to the
turn's timings (`think`, and `think_<n>` per call) and a line to the turn's card (`ctx.calls`).

The tools offered are routed by traces (the mnestoma's `route` hook,
`metnos.features.mnestoma.routing`): above `[evolution] route_above` executors only the core and the
traces relevant to the message; its time is the turn's `route` timing.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from metnos.mechanisms.llm.port import LLMReply
from metnos.mechanisms.llm.tools import ToolSpec
from metnos.mechanisms.policy.decide import Decision
from metnos.turns.context import ModelCall, TurnContext
from metnos.turns.conversation import Conversation
from metnos.turns.loop import ModelBudgetSpent

if TYPE_CHECKING:
    from metnos.turns.service import TurnService


async def think(service: TurnService, ctx: TurnContext, convo: Conversation, tools: bool,
                index: int) -> LLMReply:
    """Ask the model once (with the turn's tools, or in words only)."""
    port = service.port
    if port is None:
        raise ValueError("think() needs an LLM port")
    slot = await asyncio.to_thread(service.guard.reserve_llm)
    if isinstance(slot, Decision):  # the day's LLM budget is spent
        await asyncio.to_thread(service.record.audit_line, ctx, action="llm", decision="deny",
                                reason=slot.key, outcome="refused")
        raise ModelBudgetSpent(slot.key, **slot.vars)
    offered = [tool.openai_tool() for tool in routed(service, ctx)] if tools else None
    started = time.perf_counter()
    cost: float | None = None
    asked: tuple[str, ...] | None = None

    def delta(piece: str) -> None:
        service.events.publish(ctx.turn_id, "delta", text=piece, think=index)

    try:
        reply = await port.complete(convo.sent(), tools=offered or None, tier="fast",
                                    on_delta=delta)
        cost = reply.cost_usd
        asked = tuple(call.name for call in reply.tool_calls)
        return reply
    finally:
        ms = ctx.timings[f"think_{index}"] = (time.perf_counter() - started) * 1000
        ctx.calls.append(ModelCall(index, ms, asked or (), failed=asked is None))
        ctx.mark("think", started)
        await asyncio.to_thread(service.guard.settle_llm, ctx, slot, cost,
                                port.resolve("fast") or "")


def routed(service: TurnService, ctx: TurnContext) -> list[ToolSpec]:
    """The turn's tools as routing lets them reach the model (see the module)."""
    started = time.perf_counter()
    tools, route = service.tools(ctx), service.hooks.route
    offered = tools if route is None else route(ctx, tools)
    ctx.timings["route"] = ctx.timings.get("route", 0.0) + (time.perf_counter() - started) * 1000
    return offered
