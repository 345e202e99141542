"""The web chat in headless Chromium, as a person uses it (issue 5 acceptance).

`metnos login`'s one-time link → the chat page; a message; the reply; an action that asks
first → its card with the exact action → Approve → the file is written and the reply shown;
the locale switch changes the chrome and not the conversation's language. In Italian and in
English; a screenshot in the test's tmp dir; no console errors.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from metnos.faces.web.link import create_login_link
from metnos.ground import i18n
from metnos.testing.llm_server import ScriptedLLM
from tests.support.home import MakeHome, served_gateway
from tests.support.pg import free_port

OTHER = {"it": "en", "en": "it"}


@pytest.mark.parametrize("lang", ["it", "en"])
async def test_a_conversation_with_an_approval(
        make_home: MakeHome, scripted_llm: ScriptedLLM, browser: Any, tmp_path: Path,
        lang: str) -> None:
    from playwright.async_api import expect

    home = make_home(llm=scripted_llm, lang=lang, METNOS_GATEWAY_PORT=str(free_port()))
    # each turn: the model's tool call, then its text once it has read the result
    scripted_llm.enqueue_tool_call("fs_find", {"pattern": "*.md"})
    scripted_llm.enqueue_text("IDENTITY.md and five more files.")
    scripted_llm.enqueue_tool_call("fs_write", {"path": "shopping.md",
                                                "content": "milk\nbread\n"})
    scripted_llm.enqueue_text("Saved **shopping.md**.")
    scripted_llm.enqueue_tool_call("fs_find", {"pattern": "shopping*"})
    scripted_llm.enqueue_text("- shopping.md")
    with served_gateway(home):
        link = create_login_link(home.settings).url
        context = await browser.new_context(locale=lang)
        page = await context.new_page()
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))

        await page.goto(link)
        await expect(page.locator("#text")).to_be_visible()
        assert page.url.endswith("/")
        cookies = {c["name"]: c for c in await context.cookies()}
        assert cookies["metnos_session"]["httpOnly"] and cookies["metnos_session"][
            "sameSite"] == "Strict"
        assert home.token not in await page.content()  # the owner token never reaches a page

        await page.fill("#text", "markdown?")
        await page.keyboard.press("Enter")
        replies = page.locator(".msg.metnos")
        await expect(replies.first).to_contain_text("IDENTITY.md", timeout=60_000)  # 1st LLM call

        await page.fill("#text", "shopping list")
        await page.get_by_role("button", name=i18n.get("WEB_CHAT_SEND", lang)).click()
        card = page.locator(".msg.card")
        await expect(card.locator(".card-action")).to_have_text(i18n.get(
            "CARD_fs_write", lang, content="milk, bread", path="shopping.md"), timeout=30_000)
        await expect(card).to_contain_text(i18n.get("CARD_FILE_NEW", lang, path="shopping.md"))
        await card.get_by_role("button", name=i18n.get("WEB_CHAT_APPROVE", lang)).click()
        await expect(card).to_contain_text(i18n.get("WEB_CHAT_APPROVED", lang))
        await expect(replies.last.locator(".activity button.undo")).to_have_text(
            i18n.get("UNDO_BUTTON", lang), timeout=30_000)  # fs_write done, its Undo beside it
        await expect(replies.last.locator(".activity")).not_to_contain_text("metnos undo")
        await expect(replies.last.locator(".text strong")).to_have_text("shopping.md")
        assert (home.workspace / "shopping.md").read_text() == "milk\nbread\n"
        await page.screenshot(path=str(tmp_path / f"chat-{lang}.png"), full_page=True)

        other = OTHER[lang]
        await page.select_option("#locale", other)
        await expect(page.get_by_role("button", name=i18n.get("WEB_CHAT_SEND", other))
                     ).to_be_visible()
        assert await page.locator("html").get_attribute("lang") == other
        await expect(page.locator("body[data-ready]")).to_have_count(1)  # its modules ran
        # the chrome changed; the conversation keeps its own language (SPEC §9.6)
        await page.fill("#text", "again")
        await page.keyboard.press("Enter")
        await expect(replies.last.locator(".text li")).to_have_text("shopping.md",
                                                                    timeout=30_000)
        found = i18n.get("MSG_AGENT_ACTIVITY_READ", lang, executor="fs_find",
                         source=i18n.get("MSG_AGENT_ACTIVITY_WORKSPACE", lang))
        await expect(replies.last.locator(".activity li")).to_have_text([found])
        await page.get_by_role("button", name=i18n.get("WEB_CHAT_AUDIT", other)).click()
        await expect(page.locator("#audit-lines")).to_contain_text("fs_write")

        await page.set_viewport_size({"width": 390, "height": 844})  # a phone
        await expect(page.get_by_role("button", name=i18n.get("WEB_CHAT_SEND", other))
                     ).to_be_in_viewport()
        assert await page.evaluate("document.documentElement.scrollWidth <= innerWidth")
        await page.screenshot(path=str(tmp_path / f"phone-{lang}.png"))
        await context.close()
    assert errors == []
    lines = [json.loads(ln) for ln in
             (home.settings.audit_dir / "audit.jsonl").read_text().splitlines()]
    assert {ln["channel"] for ln in lines if ln["action"] == "fs_write"} == {"web"}
    assert (tmp_path / f"chat-{lang}.png").stat().st_size > 0


async def test_a_family_member_is_paired_from_the_browser(
        make_home: MakeHome, browser: Any) -> None:
    from playwright.async_api import expect

    from metnos.features.pairing import admit
    from metnos.ground.db.engine import database_url, make_engine
    from metnos.ground.db.engine import session as db_session

    home = make_home(lang="en", METNOS_GATEWAY_PORT=str(free_port()))
    with served_gateway(home):
        engine = make_engine(database_url(home.settings))
        with db_session(engine) as db:
            code = admit(db, channel="telegram", sender_id="7001",
                         settings=home.settings.policy).code
        engine.dispose()
        assert code is not None
        context = await browser.new_context(locale="en")
        page = await context.new_page()
        await page.goto(create_login_link(home.settings).url)
        await page.get_by_role("button", name=i18n.get("WEB_CHAT_PAIRING", "en")).click()
        pending = page.locator("#pairing-pending")
        await expect(pending).to_contain_text("telegram: sender 7001")
        await page.fill("#pairing-code", code)
        await page.get_by_role("button", name=i18n.get("WEB_CHAT_PAIRING_APPROVE", "en")).click()
        await expect(page.locator("#pairing-paired")).to_contain_text("telegram: sender 7001")
        await expect(pending).to_have_text(i18n.get("WEB_CHAT_PAIRING_NONE", "en"))
        # a stranger's pending request: the owner drops it from the panel
        engine = make_engine(database_url(home.settings))
        with db_session(engine) as db:
            admit(db, channel="telegram", sender_id="7002", settings=home.settings.policy)
        engine.dispose()
        toggle = page.get_by_role("button", name=i18n.get("WEB_CHAT_PAIRING", "en"))
        await toggle.click()  # closed
        await toggle.click()  # open again: the list is read anew
        await expect(pending).to_contain_text("telegram: sender 7002")
        await pending.get_by_role("button",
                                  name=i18n.get("WEB_CHAT_PAIRING_DROP", "en")).click()
        await expect(pending).to_have_text(i18n.get("WEB_CHAT_PAIRING_NONE", "en"))
        await context.close()
