"""The web chat's memory and rendering in headless Chromium (issue 11 §10, §8).

Past conversations come from `GET /api/sessions`; a conversation shown again after a reload and
one opened from the list come from `GET /api/sessions/{id}/messages`. Metnos's text is rendered
as markdown (bold, lists, code blocks), and markup in it never runs: a `<script>`, an
`<img onerror>` and a `javascript:` link leave a global flag unset and add no element. A live
turn's text streams into its bubble (`delta` events) before the reply replaces it.
"""

from __future__ import annotations

import asyncio
import json
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx

from metnos.faces.web.link import create_login_link
from metnos.ground import i18n
from metnos.ground.db.engine import database_url, make_engine
from metnos.ground.db.engine import session as db_session
from metnos.ground.db.models import ChatMessage, ChatSession, Turn, utcnow
from metnos.testing.llm_server import ScriptedLLM, ToolCall
from tests.gateway.test_turns import wait_closed
from tests.support.home import Home, MakeHome, served_gateway
from tests.support.pg import free_port

MARKDOWN = ("Here is **the list**:\n\n- milk\n- bread\n\n```\nprint('hi')\n```\n\n"
            "<script>window.__pwned = 'script'</script>\n"
            "<img src=x onerror=\"window.__pwned = 'img'\">\n"
            "[click](javascript:window.__pwned='link') ![x](x onerror=alert(1))")
ACTIVITY = [{"executor": "fs_read", "status": "done", "text": "Read notes.md.",
             "action_id": None, "undo": False, "approval_id": None}]


def seed(home: Home) -> tuple[str, str]:
    """Two conversations of the owner: an older one with markdown and markup in Metnos's text
    and a tool result, and a newer one."""
    engine = make_engine(database_url(home.settings))
    ids = []
    with db_session(engine) as db:
        for age_s, title, user, reply, activity in (
                (600, "Shopping list", "what is on my list?", MARKDOWN, ACTIVITY),
                (60, "Weather", "will it rain?", "No rain today.", [])):
            at = utcnow() - timedelta(seconds=age_s)
            chat = ChatSession(user_id="owner", channel="web", interaction_language="en",
                               title=title, created_at=at, updated_at=at)
            db.add(chat)
            db.commit()
            turn = Turn(session_id=chat.id, channel="web", sender="owner", text=user,
                        lang="en", status="completed", reply=reply, activity=activity)
            db.add(turn)
            db.commit()
            rows = [ChatMessage(session_id=chat.id, turn_id=turn.id, role="user", content=user)]
            if activity:
                rows.append(ChatMessage(session_id=chat.id, turn_id=turn.id, role="tool",
                                        name="fs_read", content="<b>milk</b>"))
            rows.append(ChatMessage(session_id=chat.id, turn_id=turn.id, role="assistant",
                                    content=reply))
            for row in rows:
                db.add(row)
                db.commit()
            ids.append(chat.id)
    engine.dispose()
    return ids[0], ids[1]


async def open_chat(browser: Any, home: Home, lang: str = "en") -> tuple[Any, Any, list[str]]:
    context = await browser.new_context(locale=lang)
    page = await context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    await page.goto(create_login_link(home.settings).url)
    return context, page, errors


async def assert_nothing_ran(page: Any) -> None:
    assert await page.evaluate("window.__pwned") is None
    assert await page.locator("#messages script, #messages img, #messages [onerror]").count() == 0
    hrefs = await page.locator("#messages a").evaluate_all("els => els.map(a => a.href)")
    assert not [h for h in hrefs if h.lower().startswith("javascript:")]


