"""A tap on an approval card's button (SPEC §4): accepted only from the approval's own user.
(An Undo button under a reply goes to `undo.py`, a proposal's Accept / Dismiss to
`proposals.py`, a pairing request's Drop to `pairing_drop.py`.)

The Telegram user is mapped to Metnos's user through their pairing; the decision then goes
through the turn handle as `POST /api/approvals/{id}` does (bound to the user, single-use,
refused after expiry, one audit line either way) and resumes the paused turn. Anyone else
gets an alert and leaves an audit line. The card is edited to show the outcome; the turn's
watcher (`conversation.watch_turn`) sends the reply when the turn ends.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from aiogram.types import CallbackQuery

from metnos.faces.channels.telegram.cards import CHANNEL, paired_user, parse_button, parse_show_all
from metnos.faces.channels.telegram.conversation import close_card
from metnos.faces.channels.telegram.feedback import handle_feedback, parse_feedback
from metnos.faces.channels.telegram.pairing_drop import handle_drop, parse_drop
from metnos.faces.channels.telegram.proposals import handle_proposal, parse_proposal
from metnos.faces.channels.telegram.show_all import handle_show_all
from metnos.faces.channels.telegram.undo import handle_undo, parse_undo
from metnos.ground import i18n
from metnos.ground.db.engine import in_session
from metnos.mechanisms import approvals
from metnos.mechanisms.approvals import ApprovalError
from metnos.turns.language import ui_locale

if TYPE_CHECKING:
    from metnos.faces.channels.telegram.bot import TelegramChannel

log = logging.getLogger(__name__)


async def handle_callback(ch: TelegramChannel, query: CallbackQuery) -> None:
    lang = ui_locale(query.from_user.language_code, None, ch.service.settings)
    action_id = parse_undo(query.data)
    if action_id is not None:  # an Undo button under a reply
        await handle_undo(ch, query, action_id)
        return
    rated = parse_feedback(query.data)
    if rated is not None:  # 👍 / 👎 (or a 👎's cause) under a Tutor answer
        await handle_feedback(ch, query, *rated)
        return
    answer = parse_proposal(query.data)
    if answer is not None:  # Accept / Dismiss under a proposal
        await handle_proposal(ch, query, answer)
        return
    request_id = parse_drop(query.data)
    if request_id is not None:  # "Drop" under a stranger's pairing request (the owner's)
        await handle_drop(ch, query, request_id)
        return
    shown = parse_show_all(query.data)
    if shown is not None:  # "Show all" under a card: its arguments, whole
        await handle_show_all(ch, query, shown)
        return
    parsed = parse_button(query.data)
    if parsed is None:
        await query.answer(i18n.get("ERR_TELEGRAM_CALLBACK_INVALID", lang), show_alert=True)
        return
    approval_id, decision = parsed
    sender = str(query.from_user.id)
    user_id = await asyncio.to_thread(in_session, ch.service.engine, paired_user, sender)
    if user_id is None:  # not paired (any more): not the approval's user, whoever they are
        await asyncio.to_thread(ch.service.audit.append, sender=sender, channel=CHANNEL,
                                action="approval", approval_id=approval_id[:64],
                                decision="deny", reason="ERR_APPROVAL_WRONG_USER",
                                outcome="refused")
        await query.answer(i18n.get("ERR_TELEGRAM_NOT_YOURS", lang), show_alert=True)
        return
    try:
        row, _ = await ch.turns.decide(approval_id, decision, user_id=user_id,
                                       channel=CHANNEL, via=CHANNEL)
    except ApprovalError as exc:  # another user's, already decided, expired: audited there
        key = "ERR_TELEGRAM_NOT_YOURS" if exc.key == "ERR_APPROVAL_WRONG_USER" else None
        await query.answer(i18n.get(key, lang) if key else i18n.message(exc, lang), show_alert=True)
        return
    done = "MSG_TELEGRAM_DECIDED_APPROVED" if row.status == "approved" else \
        "MSG_TELEGRAM_DECIDED_DENIED"
    await query.answer(i18n.get(done, lang))
    await close_card(ch, approvals.public(row), row.status)

