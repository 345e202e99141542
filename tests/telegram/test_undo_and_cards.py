"""Issue 12, Build 4 on Telegram: the approval card in plain words (what happens to which file,
why Metnos asks, the raw arguments in a collapsed block) and the Undo button under the reply,
bound to the user whose turn made the change. The real gateway with Prefect's turn flow, the
real undo, a fake Bot API."""

from __future__ import annotations

import pytest

from metnos.faces.channels.telegram.cards import card
from metnos.faces.channels.telegram.undo import parse_undo
from metnos.ground import i18n
from metnos.testing.llm_server import ScriptedLLM
from metnos.testing.telegram_server import Call, FakeTelegram
from tests.gateway.test_turns import audit_lines
from tests.support.home import MakeHome
from tests.telegram.support import answers, buttons, pair, shown_texts, telegram_gateway, until

ANNA, BOB = 7001, 8002
APPEND = {"path": "lists/shopping.md", "content": "eggs\nbutter\n", "mode": "append"}


def cards(tg: FakeTelegram, chat_id: int) -> list[Call]:
    return [c for c in tg.calls_of("sendMessage", chat_id)
            if any(b["callback_data"].startswith("ap:") for b in buttons(c))]


def undo_buttons(tg: FakeTelegram, chat_id: int) -> list[tuple[int, str]]:
    """(message id, button data) of every Undo button the bot put under a reply."""
    found = []
    for c in tg.calls_of_any(("sendMessage", "editMessageText"), chat_id):
        message_id = int(c.result["message_id"] if c.method == "sendMessage"
                         else c.params["message_id"])
        found += [(message_id, b["callback_data"]) for b in buttons(c)
                  if parse_undo(b["callback_data"])]
    return found


async def answer_to(tg: FakeTelegram, query_id: str) -> Call:
    await until(tg, lambda t: bool(answers(t, query_id)), "the button's answer")
    [answer] = answers(tg, query_id)
    return answer


@pytest.mark.parametrize("lang", ["it", "en"])
def test_the_card_says_what_happens_to_which_file_and_why(lang: str) -> None:
    approval = {"approval_id": "a1", "executor": "fs_write", "args": APPEND,
                "files": {"lists/shopping.md": "sha256:abc"},
                "reason_key": "ASK_POLICY_MEDIUM_RISK",
                "expires_at": "2026-12-01T18:30:00+00:00",
                "why": i18n.get("ASK_POLICY_MEDIUM_RISK", lang, executor="fs_write")}
    text = card(approval, lang)
    action = i18n.get("CARD_fs_write_append", lang, content="eggs, butter",
                      path="lists/shopping.md")
    head, details = text.split("<blockquote expandable>")
    assert action in head and i18n.get("CARD_WHY_ASK_POLICY_MEDIUM_RISK", lang) in head
    assert i18n.get("CARD_FILE_EXISTS", lang, path="lists/shopping.md") in head
    for jargon in ("fs_write", "{", "risk", "rischio", "sha256"):  # up front: plain words only
        assert jargon not in head, jargon
    assert "<code>eggs\nbutter\n</code>" in details and "mode: <code>append</code>" in details
    assert text.index("</blockquote>") > text.index("fs_write")  # the executor is a detail
    untrusted = card({**approval, "reason_key": "ASK_LAW_UNTRUSTED_DATA",
                      "sources": ["forwarded"]}, lang)
    assert i18n.get("CARD_WHY_ASK_LAW_UNTRUSTED_DATA", lang, sources="forwarded") in untrusted


