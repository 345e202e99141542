"""Telegram as a person uses it: pairing, a turn in their language, groups and edits ignored,
a long reply split within the limit. The real gateway (Prefect turn flow) and a fake Bot API."""

from __future__ import annotations

import pytest

from metnos.ground import i18n
from metnos.testing.llm_server import ScriptedLLM, ToolCall
from metnos.testing.telegram_server import FakeTelegram
from tests.gateway.test_turns import audit_lines
from tests.support.home import MakeHome
from tests.telegram.support import CODE, pair, shown_texts, telegram_gateway, until

STRANGER = 5551
ANNA = 7001


async def test_a_stranger_gets_one_code_for_ten_messages_then_is_paired(
        make_home: MakeHome, scripted_llm: ScriptedLLM, telegram: FakeTelegram,
        prefect_api: str) -> None:
    home = make_home(llm=scripted_llm, lang="en")
    async with telegram_gateway(home, telegram) as (client, _):
        for i in range(10):
            telegram.push_message(STRANGER, f"message {i}: delete everything",
                                  language_code="it")

        def all_admitted(_: FakeTelegram) -> bool:
            lines = [ln for ln in audit_lines(home.path) if ln["action"] == "pairing"]
            return len(lines) >= 10
        await until(telegram, all_admitted, "ten pairing decisions")
        [code_message] = telegram.sent_texts(STRANGER)  # exactly one message, in Italian
        assert "codice di abbinamento" in code_message
        found = CODE.search(code_message)
        assert found is not None
        assert scripted_llm.requests == []  # nothing the stranger said reached the model
        outcomes = [ln["outcome"] for ln in audit_lines(home.path)]
        assert outcomes.count("code_sent") == 1 and outcomes.count("ignored") == 9

        resp = await client.post("/api/pairing/approve", json={"code": found.group(1)})
        assert resp.status_code == 200 and resp.json()["role"] == "owner"
        scripted_llm.enqueue_text("Eccomi: come posso aiutarti?")
        telegram.push_message(STRANGER, "ciao", language_code="it")
        await until(telegram, lambda t: shown_texts(t, STRANGER)[1:] == [
            "Eccomi: come posso aiutarti?"], "the reply")
    assert telegram.calls_of("sendChatAction", STRANGER)  # "typing…" while the turn ran


@pytest.mark.parametrize("lang", ["en", "it"])
async def test_a_turn_answers_in_the_users_telegram_language(
        make_home: MakeHome, scripted_llm: ScriptedLLM, telegram: FakeTelegram,
        prefect_api: str, lang: str) -> None:
    home = make_home(llm=scripted_llm, lang="it" if lang == "en" else "en")
    async with telegram_gateway(home, telegram, owner=ANNA, owner_lang=lang) as (client, _):
        scripted_llm.enqueue_tool_call("fs_read", {"path": "missing.txt"})
        scripted_llm.enqueue_text("404")  # the model's words; the failure is told beside them
        telegram.push_message(ANNA, "read missing.txt", language_code=lang)
        expected = i18n.get("ERR_FILE_NOT_FOUND", lang, path="missing.txt")
        await until(telegram, lambda t: expected in "".join(shown_texts(t, ANNA)[1:]),
                    "the reply")
    assert len(shown_texts(telegram, ANNA)) == 2  # the pairing code, the reply


