"""What a reminder refuses, in the user's words: a time past, too far or unreadable, a text
too long (the executor, run directly and through a turn), and a scheduler that does not answer
(the reminder is not kept half-set)."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from metnos.features.reminders import outbox
from metnos.ground import i18n
from metnos.ground.db.engine import database_url, in_session, make_engine
from metnos.testing.executors import direct_argv
from metnos.testing.llm_server import ScriptedLLM
from tests.executors.conftest import REPO_EXECUTORS
from tests.gateway.test_turns import wait_closed
from tests.reminders.test_channels import _all, gateway
from tests.support.home import MakeHome


def run(args: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    """The executor's main.py run directly (production runs it in bwrap)."""
    proc = subprocess.run(direct_argv(REPO_EXECUTORS / "reminder_set" / "main.py"),
                          input=json.dumps({"args": args}).encode(), capture_output=True,
                          cwd=tmp_path, timeout=20, env={}, check=True)
    reply: dict[str, Any] = json.loads(proc.stdout)
    return reply


def later(**delta: float) -> str:
    return (datetime.now(UTC) + timedelta(**delta)).astimezone().isoformat()


@pytest.mark.parametrize(("args", "key"), [
    ({"text": "x", "at": later(minutes=-1)}, "ERR_REMINDER_TIME_PAST"),
    ({"text": "x", "at": later(days=400)}, "ERR_REMINDER_TIME_TOO_FAR"),
    ({"text": "x", "at": "stasera"}, "ERR_REMINDER_TIME_INVALID"),
    ({"text": "x", "at": "2030-01-01T10:00:00"}, "ERR_REMINDER_TIME_INVALID"),  # no offset
    ({"text": "x" * 201, "at": later(hours=1)}, "ERR_REMINDER_TEXT_TOO_LONG"),
    ({"text": "  ", "at": later(hours=1)}, "ERR_EXECUTOR_ARG_INVALID"),
    ({"text": "x", "at": later(hours=1), "to": "mallory"}, "ERR_EXECUTOR_ARG_INVALID"),
])
def test_refused(args: dict[str, Any], key: str, tmp_path: Path) -> None:
    reply = run(args, tmp_path)
    assert reply["ok"] is False and reply["error"]["key"] == key
    for lang in ("it", "en"):  # every refusal reads in both languages
        assert i18n.get(key, lang, **reply["error"]["vars"]) != key


def test_a_good_reminder_gets_an_id(tmp_path: Path) -> None:
    at = later(minutes=5)
    reply = run({"text": "  spegnere   il forno ", "at": at}, tmp_path)
    assert reply["ok"] is True
    result = reply["result"]
    assert result["text"] == "spegnere il forno"
    assert datetime.fromisoformat(result["at"]) == datetime.fromisoformat(at).replace(
        microsecond=0)
    assert len(result["reminder_id"]) == 32


async def test_a_model_asking_for_a_past_time_is_told_why(
        make_home: MakeHome, scripted_llm: ScriptedLLM, prefect_api: str) -> None:
    home = make_home(llm=scripted_llm, lang="en")
    scripted_llm.enqueue_tool_call("reminder_set", {"text": "call mum",
                                                    "at": later(hours=-2)})
    scripted_llm.enqueue_text("That time has passed.")
    async with gateway(home) as client:
        resp = await client.post("/api/turns", json={"text": "remind me to call mum at 8"})
        turn = await wait_closed(client, resp.json()["turn_id"])
    [item] = [a for a in turn["activity"] if a["executor"] == "reminder_set"]
    assert item["status"] == "failed" and "already passed" in item["text"]
    sent_back = scripted_llm.requests[1]["messages"][-1]
    assert sent_back["role"] == "tool" and "already passed" in sent_back["content"]
    engine = make_engine(database_url(home.settings))
    assert _all(engine) == []  # nothing scheduled
    engine.dispose()


async def test_a_scheduler_that_does_not_answer_keeps_nothing_half_set(
        make_home: MakeHome, prefect_api: str) -> None:
    home = make_home(lang="en", METNOS_REMINDERS_DEPLOYMENT="reminder/not-served")
    async with gateway(home) as client:
        resp = await client.post("/api/turns",
                                 json={"text": "remind me in 10 minutes to take the cake out"})
        turn = await wait_closed(client, resp.json()["turn_id"])
    [item] = [a for a in turn["activity"] if a["executor"] == "reminder_set"]
    assert item["status"] == "failed" and not item["undo"]
    assert item["text"] == i18n.get("ERR_REMINDER_NOT_SCHEDULED", "en")
    engine = make_engine(database_url(home.settings))
    [row] = _all(engine)
    assert row.cancelled_at is not None and row.flow_run_id is None
    assert in_session(engine, outbox.pending) == []
    engine.dispose()


async def test_a_gateway_without_a_scheduler_says_so(make_home: MakeHome,
                                                     prefect_api: str) -> None:
    """A reminder whose effect nobody carries out fails in words; it is never lost quietly."""
    from tests.support.home import gateway_client

    home = make_home(lang="it")
    async with gateway_client(home) as client:  # create_app alone: no with_reminders
        resp = await client.post("/api/turns", json={"text": "ricordami tra 5 minuti di uscire"})
        turn = await wait_closed(client, resp.json()["turn_id"])
    [item] = [a for a in turn["activity"] if a["executor"] == "reminder_set"]
    assert item["status"] == "failed" and not item["undo"]
    assert item["text"] == i18n.get("ERR_EXECUTOR_EFFECT_UNAVAILABLE", "it",
                                    executor="reminder_set")


def test_the_gateway_checks_the_result_again_before_scheduling() -> None:
    """Defence in depth: what the sandbox returns is checked on the host too."""
    from metnos.features.reminders.effect import checked_result

    now = datetime.now(UTC)
    good = {"reminder_id": "1b4e28ba-2fa1-11d2-883f-0016d3cca427",
            "at": (now + timedelta(minutes=5)).isoformat(), "text": " call\n grandma "}
    assert checked_result(good, now)[2] == "call grandma"
    for bad in ({**good, "at": (now - timedelta(hours=1)).isoformat()},
                {**good, "at": (now + timedelta(days=400)).isoformat()},
                {**good, "at": "2026-12-01T10:00:00"},  # no offset
                {**good, "text": "x" * 201}, {**good, "text": ["a"]}, {**good, "text": " "},
                {**good, "reminder_id": "../../etc"}, {"at": good["at"], "text": "a"}):
        with pytest.raises(ValueError):
            checked_result(bad, now)
