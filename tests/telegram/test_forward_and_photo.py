"""What a family sends on Telegram besides typed text (issue 27): a forwarded message with a
model configured is the turn's input as outside text (the model sees it, as data; the Tutor
does not answer it without it); a Tutor answer carries no `/docs/` link Telegram cannot
open; a photo with a caption gets one plain line about photos, and its caption is acted on.
The real gateway with the channel on a fake Bot API; the scripted model at the LLM edge."""

from __future__ import annotations

from typing import Any

from metnos.ground import i18n
from metnos.testing.llm_server import ScriptedLLM
from metnos.testing.telegram_server import FakeTelegram
from tests.support.home import MakeHome
from tests.support.tutor_catalog import install_catalog
from tests.telegram.support import said, telegram_gateway, until

ANNA = 7301
FORWARDED = "La riunione dei genitori è spostata a giovedì alle 17, in palestra."


async def test_a_forwarded_message_is_the_turns_input_as_data(
        make_home: MakeHome, scripted_llm: ScriptedLLM, telegram: FakeTelegram,
        compiled_catalog: Any) -> None:
    home = make_home(llm=scripted_llm, lang="it", autonomy="Full")
    install_catalog(compiled_catalog, home.settings.home)  # the Tutor is there, and steps aside
    scripted_llm.enqueue_text("Dice che la riunione dei genitori è giovedì alle 17.")
    async with telegram_gateway(home, telegram, prefect=False, owner=ANNA,
                                owner_lang="it") as (client, _):
        telegram.push_message(ANNA, FORWARDED, forward=True, language_code="it")
        await until(telegram, lambda t: any("giovedì alle 17" in x and "Dice" in x
                                            for x in said(t, ANNA)), "the model's reply")
    user_message = scripted_llm.requests[0]["messages"][-1]["content"]
    assert '<untrusted-data source="forwarded"' in user_message and FORWARDED in user_message
    assert not any("/docs/" in x for x in said(telegram, ANNA))


async def test_a_tutor_answer_on_telegram_has_no_relative_docs_link(
        make_home: MakeHome, telegram: FakeTelegram, compiled_catalog: Any) -> None:
    home = make_home(lang="en")
    install_catalog(compiled_catalog, home.settings.home)
    async with telegram_gateway(home, telegram, prefect=False, owner=ANNA) as (client, _):
        before = len(said(telegram, ANNA))
        telegram.push_message(ANNA, "What does quick-tour.md contain?", language_code="en")
        sources = i18n.get("TUTOR_ANSWER_SOURCES", "en", links="").strip()
        await until(telegram, lambda t: any(sources in x for x in said(t, ANNA)[before:]),
                    "the Tutor's answer")
    answer = next(x for x in said(telegram, ANNA)[before:] if sources in x)
    assert "/docs/" not in answer and "](" not in answer, answer
    assert answer.split(sources, 1)[1].strip()  # the section is still named


def test_links_become_names_or_full_addresses() -> None:
    from metnos.faces.channels.telegram.links import telegram_links

    text = "Undo a change. Sources: [Undo](/docs/en/undo#top), [Site](https://example.org/a)"
    assert telegram_links(text, "") == "Undo a change. Sources: Undo, Site (https://example.org/a)"
    assert telegram_links(text, "https://casa.example.net/") == (
        "Undo a change. Sources: Undo (https://casa.example.net/docs/en/undo#top), "
        "Site (https://example.org/a)")
    assert telegram_links("see /docs/en/undo for more", "") == "see for more"


async def test_a_photo_with_a_caption(make_home: MakeHome, telegram: FakeTelegram) -> None:
    home = make_home(lang="it")  # no model: the embedded planner reads the caption
    (home.workspace / "ricetta.md").write_text("pane\n")
    photo_line = i18n.get("MSG_TELEGRAM_PHOTO_CAPTION", "it")
    async with telegram_gateway(home, telegram, prefect=False, owner=ANNA,
                                owner_lang="it") as (client, _):
        before = len(said(telegram, ANNA))
        telegram.push_message(ANNA, "elenca i file", photo=True, language_code="it")
        await until(telegram, lambda t: any(photo_line in x and "ricetta.md" in x
                                            for x in said(t, ANNA)[before:]),
                    "the caption acted on, the photo said plainly")
        before = len(said(telegram, ANNA))
        telegram.push_message(ANNA, "cosa c'è in questa foto?", photo=True,
                              language_code="it")
        await until(telegram, lambda t: any(photo_line in x for x in said(t, ANNA)[before:]),
                    "the photo line")
        assert not any(i18n.get("MSG_PLAN_NOT_UNDERSTOOD", "it") in x
                       for x in said(telegram, ANNA)[before:])
        before = len(said(telegram, ANNA))
        telegram.push_message(ANNA, "", photo=True, language_code="it")
        alone = i18n.get("MSG_TELEGRAM_PHOTO_ONLY", "it")
        await until(telegram, lambda t: alone in said(t, ANNA)[before:], "a photo alone")
