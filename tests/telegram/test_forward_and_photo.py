"""What a family sends on Telegram besides typed text (issue 27): a forwarded message with a
model configured is the turn's input as outside text (the model sees it, as data; the Tutor
does not answer it without it); a Tutor answer carries no `/docs/` link Telegram cannot
open; a photo is kept in the workspace's inbox, said in one plain line, and its caption is
acted on; a document whose bytes are not what it says is refused.
The real gateway with the channel on a fake Bot API; the scripted model at the LLM edge."""

from __future__ import annotations

import io
from datetime import datetime
from typing import Any

from PIL import Image

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


async def test_a_photo_is_kept_and_its_caption_acted_on(
        make_home: MakeHome, telegram: FakeTelegram) -> None:
    home = make_home(lang="it")  # no model: the embedded planner reads the caption
    (home.workspace / "ricetta.md").write_text("pane\n")
    day = datetime.now(home.settings.tz).date().isoformat()
    kept = i18n.get("MSG_ATTACHMENT_KEPT", "it", count=1, paths=f"inbox/{day}/photo.jpg")
    async with telegram_gateway(home, telegram, prefect=False, owner=ANNA,
                                owner_lang="it") as (client, _):
        before = len(said(telegram, ANNA))
        telegram.push_message(ANNA, "elenca i file", photo=jpeg(), language_code="it")
        await until(telegram, lambda t: any(kept in x and "ricetta.md" in x
                                            for x in said(t, ANNA)[before:]),
                    "the caption acted on, the photo kept")
        assert (home.workspace / "inbox" / day / "photo.jpg").read_bytes() == jpeg()
        before = len(said(telegram, ANNA))
        telegram.push_message(ANNA, "", photo=jpeg(), language_code="it")
        again = i18n.get("MSG_ATTACHMENT_KEPT", "it", count=1,
                         paths=f"inbox/{day}/photo-2.jpg")
        await until(telegram, lambda t: again in said(t, ANNA)[before:], "a photo alone")


async def test_a_document_that_lies_about_its_type_is_refused(
        make_home: MakeHome, telegram: FakeTelegram) -> None:
    home = make_home(lang="en")
    async with telegram_gateway(home, telegram, prefect=False, owner=ANNA) as (client, _):
        telegram.push_message(ANNA, "file this bill", language_code="en",
                              document=("bill.pdf", "application/pdf", jpeg()))
        refusal = i18n.get("ERR_ATTACHMENT_TYPE_MISMATCH", "en", name="bill.pdf",
                           claimed="pdf", actual="jpeg")
        await until(telegram, lambda t: any(refusal in x for x in said(t, ANNA)),
                    "the refusal")
    assert not (home.workspace / "inbox").exists()
    assert not (home.path / "attachments").exists() or not any(
        (home.path / "attachments").iterdir())


def jpeg() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (64, 48), "white").save(out, "JPEG")
    return out.getvalue()
