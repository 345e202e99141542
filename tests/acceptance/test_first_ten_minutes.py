"""Issue 12, acceptance: a family's first ten minutes on a fresh instance without a model, in
Italian and English, through the web chat in Chromium (a desktop and a 390×844 phone) and
through Telegram (a paired chat on the fake Bot API).

Greeting, the time (in METNOS_TIMEZONE, not the machine's zone), three items added to the
shopping list in one sentence, the list, one removed, the removal undone from its button (the
file back, and the list shown again), a reminder "in two minutes" delivered to the same page or
chat (the clock shortened by METNOS_REMINDERS_TIME_SCALE, the real deployment runner and the
session's Prefect server), then "what can you do?". Every reply is short, in the user's
language (the fixed words of the i18n message that answers it) and free of tool jargon. Real
gateway, Prefect's turn flow, sandboxed executors; screenshots kept in test-artifacts/.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import html
import json
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

import pytest

from flows.reminder import scheduler
from flows.turn import resume_approval, run_turn
from metnos.faces.gateway.app import create_app
from metnos.faces.gateway.outbox_delivery import with_reminders
from metnos.faces.web.link import create_login_link
from metnos.faces.wiring import Edges
from metnos.ground import i18n
from metnos.testing.telegram_server import FakeTelegram
from tests.acceptance import family as F
from tests.reminders.test_channels import gateway
from tests.reminders.test_delivery import FAST, deployment_runner, wait_deployment
from tests.support.home import Home, MakeHome, served_app
from tests.support.pg import free_port
from tests.telegram.support import TOKEN, buttons, pair
from tests.telegram.test_undo_and_cards import answer_to

VIEWPORTS = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}
REPLY_S = 90  # one turn on a loaded two-core machine, generously
NOTICE_S = 150  # the reminder's six shortened seconds, the runner's poll, the flow's process
ANNA = 7101

Check = Callable[[str], list[str]]


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def passes(what: str, reply: str, found: list[str]) -> None:
    assert not found, f"{what!r} → {reply!r}: {found}"


@asynccontextmanager
async def web_gateway(home: Home) -> AsyncIterator[str]:
    """The gateway as `metnos serve` builds it (Prefect's turn flow, reminders scheduled on
    Prefect and delivered), on a real port for the browser."""
    app = with_reminders(create_app(home.settings, runner=run_turn, resumer=resume_approval,
                                    edges=Edges(scheduler=scheduler(home.settings))))
    with served_app(app, home.settings.gateway.port) as base:
        yield base


class WebChat:
    """The page as a person uses it: type, press Enter, read Metnos's reply."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.replies = page.locator(".msg.metnos")

    async def say(self, text: str) -> str:
        from playwright.async_api import expect

        count = await self.replies.count()
        await expect(self.page.locator("#send")).to_be_enabled(timeout=REPLY_S * 1000)
        await self.page.fill("#text", text)
        await self.page.keyboard.press("Enter")
        done = self.page.locator(".msg.metnos[data-turn]:not(.streaming)")
        await expect(done).to_have_count(count + 1, timeout=REPLY_S * 1000)
        await expect(self.page.locator("#send")).to_be_enabled(timeout=REPLY_S * 1000)
        reply = self.replies.last
        await expect(reply.locator(".who time")).not_to_have_text("")  # a local time
        text = str(await reply.locator(".text").inner_text()).strip()
        ran = reply.locator(".activity")  # what ran beside it is part of what the person reads
        if await ran.count():
            text += "\n" + str(await ran.inner_text()).strip()
        return text


