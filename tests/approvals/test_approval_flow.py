"""Approvals end to end: a Supervised medium-risk step pauses the Prefect `turn` flow, the owner
decides through the API or the way the Prefect UI does, and the turn goes on."""

from __future__ import annotations

import asyncio
import json
from typing import Any
from uuid import UUID

import httpx
import pytest
from prefect.client.orchestration import PrefectClient, get_client
from prefect.client.schemas.objects import FlowRun
from prefect.exceptions import PrefectHTTPStatusError
from prefect.flow_runs import aresume_flow_run

from metnos.ground import i18n
from metnos.testing.llm_server import ScriptedLLM, ToolCall
from tests.gateway.test_turns import audit_lines
from tests.support.home import Home, MakeHome, gateway_client


async def wait_status(client: httpx.AsyncClient, turn_id: str, *statuses: str,
                      timeout_s: float = 30) -> dict[str, Any]:
    for _ in range(int(timeout_s / 0.1)):
        turn: dict[str, Any] = (await client.get(f"/api/turns/{turn_id}")).json()
        if turn["status"] in statuses and (turn["status"] != "completed" or turn["finished_at"]):
            return turn
        await asyncio.sleep(0.1)
    raise AssertionError(f"turn {turn_id} never reached {statuses}: {turn}")


async def answer(client: httpx.AsyncClient, body: dict[str, Any], decision: str) -> None:
    """Answer the one approval a turn waits on, and wait for the turn to complete."""
    assert body["status"] == "awaiting_approval", body
    [pending] = body["approvals"]
    resp = await client.post(f"/api/approvals/{pending['approval_id']}",
                             json={"decision": decision})
    assert resp.status_code == 200, resp.text
    await wait_status(client, body["turn_id"], "completed")


async def paused(flow_run_id: str) -> FlowRun:
    """The run once paused with its form in place: Prefect saves the form's schema just
    after the Paused state, and the UI shows the form once it is there."""
    async with get_client() as prefect:
        for _ in range(100):
            run = await prefect.read_flow_run(UUID(flow_run_id))
            if run.state is not None and run.state.is_paused() and await _form_saved(
                    prefect, run):
                return run
            await asyncio.sleep(0.1)
    raise AssertionError(f"flow run {flow_run_id} never paused: {run.state}")


async def _form_saved(prefect: PrefectClient, run: FlowRun) -> bool:
    keyset = run.state.state_details.run_input_keyset if run.state is not None else None
    if keyset is None:
        return True  # a pause that waits for no form
    try:
        await prefect.read_flow_run_input(run.id, keyset["schema"])
    except PrefectHTTPStatusError as exc:
        if exc.response.status_code != 404:
            raise
        return False
    return True


FINAL = "That is all I did."


async def ask_move(client: httpx.AsyncClient, home: Home, llm: ScriptedLLM) -> dict[str, Any]:
    """A turn whose model asks for one move (Supervised: it waits for the owner), then,
    once it has the move's result (or its denial), answers with `FINAL`. Routed by its text,
    so other turns of the test (and their queued replies) never take its answers."""
    (home.workspace / "a.txt").write_text("alpha\n")
    text = "rename a.txt to b.txt"
    llm.route(text, ToolCall("fs_move", {"src": "a.txt", "dst": "b.txt"}), final_text=FINAL)
    resp = await client.post("/api/turns", json={"text": text, "lang": "en"})
    assert resp.status_code == 200, resp.text
    body: dict[str, Any] = resp.json()
    return body


@pytest.fixture
def home(make_home: MakeHome, scripted_llm: ScriptedLLM, prefect_api: str) -> Home:
    return make_home(llm=scripted_llm, lang="en")


def trail(home: Home) -> list[tuple[str, str, str]]:
    """(action, decision, outcome) of each audit line."""
    return [(ln["action"], ln["decision"], ln["outcome"]) for ln in audit_lines(home.path)]


