"""Races through the real gateway: concurrent turns against the rate limit (the Prefect turn
flow, approvals in between), concurrent requests creating the same new session."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx
from sqlmodel import select

from metnos.ground import i18n
from metnos.ground.db import models
from metnos.ground.db.engine import session as db_session
from metnos.testing.llm_server import ScriptedLLM, ToolCall
from tests.approvals.test_approval_flow import wait_status
from tests.gateway.test_turns import audit_lines
from tests.support.home import MakeHome, gateway_client


async def _turns(client: httpx.AsyncClient, llm: ScriptedLLM, n: int) -> list[dict[str, Any]]:
    """`n` turns at once, each writing a file of its own (an approved write must not change
    the file another approval is bound to). Each turn has its own route in the scripted
    model (its call, then its final text), so concurrent turns never swap replies."""
    tokens = [uuid.uuid4().hex for _ in range(n)]
    for token in tokens:
        llm.route(token, ToolCall("fs_write", {"path": f"{token}.txt", "content": "hi\n"}),
                  final_text=f"done {token}")
    replies = await asyncio.gather(*[
        client.post("/api/turns", json={"text": f"write note {token}", "lang": "en"})
        for token in tokens])
    assert all(r.status_code == 200 for r in replies), [r.text for r in replies]
    return [r.json() for r in replies]


async def _decide(client: httpx.AsyncClient, body: dict[str, Any], decision: str) -> None:
    [pending] = body["approvals"]
    resp = await client.post(f"/api/approvals/{pending['approval_id']}",
                             json={"decision": decision})
    assert resp.status_code == 200, resp.text
    await wait_status(client, body["turn_id"], "completed")


async def test_concurrent_turns_cannot_pass_the_rate_limit(
        make_home: MakeHome, scripted_llm: ScriptedLLM, prefect_api: str) -> None:
    """Six turns at once, each with a step that waits for the owner, under a limit of 3:
    the run is reserved before the wait, so only three ever wait; a denied one gives its
    run back."""
    home = make_home(llm=scripted_llm, lang="en", METNOS_POLICY_MAX_ACTIONS_PER_HOUR="3")
    async with gateway_client(home) as client:
        bodies = await _turns(client, scripted_llm, 6)
        waiting = [b for b in bodies if b["status"] == "awaiting_approval"]
        refused = [b for b in bodies if b["status"] != "awaiting_approval"]
        assert len(waiting) == 3, [b["status"] for b in bodies]
        for body in refused:  # refused by the hour's budget, said beside the model's words
            assert body["status"] == "completed", body
            [item] = body["activity"]
            assert item["status"] == "refused" and "hour" in item["text"], item
        await _decide(client, waiting[0], "approve")
        await _decide(client, waiting[1], "approve")
        await _decide(client, waiting[2], "deny")  # its run goes back to the hour's budget

        again = await _turns(client, scripted_llm, 3)
        assert sorted(b["status"] for b in again) == [
            "awaiting_approval", "completed", "completed"]
        [last] = [b for b in again if b["status"] == "awaiting_approval"]
        await _decide(client, last, "deny")
    lines = [(ln["action"], ln["decision"], ln["reason"], ln["outcome"])
             for ln in audit_lines(home.path) if ln["action"] == "fs_write"]
    assert sum(ln[3] == "done" for ln in lines) == 2  # never more runs than the limit
    assert sum(ln[2] == "ERR_POLICY_RATE_LIMIT" for ln in lines) == 5
    assert sum(ln[1] == "ask" for ln in lines) == 4


async def test_concurrent_requests_share_one_new_session(
        make_home: MakeHome, prefect_api: str) -> None:
    home = make_home(lang="en")
    async with gateway_client(home, prefect=False) as client:
        for _ in range(3):
            session_id = f"shared-{uuid.uuid4().hex[:12]}"
            replies = await asyncio.gather(*[
                client.post("/api/turns", json={"text": "find *.md", "session_id": session_id})
                for _ in range(8)])
            assert [r.status_code for r in replies] == [200] * 8, [r.text for r in replies]
            assert {r.json()["session_id"] for r in replies} == {session_id}
            engine = client.app.state.gateway.service.engine  # type: ignore[attr-defined]
            with db_session(engine) as db:
                rows = db.exec(select(models.ChatSession).where(
                    models.ChatSession.id == session_id)).all()
                turns = db.exec(select(models.Turn).where(
                    models.Turn.session_id == session_id)).all()
            assert len(rows) == 1 and len(turns) == 8


async def test_a_failed_llm_call_gives_its_reservation_back(
        make_home: MakeHome, scripted_llm: ScriptedLLM, prefect_api: str) -> None:
    """A cap that holds one call's reservation: a call that fails must give it back, or the
    next turn would find the day's budget spent."""
    home = make_home(llm=scripted_llm, lang="en", METNOS_POLICY_MAX_LLM_COST_PER_DAY_USD="0.05",
                     METNOS_POLICY_LLM_CALL_RESERVE_USD="0.05")
    scripted_llm.enqueue_error(400, "scripted refusal")  # not transient: no retry
    scripted_llm.enqueue_text("hello again")
    async with gateway_client(home) as client:
        failed = (await client.post("/api/turns", json={"text": "hi", "lang": "en"})).json()
        # the embedded planner answered instead, and said so (issue 26)
        assert failed["status"] == "completed", failed
        assert i18n.get("MSG_TURN_NO_MODEL", "en") in failed["reply"]
        answered = (await client.post("/api/turns", json={"text": "hi", "lang": "en"})).json()
    assert answered["status"] == "completed" and answered["reply"] == "hello again", answered
    assert len(scripted_llm.requests) == 2  # the second turn reached the model
    assert not [ln for ln in audit_lines(home.path) if ln["reason"] == "ERR_POLICY_COST_CAP"]
