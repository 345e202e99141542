"""A tap on a card's "Show all" (issue 25): the approval's arguments, every character, each
with its length, escaped for HTML and split within Telegram's limit. Only for those who see
the card: the asker, whoever decides it, the owner; anyone else gets an alert and leaves an
audit line."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from aiogram.types import CallbackQuery

from metnos.faces.channels.telegram.cards import CHANNEL, full_values
from metnos.features import pairing
from metnos.ground import i18n
from metnos.ground.db.engine import session as db_session
from metnos.mechanisms import approvals
from metnos.mechanisms.approvals import ApprovalError
from metnos.turns.language import ui_locale

if TYPE_CHECKING:
    from metnos.faces.channels.telegram.bot import TelegramChannel

REFUSED = "ERR_TELEGRAM_NOT_YOURS"


async def handle_show_all(ch: TelegramChannel, query: CallbackQuery, approval_id: str) -> None:
    from metnos.faces.channels.telegram.conversation import send_html

    lang = ui_locale(query.from_user.language_code, None, ch.service.settings)
    sender = str(query.from_user.id)
    found = await asyncio.to_thread(_readable, ch, sender, approval_id)
    if found is None:
        await asyncio.to_thread(ch.service.audit.append, sender=sender, channel=CHANNEL,
                                action="approval.show_all", approval_id=approval_id[:64],
                                decision="deny", reason=REFUSED, outcome="refused")
        await query.answer(i18n.get(REFUSED, lang), show_alert=True)
        return
    await query.answer(i18n.get("MSG_TELEGRAM_SHOWN_ALL", lang))
    for message in full_values(found, lang):
        await send_html(ch, query.from_user.id, message)


def _readable(ch: TelegramChannel, sender: str, approval_id: str) -> dict[str, object] | None:
    """The approval as shown, when `sender` may read it; else None."""
    with db_session(ch.service.engine) as db:
        paired = pairing.find_paired(db, CHANNEL, sender)
        if paired is None:
            return None
        try:
            row = approvals.get(db, approval_id)
        except ApprovalError:
            return None
        readers = {row.user_id, approvals.approver_of(row), pairing.OWNER_USER_ID}
        return approvals.public(row) if paired.user_id in readers else None
