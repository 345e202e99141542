"""A bot that only sends: the gateway's outbox delivery to Telegram chats.

Imported only when a bot token is configured (`metnos.faces.gateway.outbox_delivery`), so a
gateway without Telegram never loads aiogram. What Telegram said comes back as a word the
delivery acts on, not as aiogram's exceptions.
"""

from __future__ import annotations

import logging
from typing import Literal

from aiogram import Bot
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer
from aiogram.exceptions import TelegramBadRequest, TelegramForbiddenError, TelegramNetworkError

from metnos.faces.channels.telegram.proposals import keyboard
from metnos.features.proposals.models import Proposal

log = logging.getLogger(__name__)

# sent; refused for good (blocked, no such chat: never retried); unreachable (next round)
Sent = Literal["sent", "refused", "unreachable"]


class TelegramSender:
    """Sends one message to one chat, with the proposals' buttons when it carries some (the
    channel's poller is `metnos.faces.channels.telegram.bot`)."""

    def __init__(self, token: str, api_base: str) -> None:
        self.bot = Bot(token, session=AiohttpSession(api=TelegramAPIServer.from_base(api_base)))

    async def send(self, chat_id: int, text: str, proposals: list[Proposal] | None = None,
                   lang: str = "en") -> Sent:
        markup = keyboard(proposals, lang) if proposals else None
        try:
            await self.bot.send_message(chat_id, text, reply_markup=markup)
        except (TelegramForbiddenError, TelegramBadRequest) as exc:
            log.warning("telegram.send_refused chat=%s: %s", chat_id, exc)
            return "refused"
        except TelegramNetworkError as exc:
            log.warning("telegram.send_unreachable chat=%s: %s", chat_id, exc)
            return "unreachable"
        return "sent"

    async def close(self) -> None:
        await self.bot.session.close()
