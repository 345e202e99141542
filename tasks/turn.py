"""Prefect tasks of a turn: one model call, one executor run, the final bookkeeping.

Each wraps one plain function of `metnos.turns`. Retries only where safe:
- a model call retries transient errors inside the LLM port (tenacity), so none here;
- an executor run is never retried by Prefect: a side-effecting action must not run twice
  blindly, and the sandbox owns its timeout and kills its process group itself;
- closing the turn is an idempotent database update, retried on a transient failure.
"""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from metnos.llm.port import LLMReply
from metnos.turns.conversation import Conversation
from metnos.turns.reply import StepOutcome
from metnos.turns.service import CheckedStep, TurnContext, TurnService
from metnos.turns.thinking import think


@task(name="think", cache_policy=NO_CACHE, persist_result=False,
      task_run_name="think-{index}")
async def think_task(service: TurnService, ctx: TurnContext, convo: Conversation,
                     tools: bool, index: int) -> LLMReply:
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
