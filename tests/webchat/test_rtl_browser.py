"""A right-to-left language in headless Chromium (issue 16, Build 3, RTL readiness): with
Arabic among the active languages and an Arabic browser, the page says `lang="ar"
dir="rtl"` (the direction comes from CLDR through Babel, no table of ours) and its layout is
mirrored: the person's own messages sit on the left, Metnos's on the right. Each message keeps
its own script's direction (`dir="auto"`). The same page for an English browser stays left to
right. Screenshots in the test's tmp dir."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from metnos.faces.channels.bidi import RLM, marked
from metnos.ground.i18n.formatting import text_direction
from metnos.testing.llm_server import ScriptedLLM
from tests.support.home import MakeHome, served_gateway
from tests.support.pg import free_port
from tests.webchat.test_history_browser import open_chat


@pytest.mark.parametrize(("tag", "direction"), [
    ("ar", "rtl"), ("he", "rtl"), ("fa", "rtl"), ("ur", "rtl"), ("ar-EG", "rtl"),
    ("it", "ltr"), ("en", "ltr"), ("fr", "ltr"), ("zz", "ltr"), ("", "ltr")])
def test_the_direction_comes_from_cldr(tag: str, direction: str) -> None:
    assert text_direction(tag) == direction


def test_telegram_lines_of_a_right_to_left_language_carry_the_mark() -> None:
    assert marked("⏰ 18:00\n\nMetnos", "ar") == f"{RLM}⏰ 18:00\n\n{RLM}Metnos"
    assert marked(marked("x", "he"), "he") == f"{RLM}x"  # once
    assert marked("⏰ 18:00", "it") == "⏰ 18:00"


async def _layout(browser: Any, home: Any, lang: str, tmp_path: Path,
                  reply: str) -> dict[str, Any]:
    """The chat's layout once `reply` has come (the page may reopen the conversation before,
    so an earlier reply is already on it)."""
    from playwright.async_api import expect

    context, page, errors = await open_chat(browser, home, lang)
    await page.locator("body[data-ready]").wait_for(state="attached")
    await page.fill("#text", "ciao")
    await page.keyboard.press("Enter")
    await expect(page.locator(".msg.metnos").last).to_have_text(
        re.compile(re.escape(reply)), timeout=60_000)
    found: dict[str, Any] = await page.evaluate("""() => {
        const box = s => document.querySelector(s).getBoundingClientRect();
        const me = box('.msg.me'), metnos = box('.msg.metnos:last-of-type');
        const title = box('.bar h1'), bar = box('.bar');
        return {lang: document.documentElement.lang, dir: document.documentElement.dir,
                me: [me.left, me.right], metnos: [metnos.left, metnos.right],
                title: [title.left - bar.left, bar.right - title.right],
                text_dir: document.querySelector('.msg.me .text').dir};
    }""")
    await page.screenshot(path=str(tmp_path / f"chat-{lang}.png"), full_page=True)
    await context.close()
    assert errors == [], errors
    return found


async def test_an_arabic_browser_gets_the_chat_right_to_left(
        make_home: MakeHome, scripted_llm: ScriptedLLM, browser: Any, tmp_path: Path) -> None:
    home = make_home(llm=scripted_llm, lang="en", METNOS_GATEWAY_PORT=str(free_port()),
                     METNOS_I18N_LANGUAGES='["en", "ar"]')
    scripted_llm.enqueue_text("Hello!")
    scripted_llm.enqueue_text("Hello again!")
    with served_gateway(home):
        arabic = await _layout(browser, home, "ar", tmp_path, "Hello!")
        english = await _layout(browser, home, "en", tmp_path, "Hello again!")
    assert (arabic["lang"], arabic["dir"]) == ("ar", "rtl"), arabic
    assert (english["lang"], english["dir"]) == ("en", "ltr"), english
    assert arabic["text_dir"] == english["text_dir"] == "auto"
    # mirrored: the person's (short) message sits at the start of the line, left in Arabic and
    # right in English, beside Metnos's full-width one; the title opens the header bar
    me, metnos = arabic["me"], arabic["metnos"]
    assert abs(me[0] - metnos[0]) < 2 and me[1] < metnos[1] - 20, arabic
    me, metnos = english["me"], english["metnos"]
    assert abs(me[1] - metnos[1]) < 2 and me[0] > metnos[0] + 20, english
    assert arabic["title"][1] < arabic["title"][0] and english["title"][0] < english["title"][1]
    assert (tmp_path / "chat-ar.png").stat().st_size > 0
