"""A stranger's pairing request told to the owner on Telegram, with a "Drop" button (issue 25).

When someone unknown writes to the bot and gets a pairing code, the owner's private chat (when
the owner is paired on Telegram) gets one message: who asked (their Telegram id, and the
first name and username the update carries: outside text, escaped), and that the code, which
only the stranger has, is approved with `metnos pair approve CODE`. The code is never shown
to the owner here: the stranger hands it over, which is the ceremony.

The button carries `pd:<request id>` only. A tap is accepted only from the Telegram user
paired as the owner; anyone else gets an alert and leaves an audit line. The owner's tap
drops that request through `pairing.drop` (audited there: that sender gets no new code for
a day, its slot is free again) and the message then says so, or that the request was no
longer pending.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import TYPE_CHECKING

from aiogram.enums import ParseMode
from aiogram.filters.callback_data import CallbackData
from aiogram.types import CallbackQuery, InlineKeyboardButton, InlineKeyboardMarkup, User

from metnos.faces.channels.render import render
from metnos.faces.channels.telegram.cards import CHANNEL, paired_user, unpack
from metnos.features import pairing
from metnos.features.pairing import service as pairing_service
from metnos.ground import i18n
from metnos.ground.db.engine import in_session
from metnos.ground.db.engine import session as db_session
from metnos.turns.language import ui_locale

if TYPE_CHECKING:
    from metnos.faces.channels.telegram.bot import TelegramChannel

log = logging.getLogger(__name__)

ACTION = "pairing.drop"
REFUSED = "ERR_TELEGRAM_PAIRING_OWNER_ONLY"
_ID = re.compile(r"[0-9a-f-]{1,36}")  # a request id (a UUID); nothing else is looked up
_NAME_CHARS = 64


class DropButton(CallbackData, prefix="pd"):
    id: str  # the PairingRequest's id


def parse_drop(data: str | None) -> str | None:
    """The request id of a Drop button's data; None when it is not one."""
    button = unpack(DropButton, data)
    return button.id if button is not None and _ID.fullmatch(button.id) else None


def _owner_lang(ch: TelegramChannel) -> str:
    return ui_locale(ch.service.settings.lang, None, ch.service.settings)


def _name(text: str | None) -> str:
    """A Telegram name as one short line: control, format (bidi) and line characters out."""
    return "".join(c for c in text or "" if c.isprintable())[:_NAME_CHARS].strip()


def _who(user: User | None, sender: str, lang: str) -> str:
    """The sender's id, with the name and @username the update carries (raw: escaped when
    the template renders the whole message)."""
    name = _name(user.full_name if user is not None else None)
    username = _name(user.username if user is not None else None)
    if username:
        name = f"{name} (@{username})" if name else f"@{username}"
    if not name:
        return i18n.get("MSG_TELEGRAM_PAIRING_WHO_ID", lang, sender=sender)
    return i18n.get("MSG_TELEGRAM_PAIRING_WHO", lang, name=name, sender=sender)


async def tell_owner(ch: TelegramChannel, user: User | None, sender: str,
                     request_id: str | None) -> None:
    """One message in the owner's chat about a new request, with its Drop button (nothing
    when the owner is not paired on Telegram, or is the sender)."""
    if request_id is None:
        return
    lang = _owner_lang(ch)
    await _notify(ch, request_id, sender, i18n.get(
        "MSG_TELEGRAM_PAIRING_ASKED", lang, who=_who(user, sender, lang)))


async def tell_owner_of_device(ch: TelegramChannel, label: str, address: str,
                               request_id: str) -> None:
    """The same message for a device on the overlay that asked for access (its name as its
    holder typed it, and its address), with the same Drop button."""
    lang = _owner_lang(ch)
    await _notify(ch, request_id, None, i18n.get(
        "MSG_TELEGRAM_DEVICE_ASKED", lang, label=_name(label), address=address))


async def _notify(ch: TelegramChannel, request_id: str, sender: str | None, said: str) -> None:
    from metnos.faces.channels.telegram.conversation import _owner_chat

    chat = await asyncio.to_thread(_owner_chat, ch.service)
    if chat is None or str(chat) == sender:
        return
    lang = _owner_lang(ch)
    text = render(CHANNEL, "reply", lang, text=said)
    button = InlineKeyboardButton(text=i18n.get("MSG_TELEGRAM_BUTTON_PAIRING_DROP", lang),
                                  callback_data=DropButton(id=request_id).pack())
    try:
        await ch.bot.send_message(chat, text, parse_mode=ParseMode.HTML,
                                  reply_markup=InlineKeyboardMarkup(inline_keyboard=[[button]]))
    except Exception as exc:  # the Bot API's boundary: the request stands, every surface lists it
        log.warning("telegram.pairing_notice_failed request_id=%s: %s", request_id, exc)


async def handle_drop(ch: TelegramChannel, query: CallbackQuery, request_id: str) -> None:
    lang = ui_locale(query.from_user.language_code, None, ch.service.settings)
    sender = str(query.from_user.id)
    if not await asyncio.to_thread(_is_owner, ch, sender):
        await asyncio.to_thread(ch.service.audit.append, sender=sender, channel=CHANNEL,
                                action=ACTION, action_id=request_id, decision="deny",
                                reason=REFUSED, outcome="refused")
        await query.answer(i18n.get(REFUSED, lang), show_alert=True)
        return
    dropped = await asyncio.to_thread(_drop, ch, request_id)
    key = ("MSG_TELEGRAM_PAIRING_DROPPED" if dropped is not None
           else "MSG_TELEGRAM_PAIRING_NOT_PENDING")
    done = i18n.get(key, lang, sender=dropped or "")
    await query.answer(done)
    message = query.message
    if message is None:
        return
    try:
        await ch.bot.edit_message_text(text=render(CHANNEL, "reply", lang, text=done),
                                       chat_id=message.chat.id, message_id=message.message_id,
                                       parse_mode=ParseMode.HTML, reply_markup=None)
    except Exception as exc:  # deleted or too old to edit: the tap's answer said it
        log.info("telegram.pairing_notice_edit_failed request_id=%s: %s", request_id, exc)


def _is_owner(ch: TelegramChannel, sender: str) -> bool:
    return in_session(ch.service.engine, paired_user, sender) == pairing.OWNER_USER_ID


def _drop(ch: TelegramChannel, request_id: str) -> str | None:
    """Drop the request when it is still pending; the dropped sender's id, or None (audited
    either way)."""
    audit = ch.service.audit
    with db_session(ch.service.engine) as db:
        request = pairing_service.pending_request(db, request_id)
        if request is None:
            audit.append(sender=pairing.OWNER_USER_ID, channel=CHANNEL, action="pairing",
                         action_id=request_id, decision="deny",
                         reason="ERR_PAIRING_NOT_PENDING", outcome="not_pending")
            return None
        channel, sender_id = request.channel, request.sender_id
        found = pairing_service.drop(db, channel=channel, sender_id=sender_id, audit=audit,
                                     dropper=pairing.OWNER_USER_ID)
        return sender_id if any(r.id == request_id for r in found) else None
