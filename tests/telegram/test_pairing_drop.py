"""The owner drops a stranger's pairing request from Telegram (issue 25, finding 10).

A stranger who gets a code is told to the owner's own chat, with a Drop button carrying only
the request's id; only the owner's tap drops it (the stranger then gets no new code for a
day, and the slot it held is free again). The real gateway and a fake Bot API.
"""

from __future__ import annotations

import html
from typing import Any

import httpx
import pytest

from metnos.faces.channels.telegram.bot import TelegramChannel
from metnos.features.pairing.models import PairingRequest
from metnos.ground import i18n
from metnos.ground.db.engine import session as db_session
from metnos.testing.llm_server import ScriptedLLM
from metnos.testing.telegram_server import Call, FakeTelegram
from tests.gateway.test_turns import audit_lines
from tests.support.home import Home, MakeHome
from tests.telegram.support import CODE, buttons, pair, telegram_gateway, until

OWNER = 7001
MEMBER = 7002
STRANGERS = (5551, 5552, 5553)
FOURTH = 5554
DROP_TEXT = {lang: i18n.get("MSG_TELEGRAM_BUTTON_PAIRING_DROP", lang) for lang in ("en", "it")}


def _notices(tg: FakeTelegram) -> list[Call]:
    """The messages to the owner with a Drop button."""
    return [c for c in tg.calls_of("sendMessage", OWNER)
            if any(str(b.get("callback_data", "")).startswith("pd:") for b in buttons(c))]


def _answers(tg: FakeTelegram, query_id: str) -> list[Call]:
    return [c for c in tg.calls_of("answerCallbackQuery")
            if c.params.get("callback_query_id") == query_id]


@pytest.fixture
def home(make_home: MakeHome, scripted_llm: ScriptedLLM, prefect_api: str) -> Home:
    return make_home(llm=scripted_llm, lang="en")


async def _pending(client: httpx.AsyncClient) -> dict[str, str]:
    """sender id → pending request id."""
    resp = await client.get("/api/pairing")
    assert resp.status_code == 200, resp.text
    return {p["sender_id"]: p["id"] for p in resp.json()["pending"]}


def _request(ch: TelegramChannel, request_id: str) -> dict[str, Any]:
    with db_session(ch.service.engine) as db:
        row = db.get(PairingRequest, request_id)
        assert row is not None
        return {"status": row.status, "dropped_by": row.dropped_by}


async def test_the_owner_is_told_of_a_stranger_and_drops_the_request(
        home: Home, telegram: FakeTelegram) -> None:
    tg = telegram
    async with telegram_gateway(home, tg, owner=OWNER) as (client, ch):
        tg.push_message(STRANGERS[0], "hi", language_code="it",
                        first_name="<b>Eve</b> \u202e&amp;", username="eve_<i>")
        for stranger in STRANGERS[1:]:
            tg.push_message(stranger, "hi", language_code="it")
        await until(tg, lambda t: len(_notices(t)) == 3, "three notices to the owner")
        pending = await _pending(client)
        assert set(pending) == {str(s) for s in STRANGERS}

        first = next(c for c in _notices(tg) if str(STRANGERS[0]) in str(c.params["text"]))
        text = str(first.params["text"])
        assert first.params.get("parse_mode") == "HTML"
        # the stranger's name is outside text: escaped, its bidi override gone
        assert "&lt;b&gt;Eve&lt;/b&gt;" in text and "<b>" not in text and "\u202e" not in text
        assert "&amp;amp;" in text and "eve_&lt;i&gt;" in text
        assert "metnos pair approve CODE" in text  # how to approve; the code itself is not here
        [stranger_code] = [CODE.search(s) for s in tg.sent_texts(STRANGERS[0])]
        assert stranger_code is not None and stranger_code.group(1) not in text
        [button] = buttons(first)
        assert button["text"] == DROP_TEXT["en"]
        assert button["callback_data"] == f"pd:{pending[str(STRANGERS[0])]}"

        # three slots held: a fourth stranger gets nothing
        tg.push_message(FOURTH, "let me in", language_code="en")

        def refused_fourth(_: FakeTelegram) -> bool:
            return any(ln["sender"] == str(FOURTH) and ln["reason"] ==
                       "ERR_PAIRING_TOO_MANY_PENDING" for ln in audit_lines(home.path))
        await until(tg, refused_fourth, "the fourth stranger refused")
        assert tg.sent_texts(FOURTH) == []

        # the owner taps Drop: dropped (audited), the notice says so
        query = tg.push_callback(OWNER, button["callback_data"], first.result["message_id"],
                                 language_code="en")
        await until(tg, lambda t: bool(_answers(t, query)), "the tap's answer")
        dropped_text = i18n.get("MSG_TELEGRAM_PAIRING_DROPPED", "en",
                                sender=str(STRANGERS[0]))

        def edits(t: FakeTelegram) -> list[Call]:
            return [c for c in t.calls_of("editMessageText", OWNER)
                    if str(c.params.get("message_id")) == str(first.result["message_id"])]
        await until(tg, lambda t: bool(edits(t)), "the notice edited")
        [edit] = edits(tg)
        assert html.unescape(str(edit.params["text"])) == dropped_text
        assert not buttons(edit)
        assert _request(ch, pending[str(STRANGERS[0])]) == {"status": "expired",
                                                              "dropped_by": "owner"}
        drops = [ln for ln in audit_lines(home.path) if ln["action"] == "pairing"
                 and str(ln["outcome"]).startswith("dropped")]
        assert [ln["outcome"] for ln in drops] == [f"dropped telegram:{STRANGERS[0]}"]

        # the dropped stranger is ignored for a day; the fourth now gets a code
        tg.push_message(STRANGERS[0], "again", language_code="it")
        tg.push_message(FOURTH, "let me in now", language_code="en")
        await until(tg, lambda t: bool(t.sent_texts(FOURTH)), "the fourth's code")
        assert CODE.search(tg.sent_texts(FOURTH)[0]) is not None
        assert len(tg.sent_texts(STRANGERS[0])) == 1
        # the two messages are handled side by side: the fourth's code may come first
        await until(tg, lambda t: any(
            ln["sender"] == str(STRANGERS[0]) and ln["reason"] == "ERR_PAIRING_DROPPED"
            for ln in audit_lines(home.path)), "the dropped stranger's message refused")
        await until(tg, lambda t: len(_notices(t)) == 4, "the fourth's notice")

        # a second tap on the same Drop: no longer pending, nothing else dropped
        again = tg.push_callback(OWNER, button["callback_data"], first.result["message_id"],
                                 language_code="en")
        await until(tg, lambda t: bool(_answers(t, again)), "the second tap's answer")
        [answer] = _answers(tg, again)
        assert answer.params["text"] == i18n.get("MSG_TELEGRAM_PAIRING_NOT_PENDING", "en")
        assert set(await _pending(client)) == {str(STRANGERS[1]), str(STRANGERS[2]),
                                               str(FOURTH)}