async def test_past_conversations_open_render_markdown_and_survive_a_reload(
        make_home: MakeHome, browser: Any) -> None:
    from playwright.async_api import expect

    home = make_home(lang="en", METNOS_GATEWAY_PORT=str(free_port()))
    shopping, weather = seed(home)
    with served_gateway(home):
        context, page, errors = await open_chat(browser, home)
        await page.get_by_role("button", name=i18n.get("WEB_CHAT_SESSIONS", "en")).click()
        listed = page.locator("#session-list button.session")
        await expect(listed).to_have_count(2)
        assert [await b.get_attribute("data-session") for b in await listed.all()] == [
            weather, shopping]  # the most recent first
        await expect(listed.nth(1)).to_contain_text("Shopping list")
        await listed.nth(1).click()
        await expect(page.locator("#sessions")).to_be_hidden()

        reply = page.locator(".msg.metnos").last
        await expect(reply.locator("strong")).to_have_text("the list")
        await expect(reply.locator(".text ul li")).to_have_text(["milk", "bread"])
        await expect(reply.locator("pre code")).to_have_text("print('hi')")
        await expect(reply).to_contain_text("<script>window.__pwned = 'script'</script>")
        await expect(reply.locator(".activity li")).to_have_text(["Read notes.md."])
        tool = page.locator(".msg.tool")
        await expect(tool.locator("summary")).to_have_text(
            i18n.get("WEB_CHAT_TOOL_RESULT", "en", executor="fs_read"))
        await expect(tool.locator("pre")).to_have_text("<b>milk</b>")  # data, shown as text
        await expect(page.locator(".msg.me .text")).to_have_text(["what is on my list?"])
        await assert_nothing_ran(page)

        await page.reload()
        await expect(page.locator(".msg.metnos").last.locator("strong")).to_have_text("the list")
        await expect(page.locator(".msg.me .text")).to_have_text(["what is on my list?"])
        await assert_nothing_ran(page)

        await page.get_by_role("button", name=i18n.get("WEB_CHAT_NEW_SESSION", "en")).click()
        await expect(page.locator("#messages > li")).to_have_count(0)
        await page.reload()
        await expect(page.locator("#text")).to_be_visible()
        await asyncio.sleep(0.5)  # nothing comes back: the new conversation has no session yet
        await expect(page.locator("#messages > li")).to_have_count(0)
        await context.close()
    assert errors == []


STREAMED = ("Your workspace has **six** files:\n\n- IDENTITY.md\n- MEMORY.md\n\n"
            "```\nls *.md\n```\n\nThat is all <script>window.__pwned = 'live'</script> "
            "<img src=x onerror=\"window.__pwned = 'live-img'\"> for now, one word after "
            "another, as the model writes them.")
WATCH = """() => {
  window.__seen = [];
  const started = performance.now();
  new MutationObserver(() => {
    const live = document.querySelector(".msg.metnos.streaming .text");
    if (live) window.__seen.push([performance.now() - started, live.textContent]);
  }).observe(document.getElementById("messages"),
             {subtree: true, childList: true, characterData: true});
}"""


