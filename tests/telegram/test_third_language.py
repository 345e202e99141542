"""Acceptance (issue 16) on Telegram: a language added after install, as its speaker meets it
through the fake Bot API. The pairing message, the approval card of a request understood
without a model, the button's answers and the Undo, all in that language; Arabic lines carry
the right-to-left mark."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from metnos.ground import i18n
from metnos.ground.i18n.lint import i18n_lint_text
from metnos.testing.llm_server import ScriptedLLM
from metnos.testing.telegram_server import FakeTelegram
from tests.support.fake_translator import spoken
from tests.support.home import MakeHome
from tests.support.third_language import household_in
from tests.telegram.support import buttons, shown_texts, telegram_gateway, until
from tests.telegram.test_undo_and_cards import answer_to, cards, undo_buttons

ANNA = 7001


@pytest.mark.parametrize("lang", ["fr", "ar"])
async def test_a_new_language_on_telegram_asks_runs_and_undoes(
        make_home: MakeHome, scripted_llm: ScriptedLLM, telegram: FakeTelegram, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, prefect_api: str, lang: str) -> None:
    home = await asyncio.to_thread(household_in, lang, make_home, scripted_llm, tmp_path,
                                   monkeypatch)
    notes = home.workspace / "notes.md"
    notes.write_text("# Notes\n", encoding="utf-8")
    async with telegram_gateway(home, telegram, owner=ANNA, owner_lang=lang) as (client, _):
        code_message = telegram.sent_texts(ANNA)[0]
        assert spoken("Your pairing code", lang) in code_message, code_message

        telegram.push_message(ANNA, spoken("delete the file notes.md", lang), language_code=lang)
        await until(telegram, lambda t: bool(cards(t, ANNA)), "the approval card")
        [card] = cards(telegram, ANNA)
        text = str(card.params["text"])
        assert i18n.get("CARD_fs_delete", lang, path="notes.md") in text.replace("\u200f", "")
        assert i18n_lint_text(text.split("<blockquote")[0], lang).decision == "pass", text
        approve, _ = buttons(card)
        decided = await answer_to(telegram, telegram.push_callback(
            ANNA, approve["callback_data"], card.result["message_id"], language_code=lang))
        assert decided.params["text"] == i18n.get("MSG_TELEGRAM_DECIDED_APPROVED", lang)
        await until(telegram, lambda t: bool(undo_buttons(t, ANNA)), "the reply and its Undo")
        assert not notes.exists()
        await asyncio.sleep(0.5)  # a person reads the reply before tapping (the channel notes
        # the reply's buttons just after Telegram confirms it was sent)

        message_id, data = undo_buttons(telegram, ANNA)[-1]
        done = await answer_to(telegram, telegram.push_callback(
            ANNA, data, message_id, language_code=lang))
        assert done.params["text"] == i18n.get("MSG_TELEGRAM_UNDONE", lang)
        assert notes.read_text(encoding="utf-8") == "# Notes\n"
        await until(telegram, lambda t: i18n.get("UNDO_DONE_ITEM", lang) in shown_texts(
            t, ANNA)[-1].replace("\u200f", ""), "the reply marked undone")
        for said in shown_texts(telegram, ANNA):
            lines = [ln for ln in said.split("\n") if ln.strip()]
            assert all(ln.startswith("\u200f") for ln in lines) == (lang == "ar"), said
