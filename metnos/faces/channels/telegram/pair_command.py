"""`/pair CODE [PERSON]`: the owner approves a pairing code from their own Telegram chat.

The stranger who got a code hands it to the owner, who sends `/pair CODE` in their private
chat with the bot (`/pair CODE owner`, `/pair CODE telegram:123`: whose it is, as with
`metnos pair approve CODE --person P`). The message comes here after admission
(`conversation.py`: a stranger's `/pair` gets a code like any first message), so the sender's
user id and role are known: only the Telegram user paired as the owner approves; anyone else
is refused in one line and leaves an audit line. A `/pair` message is never a turn (it never
reaches the model), and the code is never written to a log line or the audit log
(`pairing.approve` audits by request id, and stores only the code's digest).

A forwarded `/pair` is someone else's words: it approves nothing (the owner is told how to
write the command) and is not a turn either, so a code in it never reaches the model.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from aiogram.enums import ChatType, ParseMode
from aiogram.types import LinkPreviewOptions, Message

from metnos.faces.channels.render import render
from metnos.faces.channels.telegram.cards import CHANNEL
from metnos.features import pairing
from metnos.ground import i18n
from metnos.ground.db.engine import session as db_session
from metnos.turns.runtime import Runtime

if TYPE_CHECKING:
    from metnos.faces.channels.telegram.bot import TelegramChannel

log = logging.getLogger(__name__)

COMMAND = "/pair"
REFUSED = "ERR_TELEGRAM_PAIR_OWNER_ONLY"
USAGE = "MSG_TELEGRAM_PAIR_USAGE"
_NO_PREVIEW = LinkPreviewOptions(is_disabled=True)


def pair_arguments(message: Message) -> list[str] | None:
    """The words after `/pair` (or `/pair@bot`) when the message is that command; None when
    it is anything else."""
    own = message.text if message.text is not None else message.caption
    words = (own or "").split()
    if not words or words[0].partition("@")[0].lower() != COMMAND:
        return None
    return words[1:]


async def handle_pair(ch: TelegramChannel, message: Message, admission: pairing.Admission,
                      arguments: list[str], lang: str) -> None:
    """Answer one admitted `/pair` message: approved, why not, or how to write it."""
    assert message.from_user is not None
    sender = str(message.from_user.id)
    owner = (admission.status == "paired" and admission.role == "owner"
             and admission.user_id == pairing.OWNER_USER_ID
             and message.chat.type == ChatType.PRIVATE)
    if not owner:
        await asyncio.to_thread(ch.service.audit.append, sender=sender, channel=CHANNEL,
                                action="pairing", decision="deny", reason=REFUSED,
                                outcome="not_owner")
        log.info("telegram.pair_refused sender=%s", sender)
        text = i18n.get(REFUSED, lang)
    elif message.forward_origin is not None or len(arguments) not in (1, 2):
        text = i18n.get(USAGE, lang)
    else:
        person = arguments[1] if len(arguments) == 2 else None
        text = await asyncio.to_thread(_approve, ch.service, pairing.OWNER_USER_ID,
                                       arguments[0], person, lang)
    await ch.bot.send_message(message.chat.id, render(CHANNEL, "reply", lang, text=text),
                              parse_mode=ParseMode.HTML, link_preview_options=_NO_PREVIEW)


def _approve(service: Runtime, approver: str, code: str, person: str | None,
             lang: str) -> str:
    """Approve `code` (blocking; audited by `pairing.approve`): what to tell the owner."""
    try:
        with db_session(service.engine) as db:
            paired = pairing.approve(db, code, approver=approver,
                                     settings=service.settings.policy, audit=service.audit,
                                     person=person)
            return i18n.get("MSG_PAIRING_APPROVED", lang, channel=paired.channel,
                            sender_id=paired.sender_id, role=paired.role,
                            user_id=paired.user_id)
    except pairing.PairingError as exc:
        log.info("telegram.pair_not_approved reason=%s", exc.key)
        return i18n.message(exc, lang)
