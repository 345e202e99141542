"""Issue 26, "degrade, never die": with the model server stopped, a family's everyday messages
("ciao", the time, a shopping-list change, a reminder) are still answered by the embedded
planner, through the gateway's HTTP API, the web chat's live channel and Telegram, each reply
saying once that the model is unreachable. A wrong key is a configuration error: named, with
its setting, to the owner; a family member gets the plain line. A model that keeps failing is
skipped by the next turns (the breaker), the head start included.

Real gateway, Prefect's turn flow, sandboxed executors, reminders scheduled on Prefect; the
model is a ScriptedLLM started and stopped (its port closed), or one that wants another key.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
import websockets

from flows.reminder import reminder
from metnos.ground import i18n
from metnos.testing.llm_server import ScriptedLLM
from metnos.testing.telegram_server import FakeTelegram
from tests.acceptance import family as F
from tests.acceptance.test_first_ten_minutes import TelegramChat, web_gateway
from tests.reminders.test_channels import gateway
from tests.support.home import MakeHome
from tests.support.pg import free_port
from tests.telegram.support import TOKEN, pair
from tests.webchat.test_chat_socket import cookie_of, frames_until

OWNER_CHAT, ANNA = 7101, 7102  # the first chat paired is the owner's; Anna is a member
UNREACHABLE = "MSG_TURN_NO_MODEL_UNREACHABLE"

Check = Callable[[str], list[str]]


@pytest.fixture
async def reminder_deployment(prefect_api: str) -> None:
    """The reminders' deployment, so a reminder can be scheduled (no runner: it stays so)."""
    deployment = await reminder.to_deployment(name="at")  # type: ignore[misc]
    await deployment.apply()


def model_at(base: str, key: str = "sk-test") -> dict[str, str]:
    return {"METNOS_LLM_MODEL": "openai/scripted", "METNOS_LLM_API_BASE": base,
            "METNOS_LLM_API_KEY": key, "METNOS_TIMEZONE": F.ZONE}


def telegram_env(tg: FakeTelegram) -> dict[str, str]:
    return {"METNOS_TELEGRAM_BOT_TOKEN": TOKEN, "METNOS_TELEGRAM_API_BASE": tg.base_url,
            "METNOS_TELEGRAM_POLL_TIMEOUT_S": "1"}


def noted(lang: str, key: str, check: Check) -> Check:
    """`check` on a reply that must also carry message `key` exactly once (taken out first)."""
    note = i18n.get(key, lang)

    def checked(reply: str) -> list[str]:
        said = reply.count(note)
        found = [] if said == 1 else [f"says {note!r} {said} times"]
        return found + check(reply.replace(note, "").strip())
    return checked


def everyday(family: F.Family, key: str | None) -> list[tuple[str, Check]]:
    """The four messages and what each reply must be (with the line `key`, once)."""
    asked = dt.datetime.now(dt.UTC)

    def clock(reply: str) -> list[str]:
        return F.clock(reply, family.lang, asked, dt.datetime.now(dt.UTC))

    checks: list[tuple[str, Check]] = [
        (family.greeting, lambda r: F.greeting(r, family.lang)), (family.time, clock),
        (family.add, lambda r: F.added(r, family)),
        (family.remind, lambda r: F.reminder_set(r, family))]
    if key is None:
        return [(text, check) for text, check in checks]
    return [(text, noted(family.lang, key, check)) for text, check in checks]


async def say_over_http(client: httpx.AsyncClient, text: str, check: Check) -> dict[str, Any]:
    resp = await client.post("/api/turns", json={"text": text})
    assert resp.status_code == 200, resp.text
    body: dict[str, Any] = resp.json()
    assert body["status"] == "completed", body
    found = check(body["reply"])
    assert not found, f"{text!r} → {body['reply']!r}: {found}"
    return body


