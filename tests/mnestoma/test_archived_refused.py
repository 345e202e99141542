"""An archived executor has left the pool: a model that still calls it is refused by the step
checker, with its audit line, and nothing runs; restoring it brings it back (SPEC §7.5–7.6)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from metnos.testing.llm_server import ScriptedLLM
from tests.gateway.test_turns import wait_closed
from tests.support.home import MakeHome, gateway_client


def audit_lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


async def _read_after(client: httpx.AsyncClient, llm: ScriptedLLM, move: str, why: str,
                      call_id: str, reply: str) -> dict[str, Any]:
    """`move` (archive, restore) fs_read, then a turn whose model reads note.txt: the turn."""
    resp = await client.post(f"/api/evolution/executors/fs_read/{move}", json={"why": why})
    assert resp.status_code == 200, resp.text
    llm.enqueue_tool_call("fs_read", {"path": "note.txt"}, call_id=call_id)
    llm.enqueue_text(reply)
    body = (await client.post("/api/turns", json={"text": "read note.txt"})).json()
    return await wait_closed(client, body["turn_id"])


async def test_a_call_to_an_archived_executor_is_refused_and_audited(
        make_home: MakeHome, scripted_llm: ScriptedLLM, prefect_api: str) -> None:
    home = make_home(llm=scripted_llm, lang="en")
    (home.workspace / "note.txt").write_text("milk, eggs\n")
    async with gateway_client(home, prefect=False) as client:
        turn = await _read_after(client, scripted_llm, "archive", "never used here", "c1",
                                 "I could not read it.")
        [step] = turn["steps"]
        assert (step["executor"], step["outcome"], step["error_key"]) == (
            "fs_read", "refused", "ERR_EXECUTOR_ARCHIVED")
        [_, second] = scripted_llm.requests
        told = [m for m in second["messages"] if m.get("role") == "tool"]
        assert "archived" in told[0]["content"]  # the model is told why, in words
        lines = audit_lines(home.workspace / ".audit" / "audit.jsonl")
        assert any(line.get("action") == "fs_read" and line.get("reason")
                   == "ERR_EXECUTOR_ARCHIVED" for line in lines)

        turn = await _read_after(client, scripted_llm, "restore", "needed again", "c2",
                                 "milk, eggs")
        assert [s["outcome"] for s in turn["steps"]] == ["done"]
