"""An owner who answers the very moment a turn pauses (seen under load in a full run: the
approval stayed "approved" and the turn waited for an hour).

Prefect pauses a run in two requests: the Paused state, then the schema of the form the run
waits for. A resume between the two is refused by the server ("Run input schema not found.");
`resume_approval` tries again until the form is there. Played against the real Prefect server,
the pausing side's two requests made by the test with a gap between them."""

from __future__ import annotations

import asyncio
from uuid import UUID

import pytest
from prefect import State, flow, get_client
from prefect.client.orchestration import PrefectClient
from prefect.input.run_input import Keyset, keyset_from_paused_state
from prefect.states import Paused, Running

from flows.approval import ApprovalInput, resume_approval


@flow(name="resume-race", persist_result=False)
async def paused_run() -> None:  # never run: its runs are made by the test
    return None


async def paused_without_form(client: PrefectClient) -> tuple[UUID, Keyset]:
    """A run Paused for a form that is not saved yet: the pause's first request."""
    run = await client.create_flow_run(paused_run, state=Running())
    pause: State[None] = Paused(timeout_seconds=300, reschedule=False, pause_key="1")
    keyset = keyset_from_paused_state(pause)
    pause.state_details.run_input_keyset = {str(k): v for k, v in keyset.items()}
    await client.set_flow_run_state(run.id, pause, force=True)
    return run.id, keyset


async def test_a_resume_before_the_form_is_saved_waits_for_it(prefect_api: str) -> None:
    async with get_client() as client:
        run_id, keyset = await paused_without_form(client)

        resuming = asyncio.create_task(resume_approval(str(run_id), {"decision": "approve"}))
        await asyncio.sleep(0.5)
        assert not resuming.done()  # refused so far, and trying again
        await ApprovalInput.asave(keyset, flow_run_id=run_id)  # the pause's second request
        await asyncio.wait_for(resuming, timeout=15)

        resumed = await client.read_flow_run(run_id)
        assert resumed.state is not None and resumed.state.is_running(), resumed.state
        answer = await ApprovalInput.aload(keyset, flow_run_id=run_id)
        assert answer.decision == "approve"


async def test_a_refusal_for_any_other_reason_is_not_retried(prefect_api: str) -> None:
    """An answer the form does not accept fails at once (no 10 s of retries)."""
    async with get_client() as client:
        run_id, keyset = await paused_without_form(client)
        await ApprovalInput.asave(keyset, flow_run_id=run_id)
        started = asyncio.get_running_loop().time()
        with pytest.raises(RuntimeError, match="Cannot resume this run"):
            await resume_approval(str(run_id), {"decision": "maybe"})
        assert asyncio.get_running_loop().time() - started < 5
