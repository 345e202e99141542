"""The turn's flow run as a person finds it in the Prefect UI (API check): a name and tags
that identify it without the message's text, an artifact holding the reply, and a final state
named after the outcome."""

from __future__ import annotations

import asyncio
import re
from typing import Any

from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

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
    channel, user, clock, used = run.name.split(" · ")
    assert (channel, used) == ("api", "fs_read") and user and re.fullmatch(r"\d\d:\d\d", clock)
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
