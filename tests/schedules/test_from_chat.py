"""A scheduled task asked for in a chat ("ogni lunedì alle 8 dimmi …"): the host reads the
cadence before the owner is asked, nothing is scheduled until the owner approves, then the
task is in the database and in Prefect (the real runner's `owner-task/scheduled`, the
session's Prefect server) bound to the chat; `undo` removes both. A "when" nobody can read is
refused before any approval; without a model the embedded planner takes the same sentence."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from metnos.features.schedules import store
from metnos.ground.db.engine import database_url, in_session, make_engine
from metnos.testing.llm_server import ScriptedLLM
from tests.approvals.test_approval_flow import wait_status
from tests.schedules.support import composed_api
from tests.schedules.test_owner_tasks import audit_actions, task_schedules
from tests.support.home import MakeHome
from tests.support.pg import free_port

ZONE = "Europe/Berlin"
TEXT = "dimmi cosa c'è nella lista della spesa"


async def _turn(api: httpx.AsyncClient, text: str, lang: str) -> dict[str, Any]:
    resp = await api.post("/api/turns", json={"text": text, "lang": lang})
    assert resp.status_code == 200, resp.text
    body: dict[str, Any] = resp.json()
    return body


@pytest.mark.timeout(300)
async def test_a_schedule_from_the_chat_waits_for_the_owner_and_undo_removes_it(
        make_home: MakeHome, scripted_llm: ScriptedLLM, prefect_api: str) -> None:
    home = make_home(llm=scripted_llm, lang="it", METNOS_TIMEZONE=ZONE,
                     METNOS_GATEWAY_PORT=str(free_port()))
    engine = make_engine(database_url(home.settings))
    # the model writes the cadence in English in an Italian chat: any active language reads
    scripted_llm.enqueue_tool_call("schedule_set", {"when": "every Monday at 8",
                                                    "text": TEXT})
    scripted_llm.enqueue_text("Fatto: ogni lunedì alle 8 ti dico la lista della spesa.")
    async with composed_api(home, deployed=True) as api:
        body = await _turn(api, "ogni lunedì alle 8 dimmi cosa c'è nella lista della spesa",
                           "it")
        assert body["status"] == "awaiting_approval", body
        [card] = body["approvals"]
        assert card["executor"] == "schedule_set", card
        shown = json.dumps(card, ensure_ascii=False)
        assert "0 8 * * 1" in shown and TEXT in shown, shown  # the exact schedule is asked
        assert in_session(engine, store.active) == []  # nothing before the owner says yes
        resp = await api.post(f"/api/approvals/{card['approval_id']}",
                              json={"decision": "approve"})
        assert resp.status_code == 200, resp.text
        turn = await wait_status(api, body["turn_id"], "completed", timeout_s=60)
        [task] = in_session(engine, store.active)
        assert (task.cron, task.timezone, task.lang, task.text) == (
            "0 8 * * 1", ZONE, "it", TEXT)
        assert task.action_id and task.when_text == "every Monday at 8"
        assert task.channel == "cli" and task.address == body["session_id"]
        [schedule] = await task_schedules(task.id)
        assert schedule.parameters == {"task_id": task.id}  # type: ignore[attr-defined]
        tool_result = scripted_llm.requests[-1]["messages"][-1]["content"]
        assert "0 8 * * 1" in tool_result and task.id in tool_result, tool_result
        assert turn["reply"].startswith("Fatto"), turn
        undone = await api.post(f"/api/actions/{task.action_id}/undo")
        assert undone.status_code == 200, undone.text
        assert TEXT in undone.json()["message"]
        # "undo the undo" is offered only for a real action: a removed task has none
        report = undone.json()
        assert report["redo"] is False and report["undo_id"] not in report["message"]
        assert "metnos undo" not in report["message"]
        again = await api.post(f"/api/actions/{task.action_id}/undo")
        assert again.status_code == 409, again.text
        assert in_session(engine, store.active) == [] and await task_schedules(task.id) == []
    engine.dispose()
    lines = [(a.get("action"), a.get("decision"), a.get("outcome"))
             for a in audit_actions(home.path)
             if a.get("action") in ("schedule_set", "undo")]
    assert ("schedule_set", "allow", "done") in lines
    assert lines[-2:] == [("undo", "allow", "done"), ("undo", "deny", "refused")], lines


@pytest.mark.timeout(300)
async def test_a_when_nobody_can_read_is_refused_before_asking(
        make_home: MakeHome, scripted_llm: ScriptedLLM, prefect_api: str) -> None:
    home = make_home(llm=scripted_llm, lang="en", METNOS_GATEWAY_PORT=str(free_port()))
    scripted_llm.enqueue_tool_call("schedule_set", {"when": "whenever it suits you",
                                                    "text": "tell me a joke"})
    scripted_llm.enqueue_text("I could not set that up.")
    async with composed_api(home) as api:
        body = await _turn(api, "tell me a joke whenever it suits you", "en")
        assert body["status"] == "completed" and body["approvals"] == [], body
    told = scripted_llm.requests[-1]["messages"][-1]["content"]
    assert "whenever it suits you" in told and "every Monday at 8" in told, told
    engine = make_engine(database_url(home.settings))
    assert in_session(engine, store.active) == []
    engine.dispose()
    [line] = [a for a in audit_actions(home.path) if a.get("action") == "schedule_set"]
    assert (line["decision"], line["reason"]) == ("deny", "ERR_SCHEDULE_WHEN_UNKNOWN")


@pytest.mark.timeout(300)
async def test_without_a_model_the_embedded_planner_asks_for_the_same_schedule(
        make_home: MakeHome, prefect_api: str) -> None:
    home = make_home(lang="en", METNOS_GATEWAY_PORT=str(free_port()))
    async with composed_api(home) as api:
        body = await _turn(api, "every weekday at 7:30 tell me what's on the shopping list",
                           "en")
        assert body["status"] == "awaiting_approval", body
        [card] = body["approvals"]
        shown = json.dumps(card, ensure_ascii=False)
        assert card["executor"] == "schedule_set" and "30 7 * * 1-5" in shown, shown
        assert "tell me what's on the shopping list" in shown, shown  # every word
        resp = await api.post(f"/api/approvals/{card['approval_id']}",
                              json={"decision": "deny"})
        assert resp.status_code == 200, resp.text
    engine = make_engine(database_url(home.settings))
    assert in_session(engine, store.active) == []
    engine.dispose()
