"""Issue 27's loose ends of the web chat, in headless Chromium against a served gateway.

- A yes given in the "waiting for you" panel of a page showing another conversation (or
  none) used to leave the status line on "working" with no result ever shown: the page now
  shows the decided turn's conversation and its result arrives there.
- The conversations list holds the web's conversations; the terminal's one-line sessions
  (`metnos chat`, channel `api`) wait in a closed group of their own, and a session nothing
  was said in is not listed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from metnos.ground import i18n
from metnos.ground.db.engine import database_url, make_engine
from tests.gateway.test_session_messages import add_session, add_turn
from tests.support.home import MakeHome, served_gateway
from tests.support.pg import free_port
from tests.webchat.test_history_browser import open_chat

LANG = "en"


async def test_a_yes_from_the_waiting_panel_brings_the_result_into_the_chat(
        make_home: MakeHome, browser: Any, tmp_path: Path) -> None:
    from playwright.async_api import expect

    home = make_home(lang=LANG, METNOS_GATEWAY_PORT=str(free_port()))
    (home.workspace / "old-notes.txt").write_text("x\n")
    with served_gateway(home):
        context, page, errors = await open_chat(browser, home, LANG)
        await page.locator("body[data-ready]").wait_for(state="attached")
        await page.fill("#text", "delete the file old-notes.txt")
        await page.keyboard.press("Enter")
        await expect(page.locator("#messages .msg.card")).to_have_count(1, timeout=60_000)
        await page.get_by_role("button", name=i18n.get("WEB_CHAT_NEW_SESSION", LANG)).click()
        await page.fill("#text", "hello")  # another conversation on screen
        await page.keyboard.press("Enter")
        await expect(page.locator("#messages .msg.metnos")).to_have_count(1, timeout=60_000)
        waiting = page.locator("#waiting-list .msg.card")
        await expect(waiting).to_have_count(1, timeout=30_000)

        await waiting.get_by_role("button", name=i18n.get("WEB_CHAT_APPROVE", LANG)).click()
        result = page.locator("#messages .msg.metnos").last
        await expect(result).to_contain_text("old-notes.txt", timeout=60_000)
        await expect(page.locator("#messages .msg.me").last).to_contain_text(
            "delete the file old-notes.txt")
        await expect(page.locator("#status")).to_have_text("", timeout=30_000)
        assert not (home.workspace / "old-notes.txt").exists()
        await page.screenshot(path=str(tmp_path / "waiting-approved.png"), full_page=True)
        await context.close()
    assert errors == []


async def test_terminal_sessions_wait_in_a_group_of_their_own(
        make_home: MakeHome, browser: Any) -> None:
    from playwright.async_api import expect

    home = make_home(lang=LANG, METNOS_GATEWAY_PORT=str(free_port()))
    engine = make_engine(database_url(home.settings))
    web = add_session(engine, title="Groceries", age_s=600)
    add_turn(engine, web, "what's on the list?", "Milk.")
    for n in range(25):
        add_turn(engine, add_session(engine, channel="api", age_s=n), f"ping {n}", "pong")
    add_session(engine, age_s=1)  # opened, nothing said
    engine.dispose()
    with served_gateway(home):
        context, page, errors = await open_chat(browser, home, LANG)
        await page.locator("body[data-ready]").wait_for(state="attached")
        await page.get_by_role("button", name=i18n.get("WEB_CHAT_SESSIONS", LANG)).click()
        main = page.locator("#session-list button.session")
        await expect(main).to_have_count(1)
        await expect(main).to_contain_text("Groceries")
        group = page.locator("#terminal-sessions")
        await expect(group).to_be_visible()
        await expect(group.locator("button.session").first).to_be_hidden()  # closed
        await group.locator("summary").click()
        await expect(group.locator("button.session")).to_have_count(20)
        await group.get_by_role("button", name=i18n.get("WEB_CHAT_SESSIONS_MORE", LANG)).click()
        await expect(group.locator("button.session")).to_have_count(25)
        await context.close()
    assert errors == []
