"""The reply as it streams: one Telegram message, edited while the model writes (SPEC §11).

The first piece of text sends a message; later pieces edit it with the text so far, at most
once every `EDIT_EVERY_S` and never with more than one request in flight (Telegram limits
edits, and a chat flickering ten times a second helps nobody). The reply then edits it to the
final text with the activity items after the prose, split as every reply is: the first piece
in the streamed message, the rest as new messages, with an Undo button per change under the
last one (`undo.py`). A text beyond one message's limit shows
its first piece while it streams. Each new model call of the turn streams into the same
message (the contract: deltas are replaced by what comes next, then by the reply); after an
approval card, a new message starts below the card.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

from aiogram.enums import ParseMode
from aiogram.types import InlineKeyboardMarkup, LinkPreviewOptions

from metnos.faces.channels.render import render
from metnos.faces.channels.telegram.cards import CHANNEL
from metnos.faces.channels.telegram.feedback import with_feedback
from metnos.faces.channels.telegram.links import telegram_links
from metnos.faces.channels.telegram.split import split_html
from metnos.faces.channels.telegram.undo import ReplyRef, keyboard, undo_buttons
from metnos.turns.actions import item_text, prose_without_hints

if TYPE_CHECKING:
    from metnos.faces.channels.telegram.bot import TelegramChannel

log = logging.getLogger(__name__)

EDIT_EVERY_S = 1.0
_NO_PREVIEW = LinkPreviewOptions(is_disabled=True)


def reply_html(text: str, activity: list[dict[str, Any]], lang: str,
               public_url: str = "") -> str:
    """The reply as Telegram HTML: the prose, then what ran (one line per activity item the
    prose does not already say; a change's Undo button stands for the `metnos undo` command
    its text would name). Links Telegram cannot open become names (`links.py`)."""
    prose = telegram_links(prose_without_hints(text, activity), public_url)
    items = [line for line in (item_text(a) for a in activity
                               if isinstance(a, dict) and a.get("text"))
             if line not in prose]  # the embedded planner's replies are these lines
    return render(CHANNEL, "reply", lang, text=prose, activity=items)


class LiveReply:
    """The streamed message of one chat's turn."""

    def __init__(self, ch: TelegramChannel, chat_id: int, lang: str,
                 every_s: float = EDIT_EVERY_S) -> None:
        self.ch, self.chat_id, self.lang, self.every_s = ch, chat_id, lang, every_s
        self.message_id: int | None = None
        self.shown = ""  # the HTML the message holds now
        self._text = ""  # the text so far (plain)
        self._last = 0.0  # when the message was last sent or edited
        self._closed = False
        self._wake = asyncio.Event()
        self._busy = asyncio.Lock()  # held while a request is in flight
        self._pump: asyncio.Task[None] | None = None

    def update(self, text: str) -> None:
        """The text so far changed: shown now, or at the next slot."""
        if self._closed or not text.strip():
            return
        self._text = text
        if self._pump is None:
            self._pump = asyncio.get_running_loop().create_task(self._run())
        self._wake.set()

    async def restart(self) -> None:
        """Show what streamed so far, then let the next text start a new message (after an
        approval card, so the rest of the turn reads below it)."""
        async with self._busy:
            await self._stop_pump()
            if self._text and self.message_id is not None:
                await self._show(self._first_piece(self._text))
            self.message_id, self.shown, self._text = None, "", ""

    async def finish(self, text: str | None, activity: list[dict[str, Any]]) -> None:
        """The final reply: the streamed message edited to it (or sent, if nothing streamed),
        the pieces beyond Telegram's limit as new messages."""
        async with self._busy:
            self._closed = True
            await self._stop_pump()
            pieces = split_html(reply_html(text or "", activity, self.lang,
                                             self.ch.service.settings.telegram.public_url)) if (
                text or activity) else []
            if not pieces:
                return
            actions = undo_buttons(self.ch.service, activity, self.lang)
            markup = with_feedback(keyboard(actions), activity, self.lang)  # under the last
            first = markup if len(pieces) == 1 else None
            if self.message_id is not None and not await self._edit(pieces[0], first):
                self.message_id = None  # the streamed message cannot be edited: send anew
            last = self.message_id
            rest = pieces[1:] if self.message_id is not None else pieces
            for i, piece in enumerate(rest):
                sent = await self.ch.bot.send_message(
                    self.chat_id, piece, parse_mode=ParseMode.HTML,
                    link_preview_options=_NO_PREVIEW,
                    reply_markup=markup if i == len(rest) - 1 else None)
                last = sent.message_id
            if actions and last is not None:
                self.ch.replies[last] = ReplyRef(self.chat_id, pieces[-1], self.lang, actions)

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            wait = self._last + self.every_s - time.monotonic()
            if self.message_id is not None and wait > 0:
                await asyncio.sleep(wait)
            self._wake.clear()
            async with self._busy:
                if self._closed:
                    return
                await self._show(self._first_piece(self._text))

    async def _stop_pump(self) -> None:
        """Cancel the pump (called with `_busy` held: no request of it is in flight)."""
        if self._pump is not None:
            self._pump.cancel()
            await asyncio.gather(self._pump, return_exceptions=True)
            self._pump = None
        self._wake.clear()

    def _first_piece(self, text: str) -> str:
        pieces = split_html(reply_html(text, [], self.lang,
                                        self.ch.service.settings.telegram.public_url))
        return pieces[0] if pieces else ""

    async def _show(self, html: str) -> None:
        """Send or edit the message to `html`; a failure is logged, the turn goes on."""
        if not html or html == self.shown:
            return
        if self.message_id is not None:
            await self._edit(html)
            return
        try:
            sent = await self.ch.bot.send_message(self.chat_id, html, parse_mode=ParseMode.HTML,
                                                  link_preview_options=_NO_PREVIEW)
        except Exception as exc:  # only a preview of the reply: the final one says it all
            log.info("telegram.stream_send_failed chat=%s: %s", self.chat_id, exc)
            return
        self.message_id, self.shown, self._last = sent.message_id, html, time.monotonic()

    async def _edit(self, html: str, markup: InlineKeyboardMarkup | None = None) -> bool:
        if html == self.shown and markup is None:
            return True
        assert self.message_id is not None
        try:
            await self.ch.bot.edit_message_text(text=html, chat_id=self.chat_id,
                                                message_id=self.message_id,
                                                parse_mode=ParseMode.HTML,
                                                link_preview_options=_NO_PREVIEW,
                                                reply_markup=markup)
        except Exception as exc:  # too many edits, or the user deleted it
            log.info("telegram.stream_edit_failed chat=%s: %s", self.chat_id, exc)
            return False
        finally:
            self._last = time.monotonic()
        self.shown = html
        return True


async def follow_deltas(ch: TelegramChannel, turn_id: str, live: LiveReply) -> None:
    """Feed the turn's `delta` events to `live` (the text of the latest model call) until
    the turn ends."""
    think: object = None
    text = ""
    async for event in ch.turns.follow(turn_id):
        if event.kind != "delta":
            continue
        if event.data.get("think") != think:
            think, text = event.data.get("think"), ""
        text += str(event.data.get("text") or "")
        live.update(text)
