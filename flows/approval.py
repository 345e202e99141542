"""The approval wait of a turn flow: `pause_flow_run` with the UI's form (`ApprovalInput`),
resumed through `resume_approval` by the API and the CLI; the row decides (`gate.resolve`)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Literal, cast
from uuid import UUID

import httpx
import tenacity
from prefect import get_client, get_run_logger
from prefect.exceptions import FlowPauseTimeout, NotPausedError, PrefectHTTPStatusError
from prefect.flow_runs import apause_flow_run, aresume_flow_run
from prefect.input import RunInput
from prefect.states import Running

from metnos.turns import gate, runview
from metnos.turns.runtime import Runtime
from metnos.turns.service import CheckedStep, TurnContext

PAUSE_POLL_S = 0.5  # how often a paused run checks whether it was resumed (Prefect: 10 s)
# Prefect pauses a run, then saves its form's schema: a resume between the two is refused with
# this reason, and passes a moment later
SCHEMA_NOT_YET = "Run input schema not found"
RESUME_RETRY_S = 10.0  # how long a failing resume is retried before the owner is told
log = logging.getLogger(__name__)


class ApprovalInput(RunInput):
    """The form the Prefect UI shows on a paused turn; the server validates it."""

    decision: Literal["approve", "deny"] = "deny"
    reason: str = ""


async def resume_approval(flow_run_id: str, run_input: dict[str, Any]) -> None:
    """Resume a paused turn with the owner's decision (the UI's Resume button). Retried for
    RESUME_RETRY_S while the run is still Running (the decision came before the pause), is
    Paused without its form yet (`SCHEMA_NOT_YET`), or the API fails or answers 5xx/429; a
    run seen Running that then ends took it in (`gate.decided`); one ended at once, or
    unknown, fails to the caller (`metnos.mechanisms.approvals.resume`)."""
    retrying = tenacity.AsyncRetrying(
        retry=tenacity.retry_if_exception(_may_pass),
        stop=tenacity.stop_after_delay(RESUME_RETRY_S),
        wait=tenacity.wait_exponential_jitter(initial=0.1, max=1.0), reraise=True,
        before_sleep=tenacity.before_sleep_log(log, logging.WARNING))
    seen: set[str] = set()  # {"running"}: alive after the decision was recorded
    try:
        async for attempt in retrying:
            with attempt:
                await _resume_once(UUID(flow_run_id), run_input, seen)
    except RunFinished:
        if "running" not in seen:
            raise  # over before the decision was made: nobody took it in


class RunFinished(NotPausedError):
    """The run is over (completed, failed, cancelled...): it will never pause again."""


async def _resume_once(run_id: UUID, run_input: dict[str, Any], seen: set[str]) -> None:
    try:
        await aresume_flow_run(run_id, run_input=run_input)
    except NotPausedError as exc:
        async with get_client() as client:
            state = (await client.read_flow_run(run_id)).state
        if state is not None and state.is_final():
            raise RunFinished(f"flow run {run_id} is {state.type.value}") from exc
        seen.add("running")
        raise


def _may_pass(exc: BaseException) -> bool:
    """Whether a resume that failed with `exc` may work if tried again soon."""
    if isinstance(exc, PrefectHTTPStatusError):
        return exc.response.status_code >= 500 or exc.response.status_code == 429
    if type(exc) is RuntimeError:  # aresume_flow_run's refusal, the server's reason in it
        return SCHEMA_NOT_YET in str(exc)
    return isinstance(exc, NotPausedError | httpx.TransportError) and not isinstance(
        exc, RunFinished)


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