async def test_without_a_model_the_four_messages_work_as_before(
        make_home: MakeHome, reminder_deployment: None) -> None:
    """The baseline: no model configured, no line about it."""
    family = F.FAMILIES["en"]
    home = make_home(lang="en", METNOS_TIMEZONE=F.ZONE)
    async with gateway(home) as client:
        for text, check in everyday(family, None):
            body = await say_over_http(client, text, check)
            assert i18n.get("MSG_TURN_NO_MODEL", "en") not in body["reply"]
        assert (await client.get("/healthz")).json()["model"] == "embedded"


async def test_the_model_server_stopped_over_the_http_api(
        make_home: MakeHome, stopped_base: str, reminder_deployment: None) -> None:
    family = F.FAMILIES["en"]
    home = make_home(lang="en", **model_at(stopped_base))
    async with gateway(home) as client:
        # the gateway probes the model beside its start: not tried yet, or found unreachable
        assert (await client.get("/healthz")).json()["model"] in ("unknown", "unreachable")
        for text, check in everyday(family, UNREACHABLE):
            await say_over_http(client, text, check)
        assert F.items_in(home.workspace / "lists" / family.file) == list(family.items)
        health = (await client.get("/healthz")).json()
        assert health["model"] == "unreachable"
        status = (await client.get("/api/status")).json()
        assert status["model"] == "unreachable" and stopped_base in status["line"]
        assert stopped_base in status["fix"]
        assert (await client.get("/api/status", headers={"Authorization": ""})).status_code \
            == 401  # the details are the owner's


async def test_a_failing_model_is_skipped_by_the_next_turns(
        make_home: MakeHome, scripted_llm: ScriptedLLM, prefect_api: str) -> None:
    """Every call answers 500: the first turn tries (with its retries) and falls back; the
    next turn goes straight to the planner, its head start included (no request at all)."""
    home = make_home(llm=scripted_llm, lang="en", METNOS_LLM_MAX_ATTEMPTS="2",
                     METNOS_TIMEZONE=F.ZONE)
    family = F.FAMILIES["en"]
    [(_, greet), (_, clock), *_] = everyday(family, UNREACHABLE)
    async with gateway(home) as client:
        await say_over_http(client, family.greeting, greet)
        assert len(scripted_llm.requests) == 2  # tried, retried once: then the planner
        await say_over_http(client, family.time, clock)
        assert len(scripted_llm.requests) == 2  # the breaker is open: not asked again


async def test_a_model_that_answers_nothing_is_answered_by_the_planner(
        make_home: MakeHome, scripted_llm: ScriptedLLM, prefect_api: str) -> None:
    """A 200 with nothing in it is no answer: the planner serves that turn, saying once that
    Metnos works without its model; the next turn asks the model again (it did answer)."""
    home = make_home(llm=scripted_llm, lang="en", METNOS_TIMEZONE=F.ZONE)
    family = F.FAMILIES["en"]
    [(_, greet), *_] = everyday(family, "MSG_TURN_NO_MODEL")
    scripted_llm.enqueue_text("")
    async with gateway(home) as client:
        await say_over_http(client, family.greeting, greet)
        asked = len(scripted_llm.requests)
        scripted_llm.enqueue_text("Hello again!")
        body = (await client.post("/api/turns", json={"text": "hello?"})).json()
        assert body["status"] == "completed" and "Hello again!" in body["reply"], body
        assert len(scripted_llm.requests) == asked + 1


async def test_a_wrong_key_is_a_configuration_error_for_the_owner_only(
        make_home: MakeHome, telegram: FakeTelegram, prefect_api: str) -> None:
    with ScriptedLLM(api_key="sk-right") as server:
        home = make_home(lang="it", **model_at(server.api_base, key="sk-wrong"),
                         **telegram_env(telegram))
        async with gateway(home) as client:
            body = await say_over_http(client, "ciao", lambda r: [])
            owner_sees = body["reply"]
            assert i18n.get("ERR_LLM_AUTH_FAILED", "it", model="openai/scripted",
                            status=401) in owner_sees
            assert i18n.get("MSG_MODEL_FIX_API_KEY", "it") in owner_sees
            assert "[llm] api_key" in owner_sees  # the setting to fix
            assert "sk-wrong" not in owner_sees
            status = (await client.get("/api/status")).json()
            assert (status["model"], status["setting"]) == ("misconfigured", "[llm] api_key")

            await pair(client, telegram, OWNER_CHAT, language_code="it")
            await pair(client, telegram, ANNA, language_code="it")
            chat = TelegramChat(telegram, ANNA, "it")
            plain = i18n.get("MSG_TURN_NO_MODEL", "it")
            _, member_sees = await chat.say("ciao", noted("it", "MSG_TURN_NO_MODEL", lambda r: (
                F.greeting(r, "it"))))
            assert plain in member_sees
            assert "[llm]" not in member_sees and "configurazione" not in member_sees
        assert server.requests == []  # refused at the door each time: no completion ran


