"""The Tutor's reply in a turn: the plan's sections composed without a model
(`compose.extractive`) or by the configured one (`compose.with_model`, its call reserved on
and settled against the day's LLM budget like the loop's), an observation said through its
markers first (a stale or partial one is always said as such; a wrong premise is corrected).
A model answer that brings in terms the sources lack is discarded for the extractive one,
with a `tutor.unattested` audit line naming what it brought."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from datetime import UTC, datetime

from metnos.features.tutor.compose import extractive as compose_extractive
from metnos.features.tutor.compose import with_model
from metnos.features.tutor.embedder import default_embedder
from metnos.features.tutor.precheck import Plan
from metnos.features.tutor.views import (
    Marker,
    assumed_state,
    facts_answer,
    render,
    scheduler_answer,
)
from metnos.mechanisms.audit import AuditLog
from metnos.mechanisms.llm.port import LLMPort
from metnos.mechanisms.policy.decide import Decision
from metnos.turns.context import TurnContext
from metnos.turns.guard import Guard


async def extractive(plan: Plan, ctx: TurnContext | None = None) -> tuple[str, str]:
    """The reply and its outcome ("answered" or "gap")."""
    answer = compose_extractive(plan.question, plan.lang, plan.hits,
                                translations=plan.translations, observed=observed(plan))
    return answer.text, answer.outcome


def by_model(port: LLMPort, guard: Guard, audit: AuditLog, executors: Iterable[str],
             tier: str = "fast") -> Callable[[Plan, TurnContext], Awaitable[tuple[str, str]]]:
    """The model's composer: one call per answer, within the day's budget (spent: the
    extractive answer, with a deny line, as the loop's own calls are refused)."""
    names = tuple(executors)

    async def compose(plan: Plan, ctx: TurnContext) -> tuple[str, str]:
        slot = await asyncio.to_thread(guard.reserve_llm)
        if isinstance(slot, Decision):
            audit.append(action="tutor.compose", turn_id=ctx.turn_id, decision="deny",
                         reason=slot.key, outcome="extractive")
            return await extractive(plan, ctx)
        answer = None
        try:
            answer = await with_model(port, plan.question, plan.lang, plan.hits, tier=tier,
                                      translations=plan.translations,
                                      observed=observed(plan), executors=names)
        finally:
            cost = answer.cost_usd if answer is not None else None
            model = (answer.model if answer is not None else "") or port.resolve(tier) or ""
            await asyncio.to_thread(guard.settle_llm, ctx, slot, cost, model)
        if answer.unattested:
            audit.append(action="tutor.unattested", turn_id=ctx.turn_id, decision="deny",
                         reason="unattested", outcome=answer.composer,
                         args={"terms": list(answer.unattested)})
        return answer.text, answer.outcome
    return compose


def observed(plan: Plan) -> str | None:
    """The observation's markers said in the plan's language, if the plan has one."""
    if plan.observation is None:
        return None
    return " ".join(render(m, plan.lang) for m in markers(plan)) or None


def markers(plan: Plan) -> list[Marker]:
    """What an observation's answer must say, in order."""
    obs = plan.observation
    assert obs is not None
    now = datetime.now(UTC)
    if obs.probe == "scheduler":
        emb = default_embedder()
        assumed = assumed_state(emb.encode([plan.question])[0], "scheduler", plan.lang, emb)
        return scheduler_answer(assumed, obs, now)
    return facts_answer(obs, now)
