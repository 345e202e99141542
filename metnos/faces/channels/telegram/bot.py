"""The Telegram channel inside the gateway process: aiogram 3, long polling, no inbound port.

`start_telegram(turns, settings)` starts it when a bot token is configured and returns a
handle whose `stop()` ends it cleanly (polling stopped, in-flight work drained then
cancelled, the HTTP session closed). Updates are handled in tasks the channel owns
(`conversation.py` for messages, `callbacks.py` for button taps); only private chats are
served, and only `message` and `callback_query` updates are asked for (edits are ignored).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

from aiogram import Bot, Dispatcher
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer
from aiogram.enums import ChatType
from aiogram.types import CallbackQuery, Message

from metnos.faces.channels.telegram.callbacks import handle_callback
from metnos.faces.channels.telegram.config import TelegramConfig, load_config
from metnos.faces.channels.telegram.conversation import handle_message
from metnos.faces.channels.telegram.undo import ReplyRef
from metnos.ground.settings import Settings
from metnos.turns.handle import TurnHandle
from metnos.turns.runtime import Runtime

log = logging.getLogger(__name__)

ALLOWED_UPDATES = ["message", "callback_query"]
RETRY_S = 5.0
DRAIN_S = 5.0


@dataclass
class CardRef:
    chat_id: int
    message_id: int
    lang: str
    approval: dict[str, Any] = field(default_factory=dict)  # as shown (with why, sources)


@dataclass
class TelegramChannel:
    turns: TurnHandle  # what the gateway gives a channel: start, follow, reply, decide, undo
    config: TelegramConfig
    bot: Bot = field(init=False)
    cards: dict[str, CardRef] = field(default_factory=dict)  # approval id → its open card
    shown: set[str] = field(default_factory=set)  # approval ids already sent as cards
    replies: dict[int, ReplyRef] = field(default_factory=dict)  # message id → its Undo buttons
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)
    _runner: asyncio.Task[None] | None = None
    _stopped: bool = False
    _polling: asyncio.Event = field(default_factory=asyncio.Event)
    _dispatcher: Dispatcher = field(default_factory=Dispatcher)

    @property
    def service(self) -> Runtime:
        return self.turns.service

    @property
    def polling(self) -> bool:
        """The poller reached the Bot API and has not ended (the Tutor's services probe)."""
        return (self._runner is not None and not self._runner.done()
                and self._polling.is_set() and not self._stopped)

    async def start(self) -> None:
        server = TelegramAPIServer.from_base(self.config.api_base)
        self.bot = Bot(self.config.token, session=AiohttpSession(api=server))
        self._dispatcher.message.register(self._on_message)
        self._dispatcher.callback_query.register(self._on_callback)
        self._dispatcher.startup.register(self._on_startup)
        self._runner = asyncio.get_running_loop().create_task(self._run(), name="telegram")

    async def stop_polling(self) -> None:
        """Take no more updates (a draining gateway): they wait on Telegram's side for the
        next start; work in flight goes on and its replies are still sent."""
        if self._runner is not None:
            if self._polling.is_set():
                await self._dispatcher.stop_polling()
            self._runner.cancel()
            await asyncio.gather(self._runner, return_exceptions=True)
            self._runner = None

    async def settle(self, timeout_s: float) -> None:
        """Wait up to `timeout_s` for the work in flight (replies being sent) without
        cancelling it: a draining gateway lets the replies of finished turns go out."""
        if self._tasks and timeout_s > 0:
            await asyncio.wait(set(self._tasks), timeout=timeout_s)

    async def stop(self, drain_s: float = DRAIN_S) -> None:
        """Stop polling, let in-flight work finish for `drain_s`, cancel the rest, close.
        Calling it again does nothing."""
        if self._stopped:
            return
        self._stopped = True
        await self.stop_polling()
        await self.settle(drain_s)
        late = [task for task in self._tasks if not task.done()]
        for task in late:
            task.cancel()
        await asyncio.gather(*late, return_exceptions=True)
        await self.bot.session.close()
        log.info("telegram.stopped")

    def device_asked(self, label: str, address: str, request_id: str) -> None:
        """Tell the owner here that a device on the overlay asked for access (a task)."""
        from metnos.faces.channels.telegram.pairing_drop import tell_owner_of_device

        self.spawn(tell_owner_of_device(self, label, address, request_id))

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run `coro` as a task of the channel (drained or cancelled by `stop`)."""
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("telegram.task_failed", exc_info=task.exception())

    async def _on_startup(self) -> None:
        self._polling.set()

    async def _run(self) -> None:
        """Reach the Bot API (retrying while it is unreachable), then poll until stopped."""
        while True:
            try:
                me = await self.bot.me()
                await self.bot.delete_webhook(drop_pending_updates=False)
                break
            except Exception as exc:  # no network at boot: the gateway keeps running
                log.warning("telegram.unreachable retry_in=%ss: %s", RETRY_S, exc)
                await asyncio.sleep(RETRY_S)
        log.info("telegram.polling bot=@%s", me.username)
        await self._dispatcher.start_polling(
            self.bot, polling_timeout=self.config.poll_timeout_s, handle_as_tasks=False,
            allowed_updates=ALLOWED_UPDATES, handle_signals=False, close_bot_session=False)

    async def _on_message(self, message: Message) -> None:
        if message.chat.type != ChatType.PRIVATE or message.from_user is None:
            log.debug("telegram.ignored chat_type=%s", message.chat.type)
            return  # groups, supergroups, channels: never answered
        if message.from_user.is_bot or message.from_user.id != message.chat.id:
            return
        self.spawn(handle_message(self, message))

    async def _on_callback(self, query: CallbackQuery) -> None:
        self.spawn(handle_callback(self, query))


async def start_telegram(turns: TurnHandle, settings: Settings,
                         config: TelegramConfig | None = None) -> TelegramChannel | None:
    """Start the channel over the gateway's turn handle (`GatewayState.turns`); None when no
    bot token is configured. Call `await handle.stop()` before shutdown."""
    config = config or load_config(settings)
    if config is None:
        return None
    channel = TelegramChannel(turns, config)
    await channel.start()
    return channel
