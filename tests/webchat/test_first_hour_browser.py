"""Issue 27, acceptance: a Chromium walk through a family's first hour with the web chat.

Against a real gateway on loopback (no model: the embedded planner answers), in headless
Chromium: log in from the login link, chat a few turns, ask for a deletion (it waits for the
owner's yes), close the browser, open it again with the same login (a new context from the
saved cookies): the last conversation comes back with its history and the deletion waits in
the "waiting for you" panel; approving it there brings the result into the conversation, as
a card in the conversation would. A reload keeps the conversation; then the activity log and
"What I remember". Each stage is saved as a screenshot in a directory the test prints.

On every page a family member sees, the visible text (`innerText`: what is on the screen,
not the closed "details" kept one click away) names no tool and shows no argument syntax
(`name(arg=`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from metnos.ground import i18n
from metnos.ground.paths import resources_path
from tests.support.home import MakeHome, served_gateway
from tests.support.pg import free_port
from tests.webchat.test_history_browser import open_chat

LANG = "en"
ARG_SYNTAX = re.compile(r"\b\w+\(\s*\w+\s*=")  # fs_delete(path=…, any call with a keyword
# every executor Metnos ships; a name that is also an everyday word ("lists", "archive",
# "notify", "summarize") is a tool name only where it reads as one: with an underscore, or
# as the "using X" of a status line, or called with arguments
TOOLS = sorted(p.parent.name for p in resources_path("executors").glob("*/manifest.toml"))


def tool_words(text: str) -> list[str]:
    """The tool names and the argument syntax `text` shows a family member."""
    found = [m.group(0) for m in ARG_SYNTAX.finditer(text)]
    for name in TOOLS:
        plain = "_" not in name
        pattern = (rf"(?i)\b(?:using|usando|uso)\s+{name}\b|\b{name}\s*\(" if plain
                   else rf"\b{re.escape(name)}\b")
        found += [m.group(0) for m in re.finditer(pattern, text)]
    return found


class Walk:
    """The screenshots and the visible text of each stage."""

    def __init__(self, out: Path) -> None:
        self.out, self.n = out, 0
        out.mkdir(parents=True, exist_ok=True)
        print(f"\nfirst-hour screenshots: {out}")  # noqa: T201 - the test's output

    async def stage(self, page: Any, name: str) -> str:
        self.n += 1
        shot = self.out / f"{self.n:02d}-{name}.png"
        await page.screenshot(path=str(shot), full_page=True)
        print(f"  {shot.name}")  # noqa: T201 - the test's output
        text = str(await page.evaluate("document.body.innerText"))
        assert tool_words(text) == [], f"{name}: {tool_words(text)} in {shot}\n{text}"
        return text


def test_tool_words_sees_tools_and_syntax_but_not_everyday_words() -> None:
    assert tool_words('You denied fs_delete(path="homework.md")') == [
        "fs_delete(path=", "fs_delete"]
    assert tool_words("… using lists") == ["using lists"]
    assert tool_words("Added milk to the shopping list; the lists are in order.") == []
    assert {"fs_delete", "lists", "fs_find"} <= set(TOOLS)


async def test_the_first_hour_in_chromium(make_home: MakeHome, browser: Any,
                                          tmp_path: Path) -> None:
    from playwright.async_api import expect

    home = make_home(lang=LANG, METNOS_GATEWAY_PORT=str(free_port()))
    (home.workspace / "homework.md").write_text("maths: page 12\n")
    walk = Walk(tmp_path / "first-hour")
    with served_gateway(home):
        context, page, errors = await open_chat(browser, home, LANG)
        await page.locator("body[data-ready]").wait_for(state="attached")
        await walk.stage(page, "logged-in")
        replies = page.locator("#messages .msg.metnos")
        for n, text in enumerate(("hello", "add milk and bread to the shopping list",
                                  "what's the date today?"), start=1):
            await page.fill("#text", text)
            await page.keyboard.press("Enter")
            await expect(replies).to_have_count(n, timeout=60_000)
        await expect(page.locator("#status")).to_have_text("", timeout=30_000)
        await walk.stage(page, "three-turns")

        await page.fill("#text", "delete the file homework.md")
        await page.keyboard.press("Enter")
        card = page.locator("#messages .msg.card")
        await expect(card).to_have_count(1, timeout=60_000)
        await expect(card.locator(".card-action")).to_contain_text("homework.md")
        await walk.stage(page, "deletion-asks")
        assert (home.workspace / "homework.md").exists()

        # the browser closed with the question pending, then opened again, logged in
        state = await context.storage_state()
        await context.close()
        context = await browser.new_context(locale=LANG, storage_state=state)
        page = await context.new_page()
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        await page.goto(f"http://127.0.0.1:{home.settings.gateway.port}/")
        await page.locator("body[data-ready]").wait_for(state="attached")
        mine = page.locator("#messages .msg.me")
        await expect(mine.first).to_contain_text("hello", timeout=30_000)  # its history
        await expect(mine).to_have_count(3)  # the pending question is stored when it ends
        waiting = page.locator("#waiting-list .msg.card")
        await expect(waiting).to_have_count(1, timeout=30_000)
        await expect(waiting.locator(".card-action")).to_contain_text("homework.md")
        await walk.stage(page, "reopened-waiting")

        await waiting.get_by_role("button", name=i18n.get("WEB_CHAT_APPROVE", LANG)).click()
        await expect(waiting).to_contain_text(i18n.get("WEB_CHAT_APPROVED", LANG))
        result = page.locator("#messages .msg.metnos").last
        await expect(result).to_contain_text("homework.md", timeout=60_000)  # the result
        await expect(page.locator("#status")).to_have_text("", timeout=30_000)  # not "working"
        assert not (home.workspace / "homework.md").exists()
        await expect(mine).to_have_count(4)
        await expect(mine.last).to_have_text(re.compile("delete the file homework.md"))
        await walk.stage(page, "approved-from-waiting")
        shown = await page.locator("#messages .msg").count()

        await page.reload()
        await page.locator("body[data-ready]").wait_for(state="attached")
        await expect(page.locator("#messages .msg.metnos").last).to_contain_text(
            "homework.md", timeout=30_000)
        await expect(page.locator("#messages .msg.me")).to_have_count(4)
        assert await page.locator("#messages .msg").count() >= shown - 1  # no card twice
        await walk.stage(page, "reloaded")

        await page.get_by_role("button", name=i18n.get("WEB_CHAT_SESSIONS", LANG)).click()
        await expect(page.locator("#session-list button.session")).to_have_count(1)
        await walk.stage(page, "conversations")

        # the pages the `words` helper of issue 27 rewrites (activity log, "What I
        # remember"): checked by the same rule; a failure below that names an audit action
        # (`web.login`, an executor) or the hand-off graph is that helper's part
        await page.get_by_role("button", name=i18n.get("WEB_CHAT_AUDIT", LANG)).click()
        await expect(page.locator("#audit-lines li").first).to_be_visible(timeout=30_000)
        await walk.stage(page, "activity-log")
        await page.get_by_role("button", name=i18n.get("WEB_CHAT_MEMORY", LANG)).click()
        await expect(page).to_have_url(re.compile(r"/mnestoma$"))
        await expect(page.locator("h1")).to_be_visible()
        await walk.stage(page, "what-i-remember")
        await context.close()
    assert errors == []

