"""Resuming a paused turn with the owner's decision (`flows/approval.py` pauses it)."""

from __future__ import annotations

import logging
from typing import Any
from uuid import UUID

import httpx
import tenacity
from prefect import get_client
from prefect.exceptions import NotPausedError, PrefectHTTPStatusError
from prefect.flow_runs import aresume_flow_run

# Prefect pauses a run, then saves its form's schema: a resume between the two is refused with
# this reason, and passes a moment later
SCHEMA_NOT_YET = "Run input schema not found"
RESUME_RETRY_S = 10.0  # how long a failing resume is retried before the owner is told
log = logging.getLogger(__name__)


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