@pytest.mark.timeout(480)
@pytest.mark.parametrize("viewport", ["desktop", "phone"])
@pytest.mark.parametrize("lang", ["it", "en"])
async def test_the_first_ten_minutes_in_the_web_chat(
        make_home: MakeHome, browser: Any, prefect_api: str, artifacts: Path, lang: str,
        viewport: str) -> None:
    from playwright.async_api import expect

    family = F.FAMILIES[lang]
    home = make_home(lang=lang, METNOS_GATEWAY_PORT=str(free_port()), METNOS_TIMEZONE=F.ZONE,
                     **FAST)
    path = home.workspace / "lists" / family.file
    with deployment_runner(home):  # starts while the family chats; awaited before the reminder
        async with web_gateway(home):
            context = await browser.new_context(locale=lang, viewport=VIEWPORTS[viewport],
                                                timezone_id=F.ZONE)
            page = await context.new_page()
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            await page.goto(create_login_link(home.settings).url)
            await page.locator("body[data-ready]").wait_for(state="attached")
            chat = WebChat(page)

            reply = await chat.say(family.greeting)
            passes(family.greeting, reply, F.greeting(reply, lang))
            asked = now()
            reply = await chat.say(family.time)
            passes(family.time, reply, F.clock(reply, lang, asked, now()))
            reply = await chat.say(family.add)
            passes(family.add, reply, F.added(reply, family))
            assert F.items_in(path) == list(family.items)
            reply = await chat.say(family.show)
            passes(family.show, reply, F.shown(reply, family, family.items))

            reply = await chat.say(family.remove)
            passes(family.remove, reply, F.removed(reply, family))
            assert F.items_in(path) == [family.items[0], family.items[2]]
            removal = chat.replies.last
            await removal.locator("button.undo").click()
            await expect(removal.locator(".activity li")).to_contain_text(
                i18n.get("UNDO_DONE_ITEM", lang))
            assert F.items_in(path) == list(family.items)
            reply = await chat.say(family.show)
            passes(family.show, reply, F.shown(reply, family, family.items))

            await wait_deployment(timeout_s=180)  # started with the test
            reply = await chat.say(family.remind)
            passes(family.remind, reply, F.reminder_set(reply, family))
            reply = await chat.say(family.can)
            passes(family.can, reply, F.capabilities(reply, lang))

            notice = page.locator(".msg.notice")
            await expect(notice).to_have_count(1, timeout=NOTICE_S * 1000)
            text = str(await notice.locator(".text").inner_text())
            passes(family.remind, text, F.notice(text, family))
            await expect(notice.locator(".who time")).not_to_have_text("")
            await expect(page.locator("#text")).to_be_in_viewport()
            await page.screenshot(path=str(artifacts / f"first-ten-minutes-{viewport}-{lang}.png"),
                                  full_page=viewport == "desktop")
            await context.close()
    assert errors == []


class TelegramChat:
    """A paired private chat: the person writes, the bot's messages are read as shown (each
    one's latest edit), its HTML as the person reads it."""

    def __init__(self, tg: FakeTelegram, chat_id: int, lang: str,
                 unprompted: tuple[str, ...] = ()) -> None:
        self.tg, self.chat_id, self.lang = tg, chat_id, lang
        self.unprompted = unprompted  # what the bot sends on its own (a reminder) is no reply

    def messages(self) -> list[tuple[int, str, list[str]]]:
        """(message id, text, its buttons' data) of every message the bot sent, in order."""
        shown: dict[int, tuple[str, list[str]]] = {}
        for call in self.tg.calls_of_any(("sendMessage", "editMessageText"), self.chat_id):
            if call.method == "sendMessage":
                key = int(call.result["message_id"])
            else:
                key = int(call.params["message_id"])
                if key not in shown:
                    continue
            data = [str(b.get("callback_data", "")) for b in buttons(call)]
            if "reply_markup" not in call.params and key in shown:
                data = shown[key][1]  # an edit of the text alone keeps the buttons
            shown[key] = (_plain(str(call.params.get("text", ""))), data)
        return [(key, text, data) for key, (text, data) in shown.items()]

    async def say(self, text: str, check: Check) -> tuple[int, str]:
        """Write `text`; the reply (message id, text) once it passes `check`, which waits for
        a reply that is streamed and edited; its problems when none does."""
        before = len(self.messages())
        self.tg.push_message(self.chat_id, text, language_code=self.lang)
        last: tuple[int, str] = (0, "")

        def ready(_: FakeTelegram) -> bool:
            nonlocal last
            new = [m for m in self.messages()[before:] if m[1] not in self.unprompted]
            if new:
                last = (new[-1][0], "\n".join(t for _, t, _ in new))
            return bool(new) and not check(last[1])

        with suppress(AssertionError):  # timed out: its problems are reported below
            await asyncio.to_thread(self.tg.wait_for, ready, REPLY_S, f"the reply to {text!r}")
        passes(text, last[1], check(last[1]) if last[0] else ["no reply"])
        return last

    async def undo_button(self, message_id: int) -> str:
        def found(_: FakeTelegram) -> bool:
            return any(key == message_id and _undo(data) for key, _, data in self.messages())

        await asyncio.to_thread(self.tg.wait_for, found, REPLY_S, "the Undo button")
        [data] = [d for key, _, ds in self.messages() if key == message_id
                  for d in ds if _undo([d])]
        return data


