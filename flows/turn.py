"""The `turn` flow (SPEC §2): one user message, end to end, visible in the Prefect UI.

Run in-process by the gateway (`await turn(turn_id)`, about 0.2 s of Prefect overhead). The
runtime objects (database, registry, audit log, LLM port) are not flow parameters — Prefect
stores parameters as JSON — but reach the flow through a context variable set by `run_turn`
(the flow's `turn_id` parameter names the turn in the UI).

A step that needs the owner's approval pauses the flow run (`pause_flow_run` with the typed
`ApprovalInput`): the Prefect UI shows the exact action and an approve/deny form, and
`POST /api/approvals/{id}` or `metnos approvals` resume it through `resume_approval`.
"""

from __future__ import annotations

import asyncio
from contextvars import ContextVar
from typing import Any, Literal, cast
from uuid import UUID

from prefect import flow, get_client
from prefect.context import get_run_context
from prefect.exceptions import FlowPauseTimeout, NotPausedError
from prefect.flow_runs import apause_flow_run, aresume_flow_run
from prefect.input import RunInput
from prefect.states import Running

from metnos.turns import gate
from metnos.turns.service import CheckedStep, TurnContext, TurnService, run_pipeline
from tasks.turn import close_turn_task, executor_task, plan_task

# Each turn runs in its own asyncio task, so concurrent turns each see their own value.
_TURN: ContextVar[tuple[TurnService, TurnContext]] = ContextVar("metnos_turn")
# how often a paused run checks whether it was resumed (s); Prefect's default is 10
PAUSE_POLL_S = 0.5
RESUME_RETRY_S = 10.0


class ApprovalInput(RunInput):
    """The form the Prefect UI shows on a paused turn; the server validates it."""

    decision: Literal["approve", "deny"] = "deny"
    reason: str = ""


async def run_turn(service: TurnService, ctx: TurnContext) -> None:
    """Entry point for the gateway: run the flow for a turn already opened by `service`."""
    _TURN.set((service, ctx))
    try:
        await turn(ctx.turn_id)
    except Exception as exc:  # e.g. the Prefect API is unreachable: the flow never ran
        if not ctx.closed:
            await service.fail_turn(ctx, exc)


async def resume_approval(flow_run_id: str, run_input: dict[str, Any]) -> None:
    """Resume a paused turn with the owner's decision (what the UI's Resume button does).

    A decision can arrive between the turn's answer "awaiting approval" and the moment its
    run is actually paused: then the run is still Running, and the resume is retried briefly.
    """
    for _ in range(int(RESUME_RETRY_S / 0.1)):
        try:
            await aresume_flow_run(UUID(flow_run_id), run_input=run_input)
            return
        except NotPausedError:
            await asyncio.sleep(0.1)
    await aresume_flow_run(UUID(flow_run_id), run_input=run_input)


async def wait_for_owner(service: TurnService, ctx: TurnContext,
                         checked: CheckedStep) -> dict[str, Any] | None:
    """Pause this flow run until the approval is decided; None when it expires."""
    assert checked.approval is not None
    if await asyncio.to_thread(gate.decided, service, checked.approval.id):
        return {}  # decided before the pause began: the row says what to do
    timeout = max(1, int(service.settings.policy.approval_timeout_s))
    form = ApprovalInput.with_initial_data(description=gate.markdown(checked, ctx.lang))
    try:
        answer = await apause_flow_run(wait_for_input=form, timeout=timeout,
                                       poll_interval=cast(int, PAUSE_POLL_S),
                                       key=f"approval-{checked.approval.id}")
    except FlowPauseTimeout:
        # Prefect would fail the run; the turn goes on (the step is recorded as expired)
        async with get_client() as client:
            await client.set_flow_run_state(UUID(str(ctx.flow_run_id)), Running(), force=True)
        return None
    return {"decision": answer.decision, "reason": answer.reason}


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
