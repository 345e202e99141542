"""Prefect tasks of a turn: one model call, one executor run, the final bookkeeping.

Each wraps one plain function of `metnos.turns`. Retries only where safe:
- a model call retries transient errors inside the LLM port (tenacity), so none here;
- an executor run is never retried by Prefect: a side-effecting action must not run twice
  blindly, and the sandbox owns its timeout and kills its process group itself;
- closing the turn is an idempotent database update, retried on a transient failure.

The flow calls them through `think_step`, `execute_step` and `close_turn`, which `quote` the
runtime objects (service, turn context, conversation, checked step): Prefect then neither
walks them looking for futures to resolve nor records them as task inputs, work it did at
every task run on the turn's critical path. Plain values (`tools`, `index`, `reply`...) stay
visible as the task's inputs in the UI.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TypeVar, cast

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.utilities.annotations import quote

from metnos.mechanisms.llm.port import LLMReply
from metnos.turns.conversation import Conversation
from metnos.turns.loop import ThinkFn
from metnos.turns.pipeline import HeadStart
from metnos.turns.reply import StepOutcome
from metnos.turns.service import CheckedStep, TurnContext, TurnService
from metnos.turns.thinking import think


@task(name="think", cache_policy=NO_CACHE, persist_result=False,
      task_run_name="think-{index}")
async def think_task(service: TurnService, ctx: TurnContext, convo: Conversation,
                     tools: bool, index: int,
                     started: Awaitable[LLMReply] | None = None) -> LLMReply:
    if started is not None:  # the call began while the flow run was being created
        return await started
    return await think(service, ctx, convo, tools, index)


@task(name="executor", cache_policy=NO_CACHE, persist_result=False,
      task_run_name="{checked.step.executor}")
async def executor_task(service: TurnService, ctx: TurnContext,
                        checked: CheckedStep) -> StepOutcome:
    return await service.runner.execute(ctx, checked)


@task(name="close-turn", cache_policy=NO_CACHE, persist_result=False,
      retries=2, retry_delay_seconds=[0.5, 2.0])
async def close_turn_task(service: TurnService, ctx: TurnContext, reply: str,
                          status: str) -> None:
    await service.close_turn(ctx, reply, status)


T = TypeVar("T")


def _opaque(value: T) -> T:
    """`value` passed to a task untouched by Prefect (unwrapped before the task's body)."""
    return cast(T, quote(value))


def thinking(head: Awaitable[HeadStart | None]) -> ThinkFn:
    """The flow's model calls as `think` tasks; the first awaits the call `head` started."""
    async def think_step(service: TurnService, ctx: TurnContext, convo: Conversation,
                         tools: bool, index: int) -> LLMReply:
        started = await head if index == 1 else None
        first = started.first if started is not None else None
        return await think_task(_opaque(service), _opaque(ctx), _opaque(convo), tools, index,
                                _opaque(first))
    return think_step


async def execute_step(service: TurnService, ctx: TurnContext,
                       checked: CheckedStep) -> StepOutcome:
    return await executor_task(_opaque(service), _opaque(ctx), _opaque(checked))


async def close_turn(service: TurnService, ctx: TurnContext, reply: str, status: str) -> None:
    await close_turn_task(_opaque(service), _opaque(ctx), reply, status)
