"""The approval wait of a turn flow: Prefect's `pause_flow_run` with a typed run input.

A step that needs the owner's approval pauses the `turn` flow run: the Prefect UI shows the
exact action and an approve/deny form (`ApprovalInput`, validated by the server), and
`POST /api/approvals/{id}` or `metnos approvals` resume it through `resume_approval`. The
database row decides in the end (`metnos.turns.gate.resolve`), whichever surface resumed.
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal, cast
from uuid import UUID

from prefect import get_client
from prefect.exceptions import FlowPauseTimeout, NotPausedError
from prefect.flow_runs import apause_flow_run, aresume_flow_run
from prefect.input import RunInput
from prefect.states import Running

from metnos.turns import gate
from metnos.turns.service import CheckedStep, TurnContext, TurnService

# how often a paused run checks whether it was resumed (s); Prefect's default is 10
PAUSE_POLL_S = 0.5
RESUME_RETRY_S = 10.0


class ApprovalInput(RunInput):
    """The form the Prefect UI shows on a paused turn; the server validates it."""

    decision: Literal["approve", "deny"] = "deny"
    reason: str = ""


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
