"""👍/👎 under a Tutor answer in headless Chromium, as a person uses them (issue 14, Build 8):
a real Tutor answer in the web chat, 👍 (its accessible label in the page's language) records
the association; 👎 offers the four causes and one of them records a typed gap; after a reload
the stored answer still shows its buttons and says it was already rated."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlmodel import select

from metnos.features.tutor.feedback_models import TutorAssociation, TutorGap
from metnos.ground import i18n
from metnos.ground.db.engine import database_url, make_engine, session
from tests.support.home import MakeHome, served_gateway
from tests.support.pg import free_port
from tests.support.tutor_catalog import install_catalog
from tests.webchat.test_history_browser import open_chat

QUESTIONS = {"it": ("Che cosa contiene visita-guidata.md?", "Riassumi docs/it/visita-guidata.md"),
             "en": ("What does quick-tour.md contain?", "Summarise docs/en/quick-tour.md")}


@pytest.mark.parametrize("lang", ["it", "en"])
async def test_thumbs_up_then_down_with_a_cause(make_home: MakeHome, browser: Any,
                                                compiled_catalog: Any,
                                                tmp_path: Path, lang: str) -> None:
    from playwright.async_api import expect

    home = make_home(lang=lang, METNOS_GATEWAY_PORT=str(free_port()))
    install_catalog(compiled_catalog, home.settings.home)
    first, second = QUESTIONS[lang]
    with served_gateway(home):
        context, page, errors = await open_chat(browser, home, lang)
        await expect(page.locator("#text")).to_be_visible()

        await page.fill("#text", first)
        await page.keyboard.press("Enter")
        answer = page.locator(".msg.metnos").last
        up = answer.get_by_role("button", name=i18n.get("TUTOR_FEEDBACK_UP", lang),
                               exact=True)
        await expect(up).to_have_text("👍", timeout=60_000)
        await expect(answer.locator(".activity")).to_have_count(0)  # no line for the item
        await up.click()
        await expect(answer.locator(".feedback-note")).to_have_text(
            i18n.get("TUTOR_FEEDBACK_THANKS_UP", lang))

        await page.fill("#text", second)
        await page.keyboard.press("Enter")
        answer = page.locator(".msg.metnos").nth(1)
        down = answer.get_by_role("button", name=i18n.get("TUTOR_FEEDBACK_DOWN", lang),
                                 exact=True)
        await expect(down).to_be_visible(timeout=60_000)
        await down.click()
        causes = answer.get_by_role("group", name=i18n.get("TUTOR_FEEDBACK_WHY", lang))
        await expect(causes.get_by_role("button")).to_have_count(4)
        await causes.get_by_role("button", name=i18n.get(
            "TUTOR_FEEDBACK_CAUSE_OUTDATED", lang)).click()
        await expect(answer.locator(".feedback-note")).to_have_text(
            i18n.get("TUTOR_FEEDBACK_THANKS_DOWN", lang))
        await page.screenshot(path=str(tmp_path / f"feedback-{lang}.png"), full_page=True)
        assert errors == []

        await page.reload()  # the stored conversation: its answers keep their buttons
        stored = page.locator(".msg.metnos").first
        await stored.get_by_role("button", name=i18n.get("TUTOR_FEEDBACK_UP", lang),
                               exact=True).click()
        await expect(stored.locator(".feedback-note")).to_have_text(
            i18n.get("ERR_TUTOR_FEEDBACK_ALREADY", lang))
        await context.close()
    assert all("409" in e for e in errors), errors  # only the refused second rating
    engine = make_engine(database_url(home.settings))
    with session(engine) as db:
        associations = db.exec(select(TutorAssociation)).all()
        gaps = db.exec(select(TutorGap)).all()
    engine.dispose()
    assert len(associations) == 1 and [g.cause for g in gaps] == ["outdated"]
