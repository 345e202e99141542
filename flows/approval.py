"""The approval wait of a turn flow: `pause_flow_run` with the UI's form (`ApprovalInput`),
resumed through `resume_approval` (`flows/_resume.py`) by the API and the CLI; the row
decides (`gate.resolve`)."""

from __future__ import annotations

import asyncio
from typing import Any, Literal, cast
from uuid import UUID

from prefect import get_client, get_run_logger
from prefect.exceptions import FlowPauseTimeout
from prefect.flow_runs import apause_flow_run
from prefect.input import RunInput
from prefect.states import Running

from flows._resume import resume_approval
from metnos.turns import gate, runview
from metnos.turns.runtime import Runtime
from metnos.turns.service import CheckedStep, TurnContext

PAUSE_POLL_S = 0.5  # how often a paused run checks whether it was resumed (Prefect: 10 s)


class ApprovalInput(RunInput):
    """The form the Prefect UI shows on a paused turn; the server validates it."""

    decision: Literal["approve", "deny"] = "deny"
    reason: str = ""


async def wait_for_owner(service: Runtime, ctx: TurnContext,
                         checked: CheckedStep) -> dict[str, Any] | None:
    """Pause this flow run until the approval is decided; None when it expires."""
    assert checked.approval is not None
    if await asyncio.to_thread(gate.decided, service, checked.approval.id):
        return {}  # decided before the pause began: the row says what to do
    timeout = max(1, int(service.settings.policy.approval_timeout_s))
    form = ApprovalInput.with_initial_data(description=gate.markdown(checked, ctx.lang))
    get_run_logger().info("%s", runview.waiting_for(checked.approval, ctx.lang))
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


__all__ = ["ApprovalInput", "resume_approval", "wait_for_owner"]