def _undo(data: list[str]) -> bool:
    from metnos.faces.channels.telegram.undo import parse_undo

    return any(parse_undo(d) for d in data)


def _plain(text: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", text))


@pytest.mark.timeout(420)
@pytest.mark.parametrize("lang", ["it", "en"])
async def test_the_first_ten_minutes_on_telegram(
        make_home: MakeHome, telegram: FakeTelegram, prefect_api: str, lang: str) -> None:
    family = F.FAMILIES[lang]
    home = make_home(lang=lang, METNOS_TIMEZONE=F.ZONE, METNOS_TELEGRAM_BOT_TOKEN=TOKEN,
                     METNOS_TELEGRAM_API_BASE=telegram.base_url,
                     METNOS_TELEGRAM_POLL_TIMEOUT_S="1", **FAST)
    path = home.workspace / "lists" / family.file
    with deployment_runner(home):
        async with gateway(home) as client:  # Telegram on, reminders scheduled and delivered
            await pair(client, telegram, ANNA, language_code=lang)
            expected = i18n.get("MSG_REMINDER_NOTICE", lang, text=family.chore)
            chat = TelegramChat(telegram, ANNA, lang, unprompted=(expected,))
            await chat.say(family.greeting, lambda r: F.greeting(r, lang))
            asked = now()
            await chat.say(family.time, lambda r: F.clock(r, lang, asked, now()))
            await chat.say(family.add, lambda r: F.added(r, family))
            assert F.items_in(path) == list(family.items)
            await chat.say(family.show, lambda r: F.shown(r, family, family.items))

            removal, _ = await chat.say(family.remove, lambda r: F.removed(r, family))
            assert F.items_in(path) == [family.items[0], family.items[2]]
            data = await chat.undo_button(removal)
            done = await answer_to(telegram, telegram.push_callback(
                ANNA, data, removal, language_code=lang))
            assert done.params["text"] == i18n.get("MSG_TELEGRAM_UNDONE", lang)
            mark = i18n.get("UNDO_DONE_ITEM", lang)  # the removal's reply says it was undone
            await asyncio.to_thread(telegram.wait_for, lambda t: any(
                key == removal and text.endswith(mark) for key, text, _ in chat.messages()),
                REPLY_S, "the removal marked undone")
            assert F.items_in(path) == list(family.items)
            await chat.say(family.show, lambda r: F.shown(r, family, family.items))

            await wait_deployment(timeout_s=180)  # started with the test
            await chat.say(family.remind, lambda r: F.reminder_set(r, family))
            await chat.say(family.can, lambda r: F.capabilities(r, lang))
            await asyncio.to_thread(telegram.wait_for, lambda t: expected in t.sent_texts(
                ANNA), NOTICE_S, "the reminder")
    assert telegram.sent_texts(ANNA).count(expected) == 1, json.dumps(
        telegram.sent_texts(ANNA), ensure_ascii=False)


@pytest.mark.parametrize("lang", ["it", "en"])
async def test_what_ran_beside_a_reply_is_said_in_plain_words(
        make_home: MakeHome, prefect_api: str, lang: str) -> None:
    """The lines shown under a reply (what ran) name no executor: "lists (lists/spesa.md)" is
    a tool's name and a path, and English inside an Italian reply."""
    from tests.gateway.test_turns import wait_closed
    from tests.support.home import gateway_client

    family = F.FAMILIES[lang]
    home = make_home(lang=lang)
    said = []
    async with gateway_client(home) as client:
        for text in (family.add, family.show, family.remove):
            resp = await client.post("/api/turns", json={"text": text})
            assert resp.status_code == 200, resp.text
            turn = await wait_closed(client, resp.json()["turn_id"])
            said += [(a["executor"], str(a["text"])) for a in turn["activity"]]
    assert [e for e, _ in said] == ["lists"] * 3
    assert [t for e, t in said if f"{e} (" in t] == []
