"""Approve and deny in the middle of a three-step agent-loop turn, from the API and from the
Prefect UI (the paused flow run resumed with the form's values); the loop goes on with the
step's result or with the denial. The same turn is driven from Telegram's inline buttons
(tests/telegram/test_loop_approvals.py) and from the web chat's WebSocket
(tests/webchat/test_loop_approvals.py), with the helpers here.

The turn, Supervised: the model reads a note (fs_read), asks to write another one (fs_write:
it asks the owner: an acting step, and outside data was read), lists the notes (fs_find),
then answers in text. Approved, the write ran, its result was in the model's next request
and the listing shows the new file; denied, the model's next request carries "denied by the
owner: <reason>" (MSG_AGENT_DENIED) and the turn still goes on to the listing and completes.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from prefect.client.orchestration import get_client
from prefect.flow_runs import aresume_flow_run
from sqlalchemy.engine import Engine

from metnos.ground import i18n
from metnos.ground.db import models
from metnos.ground.db.engine import session as db_session
from metnos.testing.llm_server import ScriptedLLM
from tests.approvals.test_approval_flow import paused, wait_status
from tests.gateway.test_turns import audit_lines
from tests.support.home import Home, MakeHome, gateway_client

TODO = "call mum about sunday\n"
DONE = "called mum: sunday at noon\n"
FINAL = "I read your note, handled the write you decided on, and listed your notes."
ASK_TEXT = "read my todo note, write what I did into notes/done.md, then list my notes"


def prepare(home: Home, llm: ScriptedLLM) -> None:
    """The workspace note and the model's script: three calls, one per model message, and
    the final text (a turn of its own: the queue is only this turn's)."""
    (home.workspace / "notes").mkdir()
    (home.workspace / "notes" / "todo.md").write_text(TODO)
    llm.enqueue_tool_call("fs_read", {"path": "notes/todo.md"}, call_id="c-read")
    llm.enqueue_tool_call("fs_write", {"path": "notes/done.md", "content": DONE},
                          call_id="c-write")
    llm.enqueue_tool_call("fs_find", {"pattern": "*.md", "path": "notes"}, call_id="c-find")
    llm.enqueue_text(FINAL)


def tool_result(request: dict[str, Any], call_id: str) -> str:
    [message] = [m for m in request["messages"]
                 if m.get("role") == "tool" and m.get("tool_call_id") == call_id]
    content = str(message["content"])
    assert "<untrusted-data" in content  # every result is data for the model, never orders
    return content


def check_waiting(body: dict[str, Any]) -> str:
    """The turn as the channel first sees it: the read done, the write waiting. Its id."""
    assert body["status"] == "awaiting_approval", body
    [pending] = body["approvals"]
    assert pending["executor"] == "fs_write"
    assert pending["args"]["path"] == "notes/done.md" and pending["args"]["content"] == DONE
    assert pending["sources"] == ["fs_read (notes/todo.md)"]  # the read outside data, named
    assert [(a["executor"], a["status"]) for a in body["activity"]] == [("fs_read", "done")]
    return str(pending["approval_id"])


def check_continued(home: Home, llm: ScriptedLLM, turn: dict[str, Any], approval_id: str,
                    decision: str, reason: str) -> None:
    """After the decision: what the model was told, what ran, how the turn ended."""
    done = home.workspace / "notes" / "done.md"
    assert len(llm.requests) == 4, [r["messages"][-1] for r in llm.requests]
    assert all("tools" in r for r in llm.requests)  # the loop went on, never a budget stop
    assert "call mum about sunday" in tool_result(llm.requests[1], "c-read")
    wrote = tool_result(llm.requests[2], "c-write")
    listed = tool_result(llm.requests[3], "c-find")
    assert "notes/todo.md" in listed
    statuses = [(a["executor"], a["status"]) for a in turn["activity"]]
    if decision == "approve":
        assert done.read_text() == DONE
        assert json.loads(_data(wrote))["status"] == "done"  # its result, back to the model
        assert "notes/done.md" in listed  # the step after it sees what it did
        assert statuses == [("fs_read", "done"), ("fs_write", "done"), ("fs_find", "done")]
        assert turn["activity"][1]["undo"] and turn["activity"][1]["action_id"]
    else:
        assert not done.exists()
        said = json.loads(_data(wrote))
        assert said["status"] == "denied"
        assert said["error"] == i18n.get("MSG_AGENT_DENIED", "en", reason=reason)
        assert "notes/done.md" not in listed
        assert statuses == [("fs_read", "done"), ("fs_write", "denied"), ("fs_find", "done")]
        assert turn["activity"][1]["action_id"] is None and not turn["activity"][1]["undo"]
    assert turn["activity"][1]["approval_id"] == approval_id
    assert turn["status"] == "completed" and turn["reply"] == FINAL
    assert turn["stop_reason"] is None
    outcome = "done" if decision == "approve" else "refused"
    assert [(s["seq"], s["executor"], s["think"], s["seen"], s["outcome"])
            for s in turn["steps"]] == [
        (1, "fs_read", 1, [], "done"), (2, "fs_write", 2, [1], outcome),
        (3, "fs_find", 3, [1, 2], "done")]
    writes = [(ln["decision"], ln["outcome"]) for ln in audit_lines(home.path)
              if ln["action"] == "fs_write"]
    assert writes == ([("ask", "awaiting_approval"), ("allow", "done")]
                      if decision == "approve" else
                      [("ask", "awaiting_approval"), ("deny", "denied")])


def _data(wrapped: str) -> str:
    """The JSON inside the untrusted-data envelope of a tool result."""
    start, end = wrapped.index("{"), wrapped.rindex("}")
    return wrapped[start:end + 1]


def stored_turn(engine: Engine, turn_id: str) -> dict[str, Any]:
    """The turn as its record keeps it (for channels whose user is not the API's owner)."""
    with db_session(engine) as db:
        row = models.get_turn(db, turn_id)
        assert row is not None
        steps = [{"seq": s.seq, "executor": s.executor, "think": s.think, "seen": s.seen,
                  "outcome": s.outcome} for s in models.turn_steps(db, turn_id)]
        return {"status": row.status, "reply": row.reply, "activity": row.activity or [],
                "stop_reason": row.stop_reason, "steps": steps,
                "finished_at": row.finished_at}


@pytest.fixture
def home(make_home: MakeHome, scripted_llm: ScriptedLLM, prefect_api: str) -> Home:
    return make_home(llm=scripted_llm, lang="en", autonomy="Supervised")


async def _ask(client: httpx.AsyncClient, home: Home, llm: ScriptedLLM
               ) -> tuple[dict[str, Any], str]:
    prepare(home, llm)
    resp = await client.post("/api/turns", json={"text": ASK_TEXT, "lang": "en"})
    assert resp.status_code == 200, resp.text
    body: dict[str, Any] = resp.json()
    approval_id = check_waiting(body)
    assert not (home.workspace / "notes" / "done.md").exists()  # nothing written yet
    await paused(body["flow_run_id"])  # the flow run waits, visible in the Prefect UI
    return body, approval_id


@pytest.mark.parametrize(("decision", "reason"), [("approve", ""), ("deny", "not today")])
async def test_decided_through_the_api_the_loop_goes_on(
        home: Home, scripted_llm: ScriptedLLM, decision: str, reason: str) -> None:
    async with gateway_client(home) as client:
        body, approval_id = await _ask(client, home, scripted_llm)
        resp = await client.post(f"/api/approvals/{approval_id}",
                                 json={"decision": decision, "reason": reason or None})
        assert resp.status_code == 200, resp.text
        assert resp.json()["resumed"] is True
        turn = await wait_status(client, body["turn_id"], "completed")
    check_continued(home, scripted_llm, turn, approval_id, decision, reason)
    assert turn["approvals"][0]["via"] == "api"


@pytest.mark.parametrize(("decision", "reason"), [("approve", ""), ("deny", "wrong file")])
async def test_decided_in_the_prefect_ui_the_loop_goes_on(
        home: Home, scripted_llm: ScriptedLLM, decision: str, reason: str) -> None:
    async with gateway_client(home) as client:
        body, approval_id = await _ask(client, home, scripted_llm)
        run = await paused(body["flow_run_id"])
        await aresume_flow_run(run.id, run_input={"decision": decision, "reason": reason})
        turn = await wait_status(client, body["turn_id"], "completed")
    check_continued(home, scripted_llm, turn, approval_id, decision, reason or "-")
    assert turn["approvals"][0]["via"] == "prefect-ui"
    async with get_client() as prefect:  # the same flow run went on to its end
        run = await prefect.read_flow_run(run.id)
        assert run.state is not None and run.state.is_completed()
