"""The turn pipeline (SPEC §2): plan → policy → (approval) → sandbox → audit → reply.

`run_pipeline` composes the `TurnService` steps; `flows/turn.py` runs the same composition
with the planner call and each executor run as Prefect tasks and the approval wait as a
Prefect pause, so the logic lives here once and the flow stays thin.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from metnos.llm.tools import Plan
from metnos.turns import gate
from metnos.turns.context import CheckedStep, TurnContext
from metnos.turns.reply import StepOutcome, compose
from metnos.turns.service import TurnService

PlanFn = Callable[[TurnService, TurnContext], Awaitable[Plan]]
ExecuteFn = Callable[[TurnService, TurnContext, CheckedStep], Awaitable[StepOutcome]]
# waits for the owner's decision on `checked.approval`: the resume input, or None on timeout
AwaitFn = Callable[[TurnService, TurnContext, CheckedStep], Awaitable[dict[str, Any] | None]]


async def run_pipeline(service: TurnService, ctx: TurnContext, *,
                       plan: PlanFn | None = None, execute: ExecuteFn | None = None,
                       await_approval: AwaitFn | None = None, via: str = "api") -> str:
    """One turn end to end. The flow passes Prefect tasks as `plan`/`execute` and Prefect's
    pause as `await_approval`; the bench and the plain path pass nothing and get the same
    pipeline as plain function calls (an approval then waits on the database)."""
    plan_fn: PlanFn = plan or (lambda svc, c: svc.plan(c))
    execute_fn: ExecuteFn = execute or (lambda svc, c, chk: svc.execute(c, chk))
    wait_fn: AwaitFn = await_approval or gate.wait_in_db
    the_plan = await plan_fn(service, ctx)
    service.events.publish(ctx.turn_id, "status", status="running")
    outcomes: list[StepOutcome] = []
    for step in the_plan.steps:
        checked = await asyncio.to_thread(service.check, ctx, step)
        try:
            outcome = await _run_step(service, ctx, checked, outcomes, execute_fn, wait_fn,
                                      via)
        finally:
            if checked.run_slot is not None:  # it never started: its reserved run goes back
                await asyncio.to_thread(service.guard.release_run, checked)
        outcomes.append(outcome)
    started = time.perf_counter()
    reply = compose(outcomes, the_plan.text, ctx.lang)
    ctx.mark("compose", started)
    service.publish(ctx, reply)
    return reply


async def _run_step(service: TurnService, ctx: TurnContext, checked: CheckedStep,
                    outcomes: list[StepOutcome], execute_fn: ExecuteFn, wait_fn: AwaitFn,
                    via: str) -> StepOutcome:
    """One checked step: the owner's decision when it asks, then the run (or its refusal)."""
    if checked.outcome is None and checked.approval is not None:
        await service.await_owner(ctx, checked, outcomes)
        answer = await wait_fn(service, ctx, checked)
        checked.outcome = await asyncio.to_thread(gate.resolve, service, ctx, checked,
                                                  answer, via)
        await service.resume_after_owner(ctx)
    if checked.outcome is not None:  # refused by the policy, denied or expired
        service.step_event(ctx, checked, "refused", checked.outcome)
        return checked.outcome
    service.step_event(ctx, checked, "started")
    outcome = await execute_fn(service, ctx, checked)
    service.step_event(ctx, checked, outcome.status, outcome)  # done, failed or refused
    return outcome
