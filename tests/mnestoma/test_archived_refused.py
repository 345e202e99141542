"""An archived executor has left the pool: a model that still calls it is refused by the step
checker, with its audit line, and nothing runs; restoring it brings it back (SPEC §7.5–7.6)."""

from __future__ import annotations

import json
from pathlib import Path

from metnos.testing.llm_server import ScriptedLLM
from tests.gateway.test_turns import wait_closed
from tests.support.home import MakeHome, gateway_client


def audit_lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


async def test_a_call_to_an_archived_executor_is_refused_and_audited(
        make_home: MakeHome, scripted_llm: ScriptedLLM, prefect_api: str) -> None:
    home = make_home(llm=scripted_llm, lang="en")
    (home.workspace / "note.txt").write_text("milk, eggs\n")
    async with gateway_client(home, prefect=False) as client:
        resp = await client.post("/api/evolution/executors/fs_read/archive",
                                 json={"why": "never used here"})
        assert resp.status_code == 200, resp.text
        scripted_llm.enqueue_tool_call("fs_read", {"path": "note.txt"}, call_id="c1")
        scripted_llm.enqueue_text("I could not read it.")
        body = (await client.post("/api/turns", json={"text": "read note.txt"})).json()
        turn = await wait_closed(client, body["turn_id"])
        [step] = turn["steps"]
        assert (step["executor"], step["outcome"], step["error_key"]) == (
            "fs_read", "refused", "ERR_EXECUTOR_ARCHIVED")
        [_, second] = scripted_llm.requests
        told = [m for m in second["messages"] if m.get("role") == "tool"]
        assert "archived" in told[0]["content"]  # the model is told why, in words
        lines = audit_lines(home.workspace / ".audit" / "audit.jsonl")
        assert any(line.get("action") == "fs_read" and line.get("reason")
                   == "ERR_EXECUTOR_ARCHIVED" for line in lines)

        resp = await client.post("/api/evolution/executors/fs_read/restore",
                                 json={"why": "needed again"})
        assert resp.status_code == 200, resp.text
        scripted_llm.enqueue_tool_call("fs_read", {"path": "note.txt"}, call_id="c2")
        scripted_llm.enqueue_text("milk, eggs")
        body = (await client.post("/api/turns", json={"text": "read note.txt"})).json()
        turn = await wait_closed(client, body["turn_id"])
        assert [s["outcome"] for s in turn["steps"]] == ["done"]
