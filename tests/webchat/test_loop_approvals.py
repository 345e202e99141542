"""Approve and deny over the web chat's WebSocket (`WS /api/chat`, the browser's cookie) in
the middle of a three-step agent-loop turn run by Prefect's turn flow: the decision frame
resumes the paused run and the loop goes on with the step's result or with the denial (the
turn and its checks are in tests/approvals/test_loop_approvals.py)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
import websockets

from metnos.testing.llm_server import ScriptedLLM
from tests.approvals.test_loop_approvals import (
    ASK_TEXT,
    DONE,
    FINAL,
    check_continued,
    prepare,
)
from tests.gateway.test_turn_events import flow_gateway
from tests.support.home import MakeHome
from tests.support.pg import free_port
from tests.webchat.test_chat_socket import cookie_of, frames_until


@pytest.mark.parametrize(("decision", "reason"), [("approve", ""), ("deny", "not on sunday")])
async def test_a_decision_frame_in_the_middle_of_the_loop(
        make_home: MakeHome, scripted_llm: ScriptedLLM, prefect_api: str, decision: str,
        reason: str) -> None:
    home = make_home(llm=scripted_llm, lang="en", autonomy="Supervised",
                     METNOS_GATEWAY_PORT=str(free_port()))
    prepare(home, scripted_llm)
    port = home.settings.gateway.port
    with flow_gateway(home) as (base, _):
        headers = {"Cookie": f"metnos_session={cookie_of(home)}",
                   "Origin": f"http://127.0.0.1:{port}"}
        async with websockets.connect(f"ws://127.0.0.1:{port}/api/chat",
                                      additional_headers=headers) as socket:
            await socket.send(json.dumps({"type": "message", "text": ASK_TEXT, "lang": "en"}))
            before = await frames_until(socket, "approval")
            assert before[0]["type"] == "turn"
            card = before[-1]
            assert card["executor"] == "fs_write" and card["status"] == "pending"
            assert card["args"]["path"] == "notes/done.md" and card["args"]["content"] == DONE
            assert card["sources"] == ["fs_read (notes/todo.md)"]
            steps = [(f["executor"], f["state"]) for f in before if f["type"] == "step"]
            assert steps == [("fs_read", "started"), ("fs_read", "done")]
            assert not (home.workspace / "notes" / "done.md").exists()
            await socket.send(json.dumps({"type": "decision", "decision": decision,
                                          "approval_id": card["approval_id"],
                                          "reason": reason}))
            after = await frames_until(socket, "end")
        turn_id = before[0]["turn_id"]
        with httpx.Client(base_url=base, headers=home.auth(), timeout=60) as client:
            turn: dict[str, Any] = client.get(f"/api/turns/{turn_id}").json()
    steps = [(f["executor"], f["state"]) for f in after if f["type"] == "step"]
    ran = "done" if decision == "approve" else "refused"
    assert steps == [("fs_write", "started"), ("fs_write", "done"), ("fs_find", "started"),
                     ("fs_find", "done")] if decision == "approve" else \
        [("fs_write", ran), ("fs_find", "started"), ("fs_find", "done")]
    final = [f for f in after if f["type"] == "delta" and f["think"] == 4]
    assert "".join(f["text"] for f in final) == FINAL  # the answer streamed as it came
    [reply] = [f for f in after if f["type"] == "reply"]
    assert reply["text"] == FINAL and reply["activity"] == turn["activity"]
    assert after[-1] == {**after[-1], "type": "end", "status": "completed"}
    check_continued(home, scripted_llm, turn, card["approval_id"], decision, reason or "-")
    assert turn["approvals"][0]["via"] == "web"
