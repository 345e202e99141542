"""Accept / Dismiss buttons under a proposal Metnos makes on its own (SPEC §7.8).

A button carries `pr:<proposal id>:<y|n>` (41 bytes). A tap is accepted only from the paired
user the proposal is for (the owner); anyone else gets an alert and leaves an audit line.
The answer goes through the same function as `POST /api/proposals/{id}/accept`
(`metnos.features.proposals.answer`: once; an accepted proposal runs its kind's handler), then the
message loses that proposal's buttons and the tap is answered with what was done.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from aiogram.filters.callback_data import CallbackData
from aiogram.types import CallbackQuery, InlineKeyboardButton, InlineKeyboardMarkup

from metnos.faces.channels.telegram.cards import CHANNEL, paired_user, unpack
from metnos.features.proposals import store, usual
from metnos.features.proposals.answer import ACTION
from metnos.features.proposals.models import PROPOSAL_STATUSES, Proposal
from metnos.features.proposals.store import ProposalError
from metnos.ground import i18n
from metnos.ground.db.engine import in_session
from metnos.turns.language import ui_locale

if TYPE_CHECKING:
    from metnos.faces.channels.telegram.bot import TelegramChannel

log = logging.getLogger(__name__)
_ANSWERS = {"y": "accept", "n": "dismiss"}


class ProposalButton(CallbackData, prefix="pr"):
    id: str
    a: str  # y | n


def keyboard(rows: list[Proposal], lang: str,
             open_ids: set[str] | None = None) -> InlineKeyboardMarkup | None:
    """One row of Accept / Dismiss per proposal of the message still open (numbered as in
    the message when there are several)."""
    def button(key: str, row: Proposal, answer: str, n: int | None) -> InlineKeyboardButton:
        label = i18n.get(key, lang) if n is None else \
            i18n.get(f"{key}_ONE", lang, n=n)
        return InlineKeyboardButton(text=label,
                                    callback_data=ProposalButton(id=row.id, a=answer).pack())
    many = len(rows) > 1
    lines = [[button("MSG_PROPOSAL_BUTTON_ACCEPT", row, "y", n if many else None),
              button("MSG_PROPOSAL_BUTTON_DISMISS", row, "n", n if many else None)]
             for n, row in enumerate(rows, start=1) if open_ids is None or row.id in open_ids]
    return InlineKeyboardMarkup(inline_keyboard=lines) if lines else None


def parse_proposal(data: str | None) -> tuple[str, str] | None:
    """(proposal id, "accept" | "dismiss") of a button's data; None when it is not one."""
    button = unpack(ProposalButton, data)
    if button is None or button.a not in _ANSWERS or not button.id or len(button.id) > 64:
        return None
    return button.id, _ANSWERS[button.a]


async def handle_proposal(ch: TelegramChannel, query: CallbackQuery,
                          parsed: tuple[str, str]) -> None:
    proposal_id, answer = parsed
    service = ch.service
    lang = ui_locale(query.from_user.language_code, None, service.settings)
    sender = str(query.from_user.id)
    user_id = await asyncio.to_thread(in_session, service.engine, paired_user, sender)
    found = await asyncio.to_thread(in_session, service.engine, store.get, proposal_id)
    if user_id is None or found is None or found.user_id != user_id:
        await asyncio.to_thread(service.audit.append, sender=sender, channel=CHANNEL,
                                action=ACTION, action_id=proposal_id[:64],
                                decision="deny", reason="ERR_PROPOSAL_NOT_YOURS",
                                outcome="refused")
        await query.answer(i18n.get("ERR_TELEGRAM_NOT_YOURS", lang), show_alert=True)
        return
    try:
        row = await usual.answer(ch.turns, proposal_id, answer, user_id=user_id,
                                 sender=sender, channel=CHANNEL)
    except ProposalError as exc:  # already answered, unknown kind: audited there
        await query.answer(i18n.message(exc, lang), show_alert=True)
        return
    await query.answer(i18n.get(f"MSG_PROPOSAL_{row.status.upper()}", lang))
    await _refresh(ch, query, row, lang)


async def _refresh(ch: TelegramChannel, query: CallbackQuery, row: Proposal, lang: str) -> None:
    """The message keeps the buttons of its proposals still open."""
    message = query.message
    if message is None or row.outbox_id is None:
        return
    rows = await asyncio.to_thread(in_session, ch.service.engine, store.listing,
                                   user_id=row.user_id, statuses=PROPOSAL_STATUSES,
                                   outbox_id=row.outbox_id)
    rows.reverse()  # as in the message: oldest first
    still = {r.id for r in rows if r.status in store.OPEN}
    try:
        await ch.bot.edit_message_reply_markup(chat_id=message.chat.id,
                                               message_id=message.message_id,
                                               reply_markup=keyboard(rows, lang, still))
    except Exception as exc:  # the Bot API's boundary: the answer itself is recorded
        log.warning("telegram.proposal_edit_failed id=%s: %s", row.id, exc)

