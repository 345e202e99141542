"""The gateway's outbound delivery: due outbox rows go to the channel they belong to.

An asyncio task of the app's lifespan looks every `[reminders] delivery_poll_s` for due,
undelivered rows: Telegram rows become a bot message in their chat; web rows wake the web
chats' notice streams (`GET /api/notices/events`), which claim and push them (a browser not
connected gets them when it connects again); CLI rows wait for `metnos chat`
(`GET /api/notices`). A row is marked delivered only once its channel took it. The same task
cancels the Prefect runs of undone reminders.

`with_reminders(app, scheduler)` adds all this to an app from `create_app` (the composition
root, `flows/gateway.py`, passes the Prefect scheduler of `flows/reminder.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

from aiogram import Bot
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer
from aiogram.exceptions import TelegramBadRequest, TelegramForbiddenError, TelegramNetworkError
from fastapi import FastAPI

from metnos.channels.telegram.config import load_config
from metnos.reminders import outbox
from metnos.reminders.effect import EFFECT, Scheduler, effect
from metnos.reminders.outbox import Outbox
from metnos.turns.service import TurnService

log = logging.getLogger(__name__)


class TelegramSender:
    """A bot that only sends (the channel's poller is `metnos.channels.telegram`)."""

    def __init__(self, token: str, api_base: str) -> None:
        self.bot = Bot(token, session=AiohttpSession(api=TelegramAPIServer.from_base(api_base)))

    async def send(self, chat_id: int, text: str) -> None:
        await self.bot.send_message(chat_id, text)

    async def close(self) -> None:
        await self.bot.session.close()


class Delivery:
    def __init__(self, service: TurnService, scheduler: Scheduler | None,
                 telegram: TelegramSender | None) -> None:
        self.service, self.scheduler, self.telegram = service, scheduler, telegram
        self._web: set[asyncio.Event] = set()  # one per open notice stream

    @contextlib.contextmanager
    def listen(self) -> Iterator[asyncio.Event]:
        """An event set whenever web notices may be waiting (set at once: look now)."""
        wake = asyncio.Event()
        wake.set()
        self._web.add(wake)
        try:
            yield wake
        finally:
            self._web.discard(wake)

    async def run(self) -> None:
        poll = self.service.settings.reminders.delivery_poll_s
        while True:
            try:
                await self.tick()
            except Exception:  # the loop's boundary: a bad round must not end delivery
                log.warning("outbox.delivery_failed", exc_info=True)
            await asyncio.sleep(poll)

    async def tick(self) -> None:
        engine = self.service.engine
        rows = await asyncio.to_thread(outbox.pending, engine)
        if any(row.channel == "web" for row in rows):
            for wake in self._web:
                wake.set()
        for row in rows:
            if row.channel == "telegram" and self.telegram is not None:
                try:
                    await self._to_telegram(row)
                except (TelegramForbiddenError, TelegramBadRequest) as exc:  # never will
                    log.warning("outbox.telegram_refused id=%s: %s", row.id, exc)
                    await asyncio.to_thread(outbox.cancel, engine, row.id)
                except TelegramNetworkError as exc:  # tried again at the next round
                    log.warning("outbox.telegram_unreachable id=%s: %s", row.id, exc)
        if self.scheduler is not None:
            for row in await asyncio.to_thread(outbox.runs_to_close, engine):
                await self.scheduler.cancel(str(row.flow_run_id))
                await asyncio.to_thread(outbox.close_run, engine, row.id)

    async def _to_telegram(self, row: Outbox) -> None:
        assert self.telegram is not None
        chat = row.address.removeprefix("telegram-")
        if not chat.lstrip("-").isdigit():  # never deliverable: not retried every round
            log.warning("outbox.bad_address id=%s", row.id)
            await asyncio.to_thread(outbox.cancel, self.service.engine, row.id)
            return
        await self.telegram.send(int(chat), row.text)
        await asyncio.to_thread(outbox.claim, self.service.engine, [row.id])


def notice(row: Outbox) -> dict[str, Any]:
    """A row as the channels get it (the web chat's `notice` event, the CLI's list)."""
    at = row.due_at or row.created_at
    return {"id": row.id, "kind": row.kind, "text": row.text, "lang": row.lang,
            "session_id": row.address, "at": at.isoformat(timespec="seconds"),
            "scheduled_for": row.scheduled_for.isoformat(timespec="seconds")
            if row.scheduled_for else None}


def with_reminders(app: FastAPI, scheduler: Scheduler | None) -> FastAPI:
    """`app` with reminders scheduled through `scheduler` and the delivery loop running."""
    from metnos.gateway.routes import notices

    inner = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[Any]:
        async with inner(app) as state:
            service: TurnService = app.state.service
            if scheduler is not None:
                service.effects[EFFECT] = effect(service, scheduler)
            config = load_config(service.settings)
            telegram = TelegramSender(config.token, config.api_base) if config else None
            delivery = app.state.delivery = Delivery(service, scheduler, telegram)
            task = asyncio.get_running_loop().create_task(delivery.run(), name="outbox")
            try:
                yield state
            finally:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
                if telegram is not None:
                    await telegram.close()

    app.router.lifespan_context = lifespan
    app.include_router(notices.router)
    return app
