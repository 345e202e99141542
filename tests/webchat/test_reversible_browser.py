"""In Supervised a rename runs without a card and shows Undo; the menu's "Ask me before
every change" makes the next one wait for the owner (issue 27, build point 4), in Chromium."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from metnos.ground import i18n
from metnos.testing.llm_server import ScriptedLLM
from tests.support.home import MakeHome, served_gateway
from tests.support.pg import free_port
from tests.webchat.test_history_browser import open_chat


async def test_a_rename_shows_undo_and_ask_all_brings_the_card_back(
        make_home: MakeHome, scripted_llm: ScriptedLLM, browser: Any, tmp_path: Path) -> None:
    from playwright.async_api import expect

    lang = "en"
    home = make_home(llm=scripted_llm, lang=lang, METNOS_GATEWAY_PORT=str(free_port()),
                     METNOS_POLICY_REVERSIBLE_WITHOUT_ASKING="true")
    (home.workspace / "compiti.md").write_text("maths\n")
    scripted_llm.enqueue_tool_call("fs_move", {"src": "compiti.md", "dst": "homework.md"})
    scripted_llm.enqueue_text("Renamed.")
    scripted_llm.enqueue_tool_call("fs_move", {"src": "compiti.md", "dst": "school.md"})
    scripted_llm.enqueue_text("Renamed again.")
    with served_gateway(home):
        context, page, errors = await open_chat(browser, home, lang)
        await expect(page.locator("body[data-ready]")).to_have_count(1)

        await page.fill("#text", "rename compiti.md to homework.md")
        await page.keyboard.press("Enter")
        replies = page.locator(".msg.metnos")
        undo = replies.last.locator(".activity button.undo")
        await expect(undo).to_have_text(i18n.get("UNDO_BUTTON", lang), timeout=60_000)
        assert await page.locator(".msg.card").count() == 0  # no card: it just ran
        assert (home.workspace / "homework.md").read_text() == "maths\n"
        await page.screenshot(path=str(tmp_path / "rename-undo.png"), full_page=True)
        await undo.click()
        await expect(replies.last.locator(".activity .undo-note")).to_be_visible()
        assert (home.workspace / "compiti.md").read_text() == "maths\n"
        assert not (home.workspace / "homework.md").exists()

        box = page.get_by_label(i18n.get("WEB_CHAT_ASK_ALL", lang))
        await box.check()
        session_id = await page.evaluate("sessionStorage.getItem('metnos.session')")
        base = f"http://127.0.0.1:{home.settings.gateway.port}"
        async with httpx.AsyncClient(base_url=base, headers=home.auth()) as api:
            for _ in range(50):  # the box saves itself at once
                shown = (await api.get(f"/api/sessions/{session_id}")).json()
                if shown["ask_all"]:
                    break
                await page.wait_for_timeout(100)
            assert shown["ask_all"] is True, shown

        await page.fill("#text", "rename compiti.md to school.md")
        await page.keyboard.press("Enter")
        card = page.locator(".msg.card")
        await expect(card.get_by_role("button", name=i18n.get("WEB_CHAT_DENY", lang))
                     ).to_be_visible(timeout=60_000)
        await expect(card).to_contain_text(i18n.get("CARD_WHY_ASK_POLICY_ASK_ALL", lang))
        assert (home.workspace / "compiti.md").exists()
        await page.screenshot(path=str(tmp_path / "ask-all-card.png"), full_page=True)
        await card.get_by_role("button", name=i18n.get("WEB_CHAT_DENY", lang)).click()
        await page.reload()
        await expect(page.get_by_label(i18n.get("WEB_CHAT_ASK_ALL", lang))).to_be_checked()
        assert (home.workspace / "compiti.md").exists()
        assert not (home.workspace / "school.md").exists()
        await context.close()
    assert errors == []
