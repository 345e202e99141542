"""The turn's flow run as a person finds it in the Prefect UI (API check): a name and tags
that identify it without the message's text, an artifact holding the reply, and a final state
named after the outcome."""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any
from uuid import UUID

import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import (
    ArtifactFilter,
    ArtifactFilterFlowRunId,
    FlowRunFilter,
    FlowRunFilterId,
    LogFilter,
    LogFilterFlowRunId,
)

from metnos.testing.llm_server import ScriptedLLM
from tests.approvals.test_approval_flow import ask_move, paused
from tests.gateway.test_turns import wait_closed
from tests.support.home import MakeHome, gateway_client


async def final_run(flow_run_id: str) -> Any:
    async with get_client() as prefect:
        for _ in range(100):
            run = await prefect.read_flow_run(flow_run_id)
            if run.state is not None and run.state.is_final():
                return run
            await asyncio.sleep(0.05)
    raise AssertionError(f"run {flow_run_id} never ended: {run.state}")


async def artifacts_of(flow_run_id: str) -> list[Any]:
    async with get_client() as prefect:
        return await prefect.read_artifacts(artifact_filter=ArtifactFilter(
            flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id])))


async def task_runs_of(flow_run_id: str) -> list[Any]:
    """The run's task runs, once the server has recorded them (from the run's events: a few
    seconds after the run) and for a second more, so none that comes late is missed."""
    wanted = FlowRunFilter(id=FlowRunFilterId(any_=[UUID(flow_run_id)]))
    async with get_client() as prefect:
        for _ in range(150):
            if await prefect.read_task_runs(flow_run_filter=wanted):
                break
            await asyncio.sleep(0.1)
        await asyncio.sleep(1.0)
        return await prefect.read_task_runs(flow_run_filter=wanted)


async def test_a_turn_run_is_named_tagged_described_and_ends_answered(
        make_home: MakeHome, scripted_llm: ScriptedLLM, prefect_api: str) -> None:
    home = make_home(llm=scripted_llm, lang="en", METNOS_TIMEZONE="Europe/Rome")
    (home.workspace / "note.md").write_text("buy milk\n")
    scripted_llm.enqueue_tool_call("fs_read", {"path": "note.md"})
    scripted_llm.enqueue_text("Your note says: buy <b>milk</b>.")
    async with gateway_client(home) as client:
        body = (await client.post("/api/turns", json={"text": "what does my secret note say?",
                                                     "lang": "en"})).json()
        turn = await wait_closed(client, body["turn_id"])
    run = await final_run(turn["flow_run_id"])
    channel, user, clock, short, used = run.name.split(" · ")
    assert (channel, used) == ("api", "fs_read") and user
    assert re.fullmatch(r"\d\d:\d\d:\d\d", clock) and short == "#" + body["turn_id"][:8]
    assert "note" not in run.name  # no message text in the name
    assert {"metnos-turn", "channel:api", f"user:{user}", "lang:en",
            "executor:fs_read"} <= set(run.tags)
    assert run.state.type.value == "COMPLETED" and run.state.name == "Answered"
    assert run.state.message == "Answered."
    [card] = await artifacts_of(turn["flow_run_id"])
    assert card.key == f"turn-{body['turn_id']}" and card.type == "markdown"
    assert "what does my secret note say\\?" in card.data
    assert "buy \\<b\\>milk\\<\\/b\\>" in card.data and "<b>" not in card.data  # inert HTML
    assert "`fs_read` · done" in card.data
    # the loop on the card: the model calls are plain code of the flow, not tasks
    assert re.search(r"^1\. \d+ ms · asked for `fs_read`$", card.data, re.M), card.data
    assert re.search(r"^2\. \d+ ms · answered$", card.data, re.M), card.data
    assert [t.name for t in await task_runs_of(turn["flow_run_id"])] == ["fs_read"]


async def test_not_understood_and_denied_turns_say_so_in_their_state(
        make_home: MakeHome, scripted_llm: ScriptedLLM, prefect_api: str) -> None:
    home = make_home(lang="it")  # no model: the embedded planner
    async with gateway_client(home) as client:
        body = (await client.post("/api/turns", json={"text": "xyzzy plugh"})).json()
        turn = await wait_closed(client, body["turn_id"])
    run = await final_run(turn["flow_run_id"])
    assert run.state.name == "Not understood"
    assert run.state.message == "Non capito: non è stato fatto nulla."
    assert "metnos-turn" in run.tags and "lang:it" in run.tags
    [card] = await artifacts_of(turn["flow_run_id"])
    assert "xyzzy plugh" in card.data and "Domanda" in card.data

    home = make_home(llm=scripted_llm, lang="en")
    async with gateway_client(home) as client:
        body = await ask_move(client, home, scripted_llm)
        [pending] = body["approvals"]
        await paused(body["flow_run_id"])
        decided = await client.post(f"/api/approvals/{pending['approval_id']}",
                                    json={"decision": "deny", "reason": "not now"})
        assert decided.status_code == 200, decided.text
        turn = await wait_closed(client, body["turn_id"])
    run = await final_run(turn["flow_run_id"])
    assert run.state.name == "Denied" and "executor:fs_move" in run.tags


async def test_a_paused_run_says_what_it_waits_for(
        make_home: MakeHome, prefect_api: str, caplog: pytest.LogCaptureFixture) -> None:
    """Issue 27, loose end: a paused turn's page (its name and its log, the page's first
    tab) says what it waits for, in the turn's language; names are one of a kind."""
    home = make_home(lang="en")  # no model: the embedded planner asks before a deletion
    (home.workspace / "old-draft.txt").write_text("x\n")
    async with gateway_client(home) as client:
        first = (await client.post("/api/turns", json={"text": "hello"})).json()
        # the test session logs at WARNING (set up by Prefect at its first run, above)
        caplog.set_level(logging.INFO, logger="prefect.flow_runs")
        body = (await client.post("/api/turns", json={
            "text": "delete the file old-draft.txt"})).json()
        assert body["status"] == "awaiting_approval", body
        run = await paused(body["flow_run_id"])
        said: list[str] = []
        async with get_client() as prefect:
            for _ in range(100):  # the run's logs reach the server in batches
                logs = await prefect.read_logs(log_filter=LogFilter(
                    flow_run_id=LogFilterFlowRunId(any_=[run.id])))
                said = [e.message for e in logs if e.message.startswith("Waiting for")]
                if said:
                    break
                await asyncio.sleep(0.2)
            earlier = await prefect.read_flow_run(first["flow_run_id"])
        [pending] = body["approvals"]
        assert said == [f"Waiting for owner to approve: Move old-draft.txt to the trash (it "
                        f"can be brought back) (approval {pending['approval_id'][:8]})"]
        assert f"#{body['turn_id'][:8]}" in run.name and run.name != earlier.name
        decided = await client.post(f"/api/approvals/{pending['approval_id']}",
                                    json={"decision": "deny"})
        assert decided.status_code == 200, decided.text
        await wait_closed(client, body["turn_id"])
