"""The web chat's microphone (issue 31, "Voice in"), in headless Chromium with a fake
microphone that plays a sentence espeak-ng spoke: 🎤 records, pressing it again stops, the
scripted transcription server receives audio it can decode, of about the time recorded, and
the words heard land in the message box (as text, never markup) for the person to correct and
send; the message then runs as a turn. Without a transcription server, one line says so."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from metnos.faces.web.link import create_login_link
from metnos.ground import i18n
from metnos.testing.llm_server import ScriptedLLM
from tests.support.home import MakeHome, served_gateway
from tests.support.pg import free_port
from tests.support.voice import espeak_binary, seconds, spoken
from tests.telegram.test_voice import ENGLISH
from tests.webchat.conftest import FLAGS

HEARD = "add bread to the <b>shopping</b> list"


@pytest.fixture
async def microphone(chromium_path: str, tmp_path: Path) -> AsyncIterator[Any]:
    """Chromium whose microphone plays `ENGLISH`, said by espeak-ng, over and over."""
    from playwright.async_api import async_playwright

    spoken(espeak_binary(), tmp_path, "en", ENGLISH)
    async with async_playwright() as pw:
        launched = await pw.chromium.launch(executable_path=chromium_path, args=[
            *FLAGS, "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
            f"--use-file-for-fake-audio-capture={tmp_path / 'en.wav'}"])
        try:
            yield launched
        finally:
            await launched.close()


async def test_the_microphone_fills_the_box_and_the_words_run_as_a_turn(
        make_home: MakeHome, scripted_llm: ScriptedLLM, microphone: Any) -> None:
    from playwright.async_api import expect

    home = make_home(llm=scripted_llm, lang="en", METNOS_GATEWAY_PORT=str(free_port()),
                     METNOS_VOICE_API_BASE=scripted_llm.api_base)
    scripted_llm.enqueue_transcript(HEARD)
    scripted_llm.enqueue_text("Bread is on the list.")
    with served_gateway(home):
        context = await microphone.new_context(locale="en")
        page = await context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        await page.goto(create_login_link(home.settings).url)
        await expect(page.locator("#mic")).to_be_visible()
        await page.click("#mic")
        await expect(page.locator("#mic")).to_have_attribute("aria-pressed", "true")
        await asyncio.sleep(2.5)
        await page.click("#mic")
        await expect(page.locator("#text")).to_have_value(HEARD, timeout=30_000)
        await expect(page.locator("#status")).to_have_text(
            i18n.get("WEB_CHAT_VOICE_HEARD", "en"))
        assert await page.locator("#text b").count() == 0
        await page.fill("#text", HEARD.replace("<b>", "").replace("</b>", ""))  # corrected
        await page.keyboard.press("Enter")
        await expect(page.locator(".msg.metnos").last).to_contain_text(
            "Bread is on the list.", timeout=60_000)
        await context.close()
    [upload] = scripted_llm.transcriptions
    assert 1.5 <= seconds(upload.file) <= 6.0, seconds(upload.file)  # about the time recorded
    asked = [r for r in scripted_llm.requests if r.get("messages")]
    assert "add bread to the shopping list" in str(asked[-1]["messages"][-1]["content"])
    assert errors == []


async def test_without_a_transcription_server_the_page_says_so(
        make_home: MakeHome, scripted_llm: ScriptedLLM, microphone: Any) -> None:
    from playwright.async_api import expect

    home = make_home(llm=scripted_llm, lang="it", METNOS_GATEWAY_PORT=str(free_port()))
    with served_gateway(home):
        context = await microphone.new_context(locale="it")
        page = await context.new_page()
        await page.goto(create_login_link(home.settings).url)
        await page.click("#mic")
        await asyncio.sleep(1)
        await page.click("#mic")
        await expect(page.locator(".msg.error .text").last).to_have_text(
            i18n.get("ERR_VOICE_OFF", "it"), timeout=30_000)
        await expect(page.locator("#text")).to_have_value("")
        await context.close()
    assert scripted_llm.transcriptions == []
