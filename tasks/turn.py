"""The Prefect task of a turn: one executor run.

It wraps one plain function of `metnos.turns` (the runner). An executor run is never retried
by Prefect: a side-effecting action must not run twice blindly, and the sandbox owns its
timeout and kills its process group itself. It is what a person wants to see in the Prefect
UI, one task named after the executor; the model calls and the bookkeeping are plain code of
the flow (`flows/turn.py`), shown step by step in the run's card (`metnos.turns.runview`).

The flow calls it through `execute_step`, which `quote`s the runtime objects (service, turn
context, checked step): Prefect then neither walks them looking for futures to resolve nor
records them as task inputs, work it did at every task run on the turn's critical path.
"""

from __future__ import annotations

from typing import TypeVar, cast

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.utilities.annotations import quote

from metnos.turns.reply import StepOutcome
from metnos.turns.service import CheckedStep, TurnContext, TurnService


@task(name="executor", cache_policy=NO_CACHE, persist_result=False,
      task_run_name="{checked.step.executor}")
async def executor_task(service: TurnService, ctx: TurnContext,
                        checked: CheckedStep) -> StepOutcome:
    return await service.runner.execute(ctx, checked)


T = TypeVar("T")


def _opaque(value: T) -> T:
    """`value` passed to a task untouched by Prefect (unwrapped before the task's body)."""
    return cast(T, quote(value))


async def execute_step(service: TurnService, ctx: TurnContext,
                       checked: CheckedStep) -> StepOutcome:
    return await executor_task(_opaque(service), _opaque(ctx), _opaque(checked))
