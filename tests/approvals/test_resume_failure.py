"""A decision whose resume fails (a real failure of the Prefect API, no stand-in): the decision
stays recorded, the resume is retried while the failure may pass, and the caller is told in
their language with the approval's state, never a silent success."""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

import httpx
import pytest
from prefect.settings import PREFECT_API_URL, temporary_settings

import flows._resume
from metnos.ground.db.engine import session as db_session
from metnos.mechanisms import approvals
from metnos.mechanisms.approvals import NewApproval
from tests.gateway.test_turns import audit_lines, wait_closed
from tests.support.home import Home, MakeHome, gateway_client
from tests.support.pg import free_port


async def _finished_turn(client: httpx.AsyncClient) -> dict[str, Any]:
    """A turn that ran to its end as a Prefect flow run (the embedded planner answers)."""
    resp = await client.post("/api/turns", json={"text": "find *.md", "lang": "en"})
    assert resp.status_code == 200, resp.text
    turn = await wait_closed(client, resp.json()["turn_id"])
    assert turn["status"] == "completed" and turn["flow_run_id"]
    # the turn's row closes before its flow run's final state is set (the run's state is
    # named after the outcome, last): wait for that too, or the run is not finished yet
    from prefect import get_client

    async with get_client() as prefect:
        for _ in range(200):
            run = await prefect.read_flow_run(uuid.UUID(turn["flow_run_id"]))
            if run.state is not None and run.state.is_final():
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError(f"flow run {turn['flow_run_id']} never finished")
    return turn


def _approval(client: httpx.AsyncClient, turn: dict[str, Any], flow_run_id: str) -> str:
    """A pending approval bound to `flow_run_id`, recorded by the real service."""
    service = client.app.state.gateway.service  # type: ignore[attr-defined]
    new = NewApproval(turn_id=turn["turn_id"], session_id=turn["session_id"], user_id="owner",
                      channel="api", executor="fs_write", args={"path": "x.txt"}, files={},
                      digest="0" * 64, action_id=uuid.uuid4().hex, reason_key="MSG_X")
    with db_session(service.engine) as db:
        return approvals.create(db, new, timeout_s=600, flow_run_id=flow_run_id).id


def _told(resp: httpx.Response, approval_id: str, status: str) -> str:
    assert resp.status_code == 502, resp.text
    error = resp.json()["error"]
    assert error["key"] == "ERR_APPROVAL_RESUME_FAILED"
    assert approval_id in error["message"] and f"({status})" in error["message"]
    return str(error["message"])


def _recorded(home: Home, client: httpx.AsyncClient, approval_id: str, status: str) -> None:
    service = client.app.state.gateway.service  # type: ignore[attr-defined]
    with db_session(service.engine) as db:
        assert approvals.get(db, approval_id).status == status  # the decision stands
    [line] = [ln for ln in audit_lines(home.path) if ln["decision"] == "error"]
    assert (line["action"], line["reason"], line["outcome"], line["approval_id"]) == (
        "approval", "ERR_APPROVAL_RESUME_FAILED", status, approval_id)


@pytest.mark.parametrize("target", ["finished", "unknown"])
async def test_a_run_that_cannot_be_resumed_is_told_at_once(
        make_home: MakeHome, prefect_api: str, target: str) -> None:
    home = make_home(lang="en")
    async with gateway_client(home) as client:
        turn = await _finished_turn(client)
        run_id = turn["flow_run_id"] if target == "finished" else str(uuid.uuid4())
        approval_id = _approval(client, turn, run_id)
        resp = await client.post(f"/api/approvals/{approval_id}", json={"decision": "approve"},
                                 headers={"Accept-Language": "it"})
        message = _told(resp, approval_id, "approved")
        assert "Ho registrato la tua decisione" in message  # the caller's language
        _recorded(home, client, approval_id, "approved")


async def test_an_unreachable_prefect_api_is_retried_then_told(
        make_home: MakeHome, prefect_api: str, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    home = make_home(lang="en")
    monkeypatch.setattr(flows._resume, "RESUME_RETRY_S", 4.0)  # one attempt: ~1.6 s
    async with gateway_client(home) as client:
        turn = await _finished_turn(client)
        approval_id = _approval(client, turn, str(uuid.uuid4()))
        closed = f"http://127.0.0.1:{free_port()}/api"  # nothing listens there
        with temporary_settings(updates={PREFECT_API_URL: closed}), \
                caplog.at_level(logging.WARNING, logger="flows._resume"):
            resp = await client.post(f"/api/approvals/{approval_id}",
                                     json={"decision": "deny"})
        message = _told(resp, approval_id, "denied")
        assert "ConnectError" in message
        retries = [r for r in caplog.records
                   if r.name == "flows._resume" and r.getMessage().startswith("Retrying")]
        assert len(retries) >= 1, [r.getMessage() for r in caplog.records]  # tried again
        _recorded(home, client, approval_id, "denied")