async def test_undo_from_the_button_only_by_who_asked_then_once(
        make_home: MakeHome, scripted_llm: ScriptedLLM, telegram: FakeTelegram,
        prefect_api: str) -> None:
    home = make_home(llm=scripted_llm, lang="en", autonomy="Supervised")
    (home.workspace / "lists").mkdir()
    (home.workspace / "lists" / "shopping.md").write_text("milk\n")
    async with telegram_gateway(home, telegram, owner=ANNA) as (client, _):
        await pair(client, telegram, BOB, language_code="en")
        scripted_llm.enqueue_tool_call("fs_write", APPEND)
        scripted_llm.enqueue_text("Added to your shopping list.")
        telegram.push_message(ANNA, "add eggs and butter to the shopping list",
                              language_code="en")
        await until(telegram, lambda t: bool(cards(t, ANNA)), "the approval card")
        [shown] = cards(telegram, ANNA)
        assert i18n.get("CARD_fs_write_append", "en", content="eggs, butter",
                        path="lists/shopping.md") in str(shown.params["text"])
        approve = buttons(shown)[0]["callback_data"]
        telegram.push_callback(ANNA, approve, shown.result["message_id"], language_code="en")
        await until(telegram, lambda t: bool(undo_buttons(t, ANNA)), "the Undo button")
        assert (home.workspace / "lists" / "shopping.md").read_text() == "milk\neggs\nbutter\n"
        [(message_id, data)] = undo_buttons(telegram, ANNA)
        assert [b["text"] for b in buttons(telegram.calls_of_any(
            ("sendMessage", "editMessageText"), ANNA)[-1])] == [
            i18n.get("MSG_TELEGRAM_BUTTON_UNDO", "en")]
        reply = shown_texts(telegram, ANNA)[-1]
        assert "Added to your shopping list." in reply and "metnos undo" not in reply

        refused = await answer_to(telegram, telegram.push_callback(
            BOB, data, message_id, chat_id=ANNA, language_code="en"))
        assert refused.params["text"] == i18n.get("MSG_TELEGRAM_UNDO_NOT_YOURS", "en")
        assert (home.workspace / "lists" / "shopping.md").read_text() == "milk\neggs\nbutter\n"

        done = await answer_to(telegram, telegram.push_callback(
            ANNA, data, message_id, language_code="en"))
        assert done.params["text"] == i18n.get("MSG_TELEGRAM_UNDONE", "en")
        assert (home.workspace / "lists" / "shopping.md").read_text() == "milk\n"
        await until(telegram, lambda t: i18n.get("UNDO_DONE_ITEM", "en") in shown_texts(
            t, ANNA)[-1], "the reply marked undone")
        edit = telegram.calls_of("editMessageText", ANNA)[-1]
        assert str(edit.params["message_id"]) == str(message_id) and not buttons(edit)

        again = await answer_to(telegram, telegram.push_callback(  # a stale button
            ANNA, data, message_id, language_code="en"))
        assert again.params["text"] == i18n.get("UNDO_ALREADY", "en")
    assert (home.workspace / "lists" / "shopping.md").read_text() == "milk\n"
    undos = [(ln["sender"], ln["channel"], ln["outcome"]) for ln in audit_lines(home.path)
             if ln["action"] == "undo"]
    assert undos == [(f"telegram:{BOB}", "telegram", "refused"), ("owner", "telegram", "done"),
                     ("owner", "telegram", "refused")]


async def test_a_shopping_list_without_a_model_undone_from_its_button(
        make_home: MakeHome, telegram: FakeTelegram, prefect_api: str) -> None:
    home = make_home(lang="it")
    path = home.workspace / "lists" / "shopping.md"
    async with telegram_gateway(home, telegram, owner=ANNA, owner_lang="it") as (client, _):
        for n, text in enumerate(("aggiungi latte, uova e pane alla lista della spesa",
                                  "togli le uova dalla lista della spesa"), start=1):
            telegram.push_message(ANNA, text, language_code="it")
            await until(telegram, lambda t, n=n: len(undo_buttons(t, ANNA)) == n, "the reply")
        assert path.read_text() == "# Spesa\n\n- latte\n- pane\n"
        message_id, data = undo_buttons(telegram, ANNA)[-1]
        reply = shown_texts(telegram, ANNA)[-1]
        assert "uova" in reply and "metnos undo" not in reply
        done = await answer_to(telegram, telegram.push_callback(
            ANNA, data, message_id, language_code="it"))
        assert done.params["text"] == i18n.get("MSG_TELEGRAM_UNDONE", "it")
        assert path.read_text() == "# Spesa\n\n- latte\n- uova\n- pane\n"
        await until(telegram, lambda t: i18n.get("UNDO_DONE_ITEM", "it") in shown_texts(
            t, ANNA)[-1], "the reply marked undone")