async def test_api_approval_resumes_the_paused_flow(
        home: Home, scripted_llm: ScriptedLLM) -> None:
    async with gateway_client(home) as client:
        body = await ask_move(client, home, scripted_llm)
        assert body["status"] == "awaiting_approval", body
        [pending] = body["approvals"]
        assert pending["executor"] == "fs_move"
        assert pending["args"] == {"src": "a.txt", "dst": "b.txt"}
        assert pending["files"]["a.txt"].startswith("file:")
        assert pending["files"]["b.txt"] is None
        assert pending["approval_id"] in body["reply"]
        assert (home.workspace / "a.txt").exists()  # nothing ran yet
        await paused(body["flow_run_id"])  # visible as such in the Prefect UI

        listed = (await client.get("/api/approvals")).json()["approvals"]
        assert [a["approval_id"] for a in listed] == [pending["approval_id"]]
        resp = await client.post(f"/api/approvals/{pending['approval_id']}",
                                 json={"decision": "approve"})
        assert resp.status_code == 200, resp.text
        assert resp.json()["approval"]["status"] == "approved"
        assert resp.json()["resumed"] is True

        turn = await wait_status(client, body["turn_id"], "completed")
        assert turn["reply"] == FINAL
        [moved] = turn["activity"]
        assert moved["status"] == "done" and "b.txt" in moved["text"]
        assert moved["approval_id"] == pending["approval_id"] and moved["undo"]
        assert turn["approvals"][0]["status"] == "used"
    assert not (home.workspace / "a.txt").exists()
    assert (home.workspace / "b.txt").read_text() == "alpha\n"
    assert trail(home) == [("fs_move", "ask", "awaiting_approval"),
                           ("approval", "info", "approved"),
                           ("fs_move", "allow", "done")]


async def test_prefect_ui_form_and_resume(
        home: Home, scripted_llm: ScriptedLLM) -> None:
    """What the UI does: read the paused run's input schema, resume with the form's values."""
    async with gateway_client(home) as client:
        body = await ask_move(client, home, scripted_llm)
        approval_id = body["approvals"][0]["approval_id"]
        run = await paused(body["flow_run_id"])
        async with get_client() as prefect:
            keyset = run.state.state_details.run_input_keyset
            assert keyset is not None and approval_id in keyset["schema"]
            schema = json.loads(await prefect.read_flow_run_input(run.id, keyset["schema"]))
            assert schema["properties"]["decision"]["enum"] == ["approve", "deny"]
            assert schema["properties"]["decision"]["default"] == "deny"
            description = await prefect.read_flow_run_input(run.id, keyset["description"])
            assert "fs_move" in description and "a.txt" in description
            await aresume_flow_run(run.id, run_input={"decision": "deny", "reason": "not now"})
        turn = await wait_status(client, body["turn_id"], "completed")
        assert turn["reply"] == FINAL
        assert [a["status"] for a in turn["activity"]] == ["denied"]
        denied = scripted_llm.requests[-1]["messages"][-1]  # the model learnt why
        assert denied["role"] == "tool"
        assert i18n.get("MSG_AGENT_DENIED", "en", reason="not now") in denied["content"]
        assert turn["approvals"][0]["status"] == "denied"
        assert turn["approvals"][0]["via"] == "prefect-ui"
    assert (home.workspace / "a.txt").exists() and not (home.workspace / "b.txt").exists()
    assert trail(home) == [("fs_move", "ask", "awaiting_approval"),
                           ("approval", "info", "denied"),
                           ("fs_move", "deny", "denied")]


async def test_timeout_is_expired_not_denied(
        make_home: MakeHome, scripted_llm: ScriptedLLM, prefect_api: str) -> None:
    home = make_home(llm=scripted_llm, lang="en", METNOS_POLICY_APPROVAL_TIMEOUT_S="1")
    async with gateway_client(home) as client:
        body = await ask_move(client, home, scripted_llm)
        turn = await wait_status(client, body["turn_id"], "completed")
        assert turn["approvals"][0]["status"] == "expired"
        [expired] = turn["activity"]
        assert expired["status"] == "expired" and "decided in time" in expired["text"]
        resp = await client.post(f"/api/approvals/{body['approvals'][0]['approval_id']}",
                                 json={"decision": "approve"})
        assert resp.status_code == 409  # too late: it is not pending any more
    assert (home.workspace / "a.txt").exists()
    async with get_client() as prefect:
        run = await prefect.read_flow_run(UUID(body["flow_run_id"]))
        assert run.state is not None and run.state.is_completed()
    reasons = [(ln["decision"], ln["reason"], ln["outcome"]) for ln in audit_lines(home.path)]
    assert ("deny", "ERR_APPROVAL_EXPIRED", "expired") in reasons


async def test_plain_runner_waits_on_the_database(
        make_home: MakeHome, scripted_llm: ScriptedLLM) -> None:
    home = make_home(llm=scripted_llm, lang="en")
    async with gateway_client(home, prefect=False) as client:
        body = await ask_move(client, home, scripted_llm)
        assert body["status"] == "awaiting_approval"
        resp = await client.post(f"/api/approvals/{body['approvals'][0]['approval_id']}",
                                 json={"decision": "approve"})
        assert resp.json()["resumed"] is False  # nothing to resume: the turn polls the row
        await wait_status(client, body["turn_id"], "completed")
    assert (home.workspace / "b.txt").exists()
