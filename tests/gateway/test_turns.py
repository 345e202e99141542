"""A real turn through the gateway, the Prefect `turn` flow, the policy and the sandbox."""

from __future__ import annotations

import asyncio
import json
import socket
from typing import Any

import httpx
import prefect.settings
import pytest
from prefect.client.orchestration import get_client

from metnos.testing.llm_server import ScriptedLLM
from tests.support.home import MakeHome, gateway_client

WORKSPACE_FILES = ["IDENTITY.md", "MEMORY.md", "RULES.md", "SOUL.md", "TELOS.md", "USER.md"]


def audit_lines(home_path) -> list[dict]:  # type: ignore[no-untyped-def]
    path = home_path / "workspace" / ".audit" / "audit.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    return [x for x in lines if x["action"] != "i18n.intent_policy"]  # one per start-up


async def wait_closed(client: httpx.AsyncClient, turn_id: str,
                      timeout_s: float = 10) -> dict[str, Any]:
    """The turn once its bookkeeping is done (it runs after the reply was sent)."""
    for _ in range(int(timeout_s / 0.05)):
        turn: dict[str, Any] = (await client.get(f"/api/turns/{turn_id}")).json()
        if turn["finished_at"]:
            return turn
        await asyncio.sleep(0.05)
    raise AssertionError(f"turn {turn_id} never closed: {turn}")


async def test_embedded_planner_finds_markdown_files_through_prefect(
        make_home: MakeHome, prefect_api: str) -> None:
    home = make_home()
    async with gateway_client(home) as client:
        resp = await client.post("/api/turns", json={"text": "cerca i file markdown nel workspace"})
        assert resp.status_code == 200, resp.text
        body = resp.json()
        assert body["status"] == "completed"
        for name in WORKSPACE_FILES:
            assert name in body["reply"]
        assert body["reply"].startswith("Ho trovato 6 file")
        assert body["flow_run_id"]  # the flow had started when the reply was streamed back
        turn_id = body["turn_id"]
        turn = await wait_closed(client, turn_id)
        assert turn["status"] == "completed"
        assert turn["flow_run_id"]
    async with get_client() as prefect:
        for _ in range(100):  # the run's name and state come after the turn is closed
            run = await prefect.read_flow_run(turn["flow_run_id"])
            if run.state is not None and run.state.is_final():
                break
            await asyncio.sleep(0.05)
        assert run.name.startswith("api · ") and run.name.endswith(" · fs_find")
        assert run.state is not None and run.state.is_completed()
        assert run.state.name == "Answered"
    lines = audit_lines(home.path)
    assert [(ln["action"], ln["decision"], ln["outcome"]) for ln in lines] == [
        ("fs_find", "allow", "done")]


async def test_scripted_llm_tool_call_reads_a_file(
        make_home: MakeHome, scripted_llm: ScriptedLLM, prefect_api: str) -> None:
    home = make_home(llm=scripted_llm, lang="en")
    (home.workspace / "note.md").write_text("buy milk\n")
    scripted_llm.enqueue_tool_call("fs_read", {"path": "note.md"})
    scripted_llm.enqueue_text("Your note says: buy milk.")
    async with gateway_client(home) as client:
        resp = await client.post("/api/turns", json={"text": "what is in my note?", "lang": "en"})
    body = resp.json()
    assert body["status"] == "completed", body
    assert body["reply"] == "Your note says: buy milk."
    assert [(a["executor"], a["status"]) for a in body["activity"]] == [("fs_read", "done")]
    result = scripted_llm.requests[1]["messages"][-1]  # the file went back to the model
    assert result["role"] == "tool" and "buy milk" in result["content"]
    offered = {t["function"]["name"] for t in scripted_llm.requests[0]["tools"]}
    # more than [evolution] route_above executors: the core, wish and what the message is about
    assert {"fs_find", "fs_read", "wish"} <= offered
    system = scripted_llm.requests[0]["messages"][0]["content"]
    assert "### IDENTITY.md" in system and "### RULES.md" in system  # the owner's files


async def test_unreachable_prefect_api_still_answers_the_user(
        make_home: MakeHome, monkeypatch: pytest.MonkeyPatch) -> None:
    """The flow cannot even start: the user gets an answer, the turn is closed as failed."""
    home = make_home(lang="en")
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there any more
    monkeypatch.setenv("PREFECT_API_URL", f"http://127.0.0.1:{port}/api")
    async with gateway_client(home) as client:
        with prefect.settings.temporary_settings(
                {prefect.settings.PREFECT_API_URL: f"http://127.0.0.1:{port}/api"}):
            resp = await client.post("/api/turns", json={"text": "list the files"})
        body = resp.json()
        assert body["status"] == "failed" and "logs/gateway.log" in body["reply"]
        turn = await wait_closed(client, body["turn_id"])
    assert turn["status"] == "failed"
    [line] = audit_lines(home.path)
    assert line["decision"] == "error" and line["reason"] == "ERR_INTERNAL_UNEXPECTED"


async def test_concurrent_turns_each_get_their_own_reply(
        make_home: MakeHome, prefect_api: str) -> None:
    home = make_home(lang="en")
    for i in range(5):
        (home.workspace / f"note{i}.md").write_text(f"content number {i}\n")
    async with gateway_client(home) as client:
        replies = await asyncio.gather(*[
            client.post("/api/turns", json={"text": f"read the file note{i}.md"})
            for i in range(5)])
        bodies = [r.json() for r in replies]
        for i, body in enumerate(bodies):
            assert body["status"] == "completed", body
            assert f"content number {i}" in body["reply"], body["reply"]
        closed = [await wait_closed(client, b["turn_id"]) for b in bodies]
    assert len({t["flow_run_id"] for t in closed}) == 5
