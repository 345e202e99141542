"""Acceptance (issue 16): a language added after install, in the web chat as a person uses it
in headless Chromium. French and Arabic, each added with `metnos-prompts add-language`, swept
by the scripted translator and reviewed: the page speaks the language (Arabic laid out right
to left), a request understood without a model asks for approval in that language, and the
change is undone from its button. Screenshots in the test's tmp dir."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from metnos.ground import i18n
from metnos.ground.i18n.lint import i18n_lint_text
from metnos.testing.llm_server import ScriptedLLM
from tests.support.fake_translator import spoken
from tests.support.home import MakeHome, served_gateway
from tests.support.pg import free_port
from tests.support.third_language import household_in
from tests.webchat.test_history_browser import open_chat


async def _until(check: Any, what: str, seconds: float = 30) -> None:
    for _ in range(int(seconds * 10)):
        if check():
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.parametrize(("lang", "direction"), [("fr", "ltr"), ("ar", "rtl")])
async def test_a_new_language_in_the_web_chat_asks_runs_and_undoes(
        make_home: MakeHome, scripted_llm: ScriptedLLM, browser: Any, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, lang: str, direction: str) -> None:
    from playwright.async_api import expect

    home = await asyncio.to_thread(household_in, lang, make_home, scripted_llm, tmp_path,
                                   monkeypatch, METNOS_GATEWAY_PORT=str(free_port()))
    notes = home.workspace / "notes.md"
    notes.write_text("# Notes\n\n- milk\n", encoding="utf-8")
    with served_gateway(home):
        context, page, errors = await open_chat(browser, home, lang)
        await page.locator("body[data-ready]").wait_for(state="attached")
        assert await page.evaluate("[document.documentElement.lang, document.documentElement.dir]"
                                   ) == [lang, direction]
        await expect(page.locator("#text")).to_have_attribute(
            "placeholder", i18n.get("WEB_CHAT_PLACEHOLDER", lang))

        await page.fill("#text", spoken("delete the file notes.md", lang))
        await page.keyboard.press("Enter")
        card = page.locator(".msg.card")
        await expect(card.locator(".card-action")).to_have_text(
            i18n.get("CARD_fs_delete", lang, path="notes.md"), timeout=60_000)
        await expect(card.locator(".card-why")).to_have_text(
            i18n.get("CARD_WHY_ASK_POLICY_MEDIUM_RISK", lang))
        await page.screenshot(path=str(tmp_path / f"card-{lang}.png"), full_page=True)
        await card.get_by_role("button", name=i18n.get("WEB_CHAT_APPROVE", lang)).click()
        await _until(lambda: not notes.exists(), "the file to go to the trash")

        reply = page.locator(".msg.metnos").last
        undo = reply.locator(".activity button.undo")
        await expect(undo).to_have_text(i18n.get("UNDO_BUTTON", lang), timeout=60_000)
        await undo.click()
        await expect(reply.locator(".activity li")).to_contain_text(
            i18n.get("UNDO_DONE_ITEM", lang))
        assert notes.read_text(encoding="utf-8") == "# Notes\n\n- milk\n"

        shown = await page.evaluate("document.body.innerText")
        verdict = i18n_lint_text(shown, lang)
        assert verdict.decision == "pass", (verdict, shown)  # no English on the page
        await page.screenshot(path=str(tmp_path / f"chat-{lang}.png"), full_page=True)
        await context.close()
    assert errors == [], errors
    assert (tmp_path / f"chat-{lang}.png").stat().st_size > 0