async def test_the_model_server_stopped_on_telegram(
        make_home: MakeHome, stopped_base: str, telegram: FakeTelegram,
        reminder_deployment: None) -> None:
    family = F.FAMILIES["it"]
    home = make_home(lang="it", **model_at(stopped_base), **telegram_env(telegram))
    async with gateway(home) as client:
        await pair(client, telegram, ANNA, language_code="it")
        chat = TelegramChat(telegram, ANNA, "it")
        for text, check in everyday(family, UNREACHABLE):
            await chat.say(text, check)
    assert F.items_in(home.workspace / "lists" / family.file) == list(family.items)


async def test_the_model_server_stopped_in_the_web_chats_live_channel(
        make_home: MakeHome, stopped_base: str, reminder_deployment: None) -> None:
    family = F.FAMILIES["it"]
    home = make_home(lang="it", METNOS_GATEWAY_PORT=str(free_port()), **model_at(stopped_base))
    async with web_gateway(home) as base:
        headers = {"Cookie": f"metnos_session={cookie_of(home)}", "Origin": base}
        url = base.replace("http://", "ws://") + "/api/chat"
        async with websockets.connect(url, additional_headers=headers) as socket:
            session: str | None = None
            for text, check in everyday(family, UNREACHABLE):
                await socket.send(json.dumps({"type": "message", "text": text,
                                              "session_id": session}))
                frames = await frames_until(socket, "end")
                session = frames[0]["session_id"]
                [reply] = [f for f in frames if f["type"] == "reply"]
                found = check(_with_activity(reply))
                assert not found, f"{text!r} → {reply['text']!r}: {found}"
        async with httpx.AsyncClient(base_url=base) as anyone:
            assert (await anyone.get("/healthz")).json()["model"] == "unreachable"
    assert F.items_in(home.workspace / "lists" / family.file) == list(family.items)


def _with_activity(reply: dict[str, Any]) -> str:
    """The reply as the page shows it: its text, then what ran beside it."""
    lines = [str(item.get("text", "")) for item in reply.get("activity") or []]
    return "\n".join([str(reply["text"]), *lines])


@pytest.mark.parametrize(("status", "key"), [(500, "MSG_AGENT_STOP_MODEL_LOST"),
                                              (401, "MSG_AGENT_STOP_MODEL_CONFIG")])
async def test_a_model_lost_after_a_step_ran_keeps_the_step_and_says_so_plainly(
        make_home: MakeHome, scripted_llm: ScriptedLLM, prefect_api: str,
        status: int, key: str) -> None:
    """The loop's stop, as before, in plain words: no "technical details", and a
    configuration error's setting to the owner."""
    home = make_home(llm=scripted_llm, lang="en", METNOS_LLM_MAX_ATTEMPTS="2")
    scripted_llm.enqueue_tool_call("fs_find", {"pattern": "*.md"})
    for _ in range(2):
        scripted_llm.enqueue_error(status, "gone")
    async with gateway(home) as client:
        resp = await client.post("/api/turns", json={"text": "find my notes"})
    body = resp.json()
    assert body["status"] == "completed" and body["stop_reason"] == key, body
    assert [(a["executor"], a["status"]) for a in body["activity"]] == [("fs_find", "done")]
    assert "Technical details" not in body["reply"]
    assert ("METNOS_LLM_API_KEY" in body["reply"]) is (status == 401)
    assert i18n.get(UNREACHABLE, "en") not in body["reply"]  # not the planner's fallback