async def test_no_notice_when_the_owner_is_not_on_telegram(
        home: Home, telegram: FakeTelegram) -> None:
    async with telegram_gateway(home, telegram):
        telegram.push_message(STRANGERS[0], "hi", language_code="en")
        await until(telegram, lambda t: bool(t.sent_texts(STRANGERS[0])), "the code")
    sent = {str(c.params.get("chat_id")) for c in telegram.calls_of("sendMessage")}
    assert sent == {str(STRANGERS[0])}  # the first one to pair becomes the owner: nobody told


@pytest.mark.attack
async def test_only_the_owner_can_drop_a_pairing_request(
        home: Home, telegram: FakeTelegram) -> None:
    tg = telegram
    async with telegram_gateway(home, tg, owner=OWNER) as (client, ch):
        await pair(client, tg, MEMBER, language_code="en")
        tg.push_message(STRANGERS[0], "hi", language_code="en")
        await until(tg, lambda t: bool(t.sent_texts(STRANGERS[0])), "the stranger's code")
        request_id = (await _pending(client))[str(STRANGERS[0])]

        # the member, the stranger itself and another stranger forge the owner's Drop
        forgers = (MEMBER, STRANGERS[0], STRANGERS[1])
        queries = [tg.push_callback(who, f"pd:{request_id}", 1, language_code="en")
                   for who in forgers]
        for query in queries:
            await until(tg, lambda t, q=query: bool(_answers(t, q)), "the refusal")
            [refusal] = _answers(tg, query)
            assert refusal.params.get("show_alert") in (True, "true")
            assert refusal.params["text"] == i18n.get("ERR_TELEGRAM_PAIRING_OWNER_ONLY", "en")
        assert set(await _pending(client)) == {str(STRANGERS[0])}  # nothing dropped
        assert _request(ch, request_id) == {"status": "pending", "dropped_by": None}
        refused = [ln for ln in audit_lines(home.path) if ln["action"] == "pairing.drop"]
        assert sorted((ln["sender"], ln["decision"], ln["action_id"]) for ln in refused) == \
            sorted((str(who), "deny", request_id) for who in forgers)
        assert not tg.calls_of("editMessageText")

        # garbage in the button is not ours: refused as an invalid button, nothing dropped
        for data in (f"pd:{request_id}:x", "pd:" + "'; drop table--", "pd:"):
            query = tg.push_callback(OWNER, data, 1, language_code="en")
            await until(tg, lambda t, q=query: bool(_answers(t, q)), "the refusal")
        assert set(await _pending(client)) == {str(STRANGERS[0])}
