"""A family's first minutes in the web chat, without a model (issue 12 acceptance, the web
side): a greeting, the time, three items on the shopping list, the list, one removed, the
removal undone from its button, "what can you do?". In Italian and English, on a desktop
and on a phone; every reply short, in the user's language, never the old wall of tool
descriptions. Screenshots kept in the test's folder. (The reminder delivered to the same page
is tests/webchat/test_surfaces_browser.py's notice test.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from metnos import i18n
from tests.support.home import MakeHome, served_gateway
from tests.support.pg import free_port
from tests.webchat.test_history_browser import open_chat

SAID = {
    "it": ["ciao", "che ore sono?", "aggiungi latte, uova e pane alla lista della spesa",
           "cosa c'è nella lista della spesa?", "togli le uova dalla lista della spesa",
           "cosa sai fare?"],
    "en": ["hello", "what time is it?", "add milk, eggs and bread to the shopping list",
           "what's on my shopping list?", "remove eggs from the shopping list",
           "what can you do?"],
}
FILE = {"it": ("spesa.md", "# Spesa\n\n- latte\n- uova\n- pane\n"),
        "en": ("shopping.md", "# Shopping\n\n- milk\n- eggs\n- bread\n")}
NEVER = ("METNOS_LLM_MODEL", "<path>", "metnos undo", "fs_write", "lists(")


@pytest.mark.parametrize("lang", ["it", "en"])
async def test_the_first_minutes_of_a_family(make_home: MakeHome, browser: Any,
                                             tmp_path: Path, lang: str) -> None:
    from playwright.async_api import expect

    home = make_home(lang=lang, METNOS_GATEWAY_PORT=str(free_port()))
    name, full = FILE[lang]
    path = home.workspace / "lists" / name
    with served_gateway(home):
        context, page, errors = await open_chat(browser, home, lang)
        await page.locator("body[data-ready]").wait_for(state="attached")
        replies = page.locator(".msg.metnos")
        for n, text in enumerate(SAID[lang], start=1):
            if n == 4:
                await page.set_viewport_size({"width": 390, "height": 844})  # on to the phone
            await page.fill("#text", text)
            await page.keyboard.press("Enter")
            await expect(replies).to_have_count(n, timeout=60_000)
            reply = (await replies.nth(n - 1).locator(".text").inner_text()).strip()
            assert reply and len(reply) < 400 and reply.count("\n") < 12, (text, reply)
            assert not [w for w in NEVER if w in reply], (text, reply)
            if n == 3:
                assert path.read_text() == full
                await page.screenshot(path=str(tmp_path / f"family-desktop-{lang}.png"),
                                      full_page=True)
        assert path.read_text() != full  # one removed
        removal = replies.nth(4)
        await removal.locator("button.undo").click()
        await expect(removal.locator(".activity li")).to_contain_text(
            i18n.get("UNDO_DONE_ITEM", lang))
        assert path.read_text() == full
        await expect(page.locator("#text")).to_be_in_viewport()
        await page.screenshot(path=str(tmp_path / f"family-phone-{lang}.png"))
        await context.close()
    assert errors == []