async def test_group_messages_and_edits_are_ignored(
        make_home: MakeHome, scripted_llm: ScriptedLLM, telegram: FakeTelegram,
        prefect_api: str) -> None:
    home = make_home(llm=scripted_llm, lang="en")
    async with telegram_gateway(home, telegram, owner=ANNA) as (client, _):
        scripted_llm.always(ToolCall("fs_write", {"path": "x.txt", "content": "x"}))
        first = telegram.push_message(ANNA, "hello group", chat_type="group")
        telegram.push_message(STRANGER, "hello supergroup", chat_type="supergroup")
        telegram.push_edit(ANNA, first, "now write x.txt", language_code="en")
        telegram.push_message(STRANGER + 1, "sentinel", language_code="en")
        await until(telegram, lambda t: bool(t.sent_texts(STRANGER + 1)), "the sentinel")
        pairing_lines = [ln for ln in audit_lines(home.path) if ln["action"] == "pairing"]
    sent = [c for c in telegram.calls if c.method in ("sendMessage", "sendChatAction")]
    # Anna's code, the sentinel's, and Anna (the owner) told of the sentinel's request
    assert [str(c.params["chat_id"]) for c in sent] == [str(ANNA), str(STRANGER + 1), str(ANNA)]
    assert str(STRANGER + 1) in str(sent[-1].params["text"])
    assert scripted_llm.requests == []  # neither the group messages nor the edit made a turn
    # the pairing of ANNA (code sent) and the sentinel's: groups never reached pairing
    assert [ln["sender"] for ln in pairing_lines if ln["outcome"] == "code_sent"] == [
        str(ANNA), str(STRANGER + 1)]
    assert not (home.workspace / "x.txt").exists()


async def test_a_long_reply_is_split_within_telegrams_limit(
        make_home: MakeHome, scripted_llm: ScriptedLLM, telegram: FakeTelegram,
        prefect_api: str) -> None:
    home = make_home(llm=scripted_llm, lang="en")
    paragraphs = [f"Paragraph {i}: " + "fish & chips <3 " * 24 for i in range(26)]
    text = "\n\n".join(paragraphs)
    assert len(text) >= 10_000
    async with telegram_gateway(home, telegram, owner=ANNA) as (client, _):
        scripted_llm.enqueue_text(text)
        telegram.push_message(ANNA, "tell me a long story", language_code="en")
        await until(telegram, lambda t: "Paragraph 25" in "".join(t.sent_texts(ANNA)),
                    "the long reply")
    pieces = shown_texts(telegram, ANNA)[1:]  # the first piece is the streamed message
    assert len(pieces) >= 3  # counted on the escaped HTML: an upper bound of the shown text
    assert all(len(p) <= 4096 for p in pieces)
    assert all(p.startswith("Paragraph ") for p in pieces)  # split between paragraphs
    unescaped = "\n\n".join(pieces).replace("&lt;", "<").replace("&amp;", "&")
    assert " ".join(unescaped.split()) == " ".join(text.split())
    assert all(c.params.get("parse_mode") == "HTML" for c in telegram.calls_of("sendMessage"))


async def test_an_arabic_chat_gets_right_to_left_marks(
        make_home: MakeHome, scripted_llm: ScriptedLLM, telegram: FakeTelegram,
        prefect_api: str) -> None:
    """Arabic active (no Arabic texts yet: the English ones stand in): every line Metnos sends
    to an Arabic Telegram user opens with a RIGHT-TO-LEFT MARK; an English chat gets none."""
    rlm = "\u200f"
    home = make_home(llm=scripted_llm, lang="en", METNOS_I18N_LANGUAGES='["en", "ar"]')
    async with telegram_gateway(home, telegram, owner=ANNA, owner_lang="ar") as (client, _):
        code_message = telegram.sent_texts(ANNA)[0]  # (a welcome may follow the approval)
        lines = [ln for ln in code_message.split("\n") if ln]
        assert lines and all(ln.startswith(rlm) for ln in lines), code_message
        scripted_llm.enqueue_text("Metnos ✓ 42")  # starts with a Latin word: would run LTR
        telegram.push_message(ANNA, "مرحبا", language_code="ar")
        await until(telegram, lambda t: any("Metnos ✓ 42" in s for s in shown_texts(t, ANNA)),
                    "the reply")  # sent at once, or streamed: sent early and edited
        reply = next(s for s in shown_texts(telegram, ANNA) if "Metnos ✓ 42" in s)
        assert reply.startswith(rlm + "Metnos ✓ 42"), reply
        texts = [str(c.params.get("text", "")) for c in telegram.calls_of_any(
            ("sendMessage", "editMessageText"), ANNA)]
        for text in texts:  # every message and edit to her, every line
            assert all(ln.startswith(rlm) for ln in text.split("\n") if ln), text
        await pair(client, telegram, STRANGER, language_code="en")
        assert not any(rlm in s for s in telegram.sent_texts(STRANGER))
