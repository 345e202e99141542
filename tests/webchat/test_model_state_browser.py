"""The web chat's header shows the model's state (issue 26), in headless Chromium: not tried yet
or already unreachable at first (the gateway probes the model beside its start), unreachable
once a reply said Metnos works without its model (the server stopped)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from metnos.faces.web.link import create_login_link
from metnos.ground import i18n
from tests.support.home import MakeHome, served_gateway
from tests.support.pg import free_port


@pytest.mark.parametrize("lang", ["it", "en"])
async def test_the_header_says_when_the_model_is_unreachable(
        make_home: MakeHome, stopped_base: str, browser: Any, lang: str) -> None:
    from playwright.async_api import expect

    home = make_home(lang=lang, METNOS_GATEWAY_PORT=str(free_port()),
                     METNOS_LLM_MODEL="openai/scripted", METNOS_LLM_API_BASE=stopped_base,
                     METNOS_LLM_API_KEY="sk-test")
    with served_gateway(home):
        context = await browser.new_context(locale=lang)
        page = await context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        await page.goto(create_login_link(home.settings).url)
        state = page.locator("header #model-state")
        first = re.compile("|".join(re.escape(i18n.get(key, lang)) for key in (
            "WEB_CHAT_MODEL_UNKNOWN", "WEB_CHAT_MODEL_UNREACHABLE")))
        await expect(state).to_have_text(first)
        await expect(state).to_have_attribute("data-state", re.compile("^(unknown|unreachable)$"))

        await page.fill("#text", "ciao")
        await page.keyboard.press("Enter")
        reply = page.locator(".msg.metnos[data-turn]")
        await expect(reply).to_contain_text(i18n.get("MSG_TURN_NO_MODEL_UNREACHABLE", lang),
                                            timeout=60_000)
        await expect(state).to_have_text(i18n.get("WEB_CHAT_MODEL_UNREACHABLE", lang))
        await expect(state).to_have_attribute("data-state", "unreachable")

        await page.reload()  # drawn by the server from the gateway's live view
        await expect(state).to_have_text(i18n.get("WEB_CHAT_MODEL_UNREACHABLE", lang))
        await context.close()
    assert errors == []