async def test_a_live_turn_streams_then_the_conversation_comes_back(
        make_home: MakeHome, scripted_llm: ScriptedLLM, browser: Any) -> None:
    from playwright.async_api import expect

    lang = "it"
    home = make_home(llm=scripted_llm, lang=lang, METNOS_GATEWAY_PORT=str(free_port()))
    scripted_llm.chunk_delay_s = 0.08  # about 40 chunks: three seconds of streaming
    scripted_llm.enqueue_tool_call("fs_find", {"pattern": "*.md"})
    scripted_llm.enqueue_text(STREAMED)
    with served_gateway(home):
        context, page, errors = await open_chat(browser, home, lang)
        await page.evaluate(WATCH)
        await page.fill("#text", "what files do I have?")
        await page.keyboard.press("Enter")
        reply = page.locator(".msg.metnos").last
        await expect(reply.locator(".activity li")).to_have_count(1, timeout=60_000)
        await expect(reply).not_to_have_class(re.compile("streaming"))
        seen: list[tuple[float, str]] = await page.evaluate("window.__seen")
        texts = [text for _, text in seen if text]
        assert len(set(texts)) >= 2, seen  # the bubble grew while the model wrote
        assert len(texts[0]) < len(STREAMED) / 2 < len(texts[-1]), texts
        assert seen[-1][0] - seen[0][0] > 0.5, seen  # over time, not in one go
        await expect(reply.locator("strong")).to_have_text("six")
        await expect(reply.locator(".text ul li")).to_have_text(["IDENTITY.md", "MEMORY.md"])
        await expect(reply.locator("pre code")).to_have_text("ls *.md")
        session_id = await page.evaluate("sessionStorage.getItem('metnos.session')")
        turn = await turn_of(home, session_id)
        assert turn["activity"] and turn["activity"][0]["executor"] == "fs_find"
        await expect(reply.locator(".activity li")).to_have_text([turn["activity"][0]["text"]])
        await assert_nothing_ran(page)

        await page.reload()  # the conversation again, from its stored messages
        await expect(page.locator(".msg.me .text")).to_have_text(["what files do I have?"])
        reply = page.locator(".msg.metnos").last
        await expect(reply.locator("strong")).to_have_text("six")
        await expect(reply.locator(".activity li")).to_have_text([turn["activity"][0]["text"]])
        await expect(page.locator(".msg.tool summary")).to_have_text(
            [i18n.get("WEB_CHAT_TOOL_RESULT", lang, executor="fs_find")])
        await assert_nothing_ran(page)

        await page.get_by_role("button", name=i18n.get("WEB_CHAT_NEW_SESSION", lang)).click()
        scripted_llm.enqueue_text("Hello again.")
        await page.fill("#text", "a second conversation")
        await page.keyboard.press("Enter")
        await expect(page.locator(".msg.metnos .text")).to_have_text(["Hello again."],
                                                                    timeout=60_000)
        await page.get_by_role("button", name=i18n.get("WEB_CHAT_SESSIONS", lang)).click()
        listed = page.locator("#session-list button.session")
        await expect(listed).to_have_count(2)
        await expect(listed.first).to_contain_text("a second conversation")
        await expect(listed.nth(1)).to_contain_text("what files do I have?")
        await listed.nth(1).click()
        await expect(page.locator(".msg.me .text")).to_have_text(["what files do I have?"])

        scripted_llm.enqueue_text("Still six.")
        await page.fill("#text", "and now?")
        await page.keyboard.press("Enter")
        await expect(page.locator(".msg.metnos .text").last).to_have_text("Still six.",
                                                                          timeout=60_000)
        sent = json.dumps(scripted_llm.requests[-1]["messages"])
        assert "what files do I have?" in sent and "a second conversation" not in sent
        assert await page.evaluate("sessionStorage.getItem('metnos.session')") == session_id
        await context.close()
    assert errors == []


async def turn_of(home: Home, session_id: str) -> dict[str, Any]:
    """The session's latest turn through the API, once its bookkeeping is done."""
    base = f"http://127.0.0.1:{home.settings.gateway.port}"
    async with httpx.AsyncClient(base_url=base, headers=home.auth(), timeout=30) as client:
        messages = (await client.get(f"/api/sessions/{session_id}/messages")).json()
        return await wait_closed(client, messages["messages"][-1]["turn_id"])


async def test_a_reload_while_a_step_waits_shows_its_card_again(
        make_home: MakeHome, scripted_llm: ScriptedLLM, browser: Any, tmp_path: Path) -> None:
    from playwright.async_api import expect

    home = make_home(llm=scripted_llm, lang="en", METNOS_GATEWAY_PORT=str(free_port()))
    scripted_llm.chunk_delay_s = 0.02
    scripted_llm.enqueue_tool_calls(
        [ToolCall("fs_write", {"path": "todo.md", "content": "call mum\n"})],
        text="I will write it down.")  # streamed, then the call waits for the owner
    scripted_llm.enqueue_text("Done: **todo.md** has your note.")
    with served_gateway(home):
        context, page, errors = await open_chat(browser, home)
        await page.fill("#text", "note: call mum")
        await page.keyboard.press("Enter")
        card = page.locator(".msg.card")
        await expect(card).to_contain_text("fs_write", timeout=60_000)
        said = page.locator(".msg.metnos")
        await expect(said).to_have_count(1)  # what streamed stays above the card, settled
        await expect(said.locator(".text")).to_have_text("I will write it down.")
        await expect(page.locator(".streaming")).to_have_count(0)
        await page.reload()
        await expect(page.locator(".msg.me .text")).to_have_text(["note: call mum"])
        await expect(card).to_contain_text("fs_write", timeout=30_000)
        await card.get_by_role("button", name=i18n.get("WEB_CHAT_APPROVE", "en")).click()
        reply = page.locator(".msg.metnos").last
        await expect(reply.locator("strong")).to_have_text("todo.md", timeout=60_000)
        await expect(reply.locator(".activity li")).to_have_count(1)
        assert (home.workspace / "todo.md").read_text() == "call mum\n"
        await page.screenshot(path=str(tmp_path / "approved.png"))
        last = await reply.bounding_box()
        composer = await page.locator("#composer").bounding_box()
        assert last and composer and last["y"] + last["height"] <= composer["y"]  # not under it
        await page.reload()  # the finished turn comes back from its stored messages
        await expect(page.locator(".msg.metnos").last.locator("strong")).to_have_text("todo.md")
        await expect(page.locator(".msg.card")).to_have_count(0)
        await context.close()
    assert errors == []


