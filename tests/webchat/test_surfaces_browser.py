"""Issue 12, Build 4 in headless Chromium: the web chat made for people.

The Undo button beside a change restores the file, says so, and stays undone after a reload; a
second undo (a stale button in another tab) says it was already undone. Messages carry their
local time. A pending approval comes back after a reload and waits in the "waiting for you"
area of a fresh tab, in plain words with the raw arguments behind "details"; markup in it never
runs. On a phone (390×844) the header is one menu button and the input stays on screen under a
long card. A paste longer than the gateway reads is never cut silently.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from metnos.ground import i18n
from metnos.ground.db.engine import in_session
from metnos.testing.llm_server import ScriptedLLM
from tests.gateway.test_turns import audit_lines
from tests.support.home import Home, MakeHome, served_gateway
from tests.support.pg import free_port
from tests.webchat.test_history_browser import assert_nothing_ran, open_chat

PHONE = {"width": 390, "height": 844}


async def new_tab(context: Any, home: Home) -> Any:
    """Another tab of the same browser (its own sessionStorage: no conversation on screen)."""
    page = await context.new_page()
    await page.goto(f"http://127.0.0.1:{home.settings.gateway.port}/")
    await page.locator("body[data-ready]").wait_for(state="attached")
    return page


async def test_undo_from_the_button_then_once_more_from_a_stale_tab(
        make_home: MakeHome, scripted_llm: ScriptedLLM, browser: Any, tmp_path: Path) -> None:
    from playwright.async_api import expect

    home = make_home(llm=scripted_llm, lang="en", autonomy="Full",
                     METNOS_GATEWAY_PORT=str(free_port()))
    (home.workspace / "notes.md").write_text("milk\n")
    scripted_llm.enqueue_tool_call("fs_write", {"path": "notes.md", "content": "eggs\n",
                                                "mode": "append"})
    scripted_llm.enqueue_text("Added **eggs**.")
    with served_gateway(home):
        context, page, errors = await open_chat(browser, home)
        before = datetime.now(UTC)
        await page.fill("#text", "add eggs to my notes")
        await page.keyboard.press("Enter")
        reply = page.locator(".msg.metnos").last
        undo = reply.locator(".activity button.undo")
        await expect(undo).to_have_text(i18n.get("UNDO_BUTTON", "en"), timeout=60_000)
        assert (home.workspace / "notes.md").read_text() == "milk\neggs\n"
        await expect(reply.locator(".activity")).not_to_contain_text("metnos undo")
        for who in (".msg.me", ".msg.metnos"):  # each message says when, in local time
            stamp = page.locator(f"{who} time").last
            at = datetime.fromisoformat(str(await stamp.get_attribute("datetime")))
            assert abs((at - before).total_seconds()) < 120
            shown = await stamp.evaluate(
                "t => new Date(t.dateTime).toLocaleString('en', {hour: '2-digit', "
                "minute: '2-digit'})")
            await expect(stamp).to_have_text(shown)

        stale = await new_tab(context, home)  # the same conversation, opened from the list
        await stale.get_by_role("button", name=i18n.get("WEB_CHAT_SESSIONS", "en")).click()
        await stale.locator("#session-list button.session").first.click()
        stale_undo = stale.locator(".msg.metnos").last.locator("button.undo")
        await expect(stale_undo).to_be_visible()

        await undo.click()
        item = reply.locator(".activity li")
        await expect(item).to_contain_text(i18n.get("UNDO_DONE_ITEM", "en"))
        await expect(item).to_have_class("act done undone")
        await expect(undo).to_have_count(0)
        assert (home.workspace / "notes.md").read_text() == "milk\n"

        await stale_undo.click()  # a second undo: refused in plain words, nothing changes
        stale_item = stale.locator(".msg.metnos").last.locator(".activity li")
        await expect(stale_item).to_contain_text(i18n.get("UNDO_ALREADY", "en"))
        assert (home.workspace / "notes.md").read_text() == "milk\n"

        await page.reload()  # it stays undone
        await expect(page.locator(".msg.metnos").last.locator(".activity li")).to_contain_text(
            i18n.get("UNDO_DONE_ITEM", "en"))
        await expect(page.locator("button.undo")).to_have_count(0)
        await page.get_by_role("button", name=i18n.get("WEB_CHAT_AUDIT", "en")).click()
        lines = page.locator("#audit-lines li")
        await expect(lines.first).to_contain_text("fs_write")  # the latest first, its time
        await expect(lines.first.locator("time")).to_have_count(1)
        await page.screenshot(path=str(tmp_path / "undone.png"), full_page=True)
        await context.close()
    assert errors == []
    undos = [(ln["channel"], ln["outcome"]) for ln in audit_lines(home.path)
             if ln["action"] == "undo"]
    assert undos == [("web", "done"), ("web", "refused")]


LONG = "<script>window.__pwned = 'card'</script> " + "burro e marmellata per la colazione, " * 100


async def test_a_pending_approval_comes_back_and_waits_for_you_on_a_phone(
        make_home: MakeHome, scripted_llm: ScriptedLLM, browser: Any, tmp_path: Path) -> None:
    from playwright.async_api import expect

    lang = "it"
    home = make_home(llm=scripted_llm, lang=lang, METNOS_GATEWAY_PORT=str(free_port()))
    scripted_llm.enqueue_tool_call("fs_write", {"path": "lists/spesa.md", "content": LONG,
                                                "mode": "append"})
    scripted_llm.enqueue_text("Fatto.")
    with served_gateway(home):
        context, page, errors = await open_chat(browser, home, lang)
        await page.set_viewport_size(PHONE)
        menu = page.get_by_role("button", name=i18n.get("WEB_CHAT_MENU", lang))
        sessions = page.get_by_role("button", name=i18n.get("WEB_CHAT_SESSIONS", lang))
        await expect(menu).to_be_visible()
        await expect(sessions).to_be_hidden()  # behind the menu, not four rows of buttons
        header = await page.locator("header").bounding_box()
        assert header and header["height"] < 80
        await menu.click()
        await expect(sessions).to_be_visible()
        await menu.click()

        await page.fill("#text", "aggiungi burro e marmellata alla spesa")
        await page.keyboard.press("Enter")
        card = page.locator(".msg.card")
        action = i18n.get("CARD_fs_write_append", lang, content="", path="lists/spesa.md")
        await expect(card.locator(".card-action")).to_contain_text(
            action.split("«")[0], timeout=60_000)
        await expect(card.locator(".card-action")).to_contain_text("<script>")  # as text
        await expect(card.locator(".card-why")).to_have_text(
            i18n.get("CARD_WHY_ASK_POLICY_MEDIUM_RISK", lang))
        up_front = " ".join(await card.locator(".card-action, .card-why").all_inner_texts())
        assert "fs_write" not in up_front and "rischio" not in up_front
        # the sentence above had to cut the content: the details open by themselves and show
        # it whole (never a silent cut), as text
        await expect(card.locator("details")).to_have_attribute("open", "")
        whole = card.locator("details pre", has_text="__pwned")
        assert LONG.strip() in await whole.inner_text()
        await card.scroll_into_view_if_needed()
        await expect(page.locator("#text")).to_be_in_viewport()
        await expect(page.locator("#send")).to_be_in_viewport()
        assert await page.evaluate("document.documentElement.scrollWidth <= innerWidth")
        await page.screenshot(path=str(tmp_path / "phone-card.png"))
        await assert_nothing_ran(page)

        await page.reload()  # the pending approval comes back
        await expect(page.locator(".msg.card")).to_have_count(1, timeout=30_000)
        await expect(page.locator(".msg.card .card-action")).to_contain_text("lists/spesa.md")

        fresh = await new_tab(context, home)  # no conversation on screen: it waits for you
        await fresh.set_viewport_size(PHONE)
        waiting = fresh.locator("#waiting")
        await expect(waiting).to_be_visible()
        await expect(waiting.locator("h2")).to_have_text(i18n.get("WEB_CHAT_WAITING", lang))
        waiting_card = waiting.locator(".msg.card")
        # a value the sentence cut: the details are open by themselves, each argument whole
        await expect(waiting_card.locator("details")).to_have_attribute("open", "")
        assert LONG.strip() in await waiting_card.locator(
            "details pre", has_text="__pwned").inner_text()
        await expect(waiting_card.locator("details pre", has_text="append")).to_have_count(1)
        await expect(waiting_card.locator("details")).to_contain_text("fs_write")
        await fresh.screenshot(path=str(tmp_path / "phone-waiting.png"), full_page=True)
        await waiting_card.get_by_role("button", name=i18n.get("WEB_CHAT_APPROVE", lang)).click()
        await expect(waiting_card).to_contain_text(i18n.get("WEB_CHAT_APPROVED", lang))
        for _ in range(300):
            if (home.workspace / "lists" / "spesa.md").exists():
                break
            await asyncio.sleep(0.1)
        assert (home.workspace / "lists" / "spesa.md").read_text().startswith("<script>")
        await assert_nothing_ran(fresh)
        await context.close()
    assert errors == []


async def test_a_long_paste_is_never_cut_silently(make_home: MakeHome, browser: Any) -> None:
    from playwright.async_api import expect

    home = make_home(lang="en", METNOS_GATEWAY_PORT=str(free_port()))
    limit = home.settings.gateway.max_message_chars
    with served_gateway(home):
        context, page, errors = await open_chat(browser, home)
        await page.locator("body[data-ready]").wait_for(state="attached")
        pasted = "é" + "word " * 4000  # 20,001 characters
        await page.fill("#text", pasted)
        notice = page.locator("#paste-notice")
        await expect(notice).to_be_visible()
        await expect(notice).to_contain_text(i18n.get(
            "WEB_CHAT_PASTE_TOO_LONG", "en", count=len(pasted.strip()), limit=limit))
        await page.keyboard.press("Enter")  # nothing goes until the user chooses
        await asyncio.sleep(0.3)
        await expect(page.locator(".msg.me")).to_have_count(0)
        assert await page.input_value("#text") == pasted  # nothing was cut
        await page.get_by_role("button", name=i18n.get("WEB_CHAT_PASTE_CANCEL", "en")).click()
        await expect(notice).to_be_hidden()
        assert await page.input_value("#text") == pasted

        await page.keyboard.press("Enter")
        await page.get_by_role("button", name=i18n.get(
            "WEB_CHAT_PASTE_SEND_FIT", "en", limit=limit)).click()
        sent = page.locator(".msg.me .text")
        await expect(sent).to_have_count(1)
        assert await sent.evaluate("t => Array.from(t.textContent).length") <= limit
        assert (await sent.text_content() or "") == pasted[:limit].strip()
        await expect(page.locator(".msg.metnos")).to_have_count(1, timeout=60_000)  # answered
        await expect(page.locator(".msg.error")).to_have_count(0)
        await context.close()
    assert errors == []


async def test_a_reminder_comes_as_a_message_with_its_time(
        make_home: MakeHome, browser: Any, tmp_path: Path) -> None:
    from playwright.async_api import expect

    from metnos.faces.gateway.app import create_app
    from metnos.faces.gateway.outbox_delivery import with_reminders
    from metnos.features.reminders import outbox
    from metnos.ground.db.engine import database_url, make_engine
    from metnos.ground.db.models import utcnow
    from tests.support.home import served_app

    home = make_home(lang="en", METNOS_GATEWAY_PORT=str(free_port()),
                     METNOS_REMINDERS_DELIVERY_POLL_S="0.5")
    app = with_reminders(create_app(home.settings))  # the outbox's delivery, no schedules
    engine = make_engine(database_url(home.settings))
    with served_app(app, home.settings.gateway.port):
        context, page, errors = await open_chat(browser, home)
        await page.locator("body[data-ready]").wait_for(state="attached")
        due = utcnow()
        in_session(engine, outbox.add, outbox.Outbox(
            kind="reminder", user_id="owner", channel="web", address="web-session",
            text="⏰ Reminder: feed the cat", lang="en", due_at=due, scheduled_for=due))
        shown = page.locator(".msg.notice")
        await expect(shown.locator(".text")).to_have_text("⏰ Reminder: feed the cat",
                                                          timeout=30_000)
        await expect(shown.locator(".who")).to_contain_text(i18n.get("WEB_CHAT_NOTICE", "en"))
        stamp = shown.locator("time")
        at = datetime.fromisoformat(str(await stamp.get_attribute("datetime")))
        assert abs((at - due).total_seconds()) < 2
        await page.screenshot(path=str(tmp_path / "reminder.png"))
        await page.reload()  # delivered once: not again
        await page.locator("body[data-ready]").wait_for(state="attached")
        await asyncio.sleep(1.5)
        await expect(page.locator(".msg.notice")).to_have_count(0)
        await context.close()
    engine.dispose()
    assert errors == []


async def test_a_shopping_list_without_a_model_and_its_undo_button(
        make_home: MakeHome, browser: Any, tmp_path: Path) -> None:
    from playwright.async_api import expect

    lang = "it"
    home = make_home(lang=lang, METNOS_GATEWAY_PORT=str(free_port()))
    path = home.workspace / "lists" / "shopping.md"  # one list, whatever its language
    with served_gateway(home):
        context, page, errors = await open_chat(browser, home, lang)
        await page.set_viewport_size(PHONE)
        await page.locator("body[data-ready]").wait_for(state="attached")
        replies = page.locator(".msg.metnos")
        for n, text in enumerate(("aggiungi latte, uova e pane alla lista della spesa",
                                  "togli le uova dalla lista della spesa"), start=1):
            await page.fill("#text", text)
            await page.keyboard.press("Enter")
            await expect(replies).to_have_count(n, timeout=60_000)
            await expect(replies.nth(n - 1).locator("button.undo")).to_have_count(1)
        assert path.read_text() == "# Spesa\n\n- latte\n- pane\n"
        removal = replies.last
        await expect(removal.locator(".text")).to_contain_text("uova")
        await expect(removal).not_to_contain_text("metnos undo")
        await removal.locator("button.undo").click()
        await expect(removal.locator(".activity li")).to_contain_text(
            i18n.get("UNDO_DONE_ITEM", lang))
        assert path.read_text() == "# Spesa\n\n- latte\n- uova\n- pane\n"
        await expect(replies.first.locator("button.undo")).to_have_count(1)  # its own change
        await expect(page.locator("#text")).to_be_in_viewport()
        await page.screenshot(path=str(tmp_path / "phone-list-undone.png"))
        await context.close()
    assert errors == []
