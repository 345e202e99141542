"""What the Telegram tests share: the real gateway with the channel started on a fake Bot API."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx

from metnos.faces.channels.telegram import TelegramConfig
from metnos.faces.channels.telegram.bot import TelegramChannel, start_telegram
from metnos.testing.telegram_server import Call, FakeTelegram
from tests.support.home import Home, gateway_client

TOKEN = "123456:TEST-token_for-the-fake-server"
CODE = re.compile(r"<code>([A-Z0-9]{8})</code>")


@asynccontextmanager
async def telegram_gateway(home: Home, tg: FakeTelegram, *, prefect: bool = True,
                           owner: int | None = None, owner_lang: str = "en"
                           ) -> AsyncIterator[tuple[httpx.AsyncClient, TelegramChannel]]:
    """The gateway app (lifespan, runner) with the Telegram channel polling `tg`; `owner`:
    a sender paired first (so the owner), writing in `owner_lang`."""
    async with gateway_client(home, prefect=prefect) as client:
        config = TelegramConfig(token=TOKEN, api_base=tg.base_url, poll_timeout_s=1)
        channel = await start_telegram(client.app.state.gateway.turns,  # type: ignore[attr-defined]
                                       home.settings, config)
        assert channel is not None
        client.app.state.gateway.telegram = channel  # type: ignore[attr-defined] - as the lifespan does
        try:
            if owner is not None:
                await pair(client, tg, owner, language_code=owner_lang)
            yield client, channel
        finally:
            await channel.stop(drain_s=2)


async def until(tg: FakeTelegram, predicate: Callable[[FakeTelegram], bool],
                what: str = "condition", timeout_s: float = 60) -> None:
    await asyncio.to_thread(tg.wait_for, predicate, timeout_s, what)


async def pair(client: httpx.AsyncClient, tg: FakeTelegram, user_id: int,
               language_code: str = "it") -> None:
    """Pair `user_id` the way a person does: write, get the code, the owner approves it."""
    before = len(tg.sent_texts(user_id))
    tg.push_message(user_id, "ciao", language_code=language_code)
    await until(tg, lambda t: len(t.sent_texts(user_id)) > before, "the pairing code")
    found = CODE.search(tg.sent_texts(user_id)[-1])
    assert found is not None, tg.sent_texts(user_id)
    resp = await client.post("/api/pairing/approve", json={"code": found.group(1)})
    assert resp.status_code == 200, resp.text


def buttons(call: Call) -> list[dict[str, Any]]:
    markup = call.params.get("reply_markup") or {}
    if isinstance(markup, str):
        markup = json.loads(markup)
    return [b for row in markup.get("inline_keyboard", []) for b in row]


def card_buttons(call: Call) -> list[dict[str, Any]]:
    """The buttons of a message that are not a pairing notice's Drop (the owner's chat gets
    one for each stranger who asks to pair, a member paired in a test included)."""
    return [b for b in buttons(call) if not str(b.get("callback_data", "")).startswith("pd:")]


def shown_texts(tg: FakeTelegram, chat_id: int) -> list[str]:
    """What each message the bot sent to `chat_id` says now (its latest edit), in order:
    a streamed reply is sent at its first words and edited to its final text."""
    texts: dict[str, str] = {}
    for call in tg.calls_of_any(("sendMessage", "editMessageText"), chat_id):
        key = str(call.result["message_id"] if call.method == "sendMessage"
                  else call.params.get("message_id"))
        if call.method == "sendMessage" or key in texts:
            texts[key] = str(call.params.get("text", ""))
    return list(texts.values())


def said(tg: FakeTelegram, chat_id: int) -> list[str]:
    """Every text sent or edited into the chat (a streamed reply is edited to its end)."""
    return [str(c.params.get("text") or "") for c in tg.calls
            if c.method in ("sendMessage", "editMessageText")
            and str(c.params.get("chat_id")) == str(chat_id)]


def answers(tg: FakeTelegram, query_id: str) -> list[Call]:
    """The answers to one button tap (an alert, or the quiet acknowledgement)."""
    return [c for c in tg.calls_of("answerCallbackQuery")
            if c.params.get("callback_query_id") == query_id]
