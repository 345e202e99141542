"""Undo buttons under a reply (SPEC §5): one per change the reply lists, bound to its owner.

A button carries `un:<action id>` (35 bytes). A tap is accepted only from the paired user whose
turn made the change; the undo then runs through the turn handle as
`POST /api/actions/{id}/undo` does (its own rules: once per action, one audit line either
way), the reply is edited to say it was undone and its button goes away. A second tap on a
stale button says, in plain words, that it was already undone.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiogram.enums import ParseMode
from aiogram.filters.callback_data import CallbackData
from aiogram.types import CallbackQuery, InlineKeyboardButton, InlineKeyboardMarkup
from sqlmodel import col, select

from metnos.faces.channels.bidi import marked
from metnos.faces.channels.telegram.cards import CHANNEL, paired_user, unpack
from metnos.ground import i18n
from metnos.ground.db.engine import session as db_session
from metnos.ground.db.models import Turn, TurnStep
from metnos.ground.reversibility import valid_action_id
from metnos.mechanisms.undo import UndoError, is_undone
from metnos.turns.actions import item_text, undoable
from metnos.turns.language import ui_locale
from metnos.turns.runtime import Runtime

if TYPE_CHECKING:
    from metnos.faces.channels.telegram.bot import TelegramChannel

log = logging.getLogger(__name__)
LABEL_CHARS = 40


class UndoButton(CallbackData, prefix="un"):
    id: str


@dataclass
class ReplyRef:
    """A reply message with Undo buttons: its HTML and the changes still offered."""

    chat_id: int
    html: str
    lang: str
    actions: dict[str, str] = field(default_factory=dict)  # action id → its button label


def parse_undo(data: str | None) -> str | None:
    """The action id of an Undo button's data; None when it is not one."""
    button = unpack(UndoButton, data)
    return button.id if button is not None and valid_action_id(button.id) else None


def undo_buttons(service: Runtime, activity: list[dict[str, Any]] | None,
                 lang: str) -> dict[str, str]:
    """The changes of a reply still to be undone, with their button labels."""
    items = [a for a in undoable(activity)
             if not is_undone(service.settings.state_dir, a["action_id"])]
    if len(items) == 1:
        return {items[0]["action_id"]: i18n.get("MSG_TELEGRAM_BUTTON_UNDO", lang)}
    return {a["action_id"]: i18n.get("MSG_TELEGRAM_BUTTON_UNDO_ONE", lang,
                                     what=_label(item_text(a))) for a in items}


def keyboard(actions: dict[str, str]) -> InlineKeyboardMarkup | None:
    if not actions:
        return None
    return InlineKeyboardMarkup(inline_keyboard=[
        [InlineKeyboardButton(text=label, callback_data=UndoButton(id=action_id).pack())]
        for action_id, label in actions.items()])


async def handle_undo(ch: TelegramChannel, query: CallbackQuery, action_id: str) -> None:
    lang = ui_locale(query.from_user.language_code, None, ch.service.settings)
    sender = str(query.from_user.id)
    user_id, owner = await asyncio.to_thread(_who, ch.service, sender, action_id)
    if user_id is None or user_id != owner:
        await asyncio.to_thread(ch.service.audit.append, sender=user_id or sender,
                                channel=CHANNEL, action="undo", action_id=action_id,
                                decision="deny", reason="MSG_TELEGRAM_UNDO_NOT_YOURS",
                                outcome="refused")
        await query.answer(i18n.get("MSG_TELEGRAM_UNDO_NOT_YOURS", lang), show_alert=True)
        return
    try:
        report = await ch.turns.undo(action_id, sender=user_id, channel=CHANNEL)
    except UndoError as exc:
        already = exc.key == "ERR_UNDO_ALREADY_DONE"
        text = i18n.get("UNDO_ALREADY", lang) if already else i18n.get(
            "UNDO_FAILED", lang, reason=i18n.get(exc.key, lang, **exc.vars))
        await query.answer(text, show_alert=not already)
        if already:
            await _mark_undone(ch, query, action_id)
        return
    if report.outcome != "done":
        await query.answer(i18n.get("UNDO_FAILED", lang, reason=report.message(lang))[:190],
                           show_alert=True)
        return
    await query.answer(i18n.get("MSG_TELEGRAM_UNDONE", lang))
    await _mark_undone(ch, query, action_id)


async def _mark_undone(ch: TelegramChannel, query: CallbackQuery, action_id: str) -> None:
    """The reply says the change was undone; its button goes away (the others stay)."""
    message = query.message
    if message is None:
        return
    ref = ch.replies.get(message.message_id)
    try:
        if ref is not None:
            ref.actions.pop(action_id, None)
            ref.html = marked(ref.html + "\n\n↩️ <i>" + i18n.get("UNDO_DONE_ITEM", ref.lang)
                              + "</i>", ref.lang)
            await ch.bot.edit_message_text(text=ref.html, chat_id=ref.chat_id,
                                           message_id=message.message_id,
                                           parse_mode=ParseMode.HTML,
                                           reply_markup=keyboard(ref.actions))
            if not ref.actions:
                ch.replies.pop(message.message_id, None)
            return
        markup = getattr(message, "reply_markup", None)
        rows = [[b for b in row if parse_undo(b.callback_data) != action_id]
                for row in (markup.inline_keyboard if markup is not None else [])]
        rows = [row for row in rows if row]
        await ch.bot.edit_message_reply_markup(
            chat_id=message.chat.id, message_id=message.message_id,
            reply_markup=InlineKeyboardMarkup(inline_keyboard=rows) if rows else None)
    except Exception as exc:  # too old to edit, or deleted: the undo itself is done
        log.info("telegram.undo_edit_failed action_id=%s: %s", action_id, exc)


def _who(service: Runtime, sender: str, action_id: str) -> tuple[str | None, str | None]:
    """(the paired user of `sender`, the user whose turn made `action_id`)."""
    with db_session(service.engine) as db:
        owner = db.exec(select(Turn.sender).join(TurnStep, col(TurnStep.turn_id) == col(Turn.id))
                        .where(col(TurnStep.action_id) == action_id)).first()
        return paired_user(db, sender), owner


def _label(text: str) -> str:
    return text if len(text) <= LABEL_CHARS else text[:LABEL_CHARS - 1].rstrip() + "…"
