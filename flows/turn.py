"""The `turn` flow (SPEC §2): one user message, end to end, visible in the Prefect UI.

Run in-process by the gateway (`await turn(turn_id)`, about 0.2 s of Prefect overhead). The
runtime objects (database, registry, audit log, LLM port) are not flow parameters — Prefect
stores parameters as JSON — but reach the flow through a context variable set by `run_turn`
(the flow's `turn_id` parameter names the turn in the UI).

A step that needs the owner's approval pauses the flow run (`flows/approval.py`).
"""

from __future__ import annotations

from contextvars import ContextVar

from prefect import flow
from prefect.context import get_run_context

from flows.approval import resume_approval, wait_for_owner
from metnos.turns.pipeline import run_pipeline
from metnos.turns.service import TurnContext, TurnService
from tasks.turn import close_turn_task, executor_task, plan_task

# Each turn runs in its own asyncio task, so concurrent turns each see their own value.
_TURN: ContextVar[tuple[TurnService, TurnContext]] = ContextVar("metnos_turn")


async def run_turn(service: TurnService, ctx: TurnContext) -> None:
    """Entry point for the gateway: run the flow for a turn already opened by `service`."""
    _TURN.set((service, ctx))
    try:
        await turn(ctx.turn_id)
    except Exception as exc:  # e.g. the Prefect API is unreachable: the flow never ran
        if not ctx.closed:
            await service.fail_turn(ctx, exc)


@flow(name="turn", flow_run_name="turn-{turn_id}", persist_result=False, log_prints=False,
      validate_parameters=False)
async def turn(turn_id: str) -> str:
    service, ctx = _TURN.get()
    ctx.flow_run_id = str(get_run_context().flow_run.id)  # type: ignore[union-attr]
    try:
        reply = await run_pipeline(
            service, ctx,
            plan=lambda svc, c: plan_task(svc, c),
            execute=lambda svc, c, chk: executor_task(svc, c, chk),
            await_approval=wait_for_owner, via="prefect-ui",
        )
    except Exception as exc:  # the outermost boundary of a turn: tell the user, keep the turn
        await service.fail_turn(ctx, exc)
        raise  # the flow run shows as Failed in the Prefect UI
    await close_turn_task(service, ctx, reply, "completed")
    return turn_id


__all__ = ["resume_approval", "run_turn", "turn"]