async def test_earlier_messages_are_loaded_on_request(make_home: MakeHome, browser: Any) -> None:
    from playwright.async_api import expect

    home = make_home(lang="en", METNOS_GATEWAY_PORT=str(free_port()))
    engine = make_engine(database_url(home.settings))
    with db_session(engine) as db:
        chat = ChatSession(user_id="owner", channel="web", interaction_language="en",
                           title="Long", summary="Before all this: the user likes tea.")
        db.add(chat)
        db.commit()
        for n in range(130):  # one at a time: ids in this order
            db.add(ChatMessage(session_id=chat.id, role="user" if n % 2 == 0 else "assistant",
                               content=f"m{n}"))
            db.commit()
    engine.dispose()
    with served_gateway(home):
        context, page, errors = await open_chat(browser, home)
        await page.get_by_role("button", name=i18n.get("WEB_CHAT_SESSIONS", "en")).click()
        await page.locator("#session-list button.session").first.click()
        texts = page.locator("#messages .text")
        await expect(texts).to_have_count(100)  # the latest page
        await expect(texts.first).to_have_text("m30")
        await expect(page.locator("#summary")).to_contain_text("the user likes tea")
        earlier = page.get_by_role("button", name=i18n.get("WEB_CHAT_EARLIER", "en"))
        await earlier.click()
        await expect(texts).to_have_count(130)
        await expect(texts.first).to_have_text("m0")
        await expect(texts.last).to_have_text("m129")
        await expect(earlier).to_be_hidden()
        await context.close()
    assert errors == []


async def test_a_message_sent_while_the_conversation_comes_back_joins_it(
        make_home: MakeHome, scripted_llm: ScriptedLLM, browser: Any) -> None:
    """A new tab shows the latest conversation again (a slow answer here: a busy server).
    What the person types meanwhile waits for it, then goes to that conversation and gets
    its reply on screen: before, the conversation coming back wiped the message, and its
    reply went to a new conversation nobody saw."""
    from playwright.async_api import Route, expect

    home = make_home(llm=scripted_llm, lang="en", METNOS_GATEWAY_PORT=str(free_port()))
    _, weather = seed(home)
    scripted_llm.enqueue_text("Sunny all week.")
    with served_gateway(home):
        context, page, errors = await open_chat(browser, home)

        async def slowly(route: Route) -> None:
            await asyncio.sleep(2.0)
            await route.continue_()

        await page.route(re.compile(r".*/api/sessions/[^/]+/messages.*"), slowly)
        await page.locator("body[data-ready]").wait_for(state="attached")
        await page.fill("#text", "and tomorrow?")
        await page.keyboard.press("Enter")
        await expect(page.locator(".msg.metnos .text").last).to_have_text(
            "Sunny all week.", timeout=60_000)
        await expect(page.locator(".msg.me .text")).to_have_text(
            ["will it rain?", "and tomorrow?"])
        assert await page.evaluate("sessionStorage.getItem('metnos.session')") == weather
        await context.close()
    assert errors == []
