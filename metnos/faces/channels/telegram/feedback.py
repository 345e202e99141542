"""👍 / 👎 under a Tutor answer in Telegram (SPEC §10): an inline keyboard bound to the asker.

A reply whose activity offers feedback (`{"feedback": <turn id>}`, `metnos.features.tutor.feedback`)
gets a row of two buttons, `tf:<turn id>:u` and `tf:<turn id>:d`; 👎 replaces them with the
typed causes (`tf:<turn id>:<w|i|o|n>`). Who may press is decided by the answer's row, never by
the button: the paired user who asked, in the chat the answer was given in. Anyone else gets
an alert and leaves an audit line; a rating goes through the same `rate` as the web chat's.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from aiogram.filters.callback_data import CallbackData
from aiogram.types import CallbackQuery, InlineKeyboardButton, InlineKeyboardMarkup

from metnos.faces.channels.telegram.cards import CHANNEL, paired_user, unpack
from metnos.features.tutor import feedback
from metnos.ground import i18n
from metnos.ground.db.engine import in_session
from metnos.turns.language import ui_locale

if TYPE_CHECKING:
    from metnos.faces.channels.telegram.bot import TelegramChannel

log = logging.getLogger(__name__)
CAUSES = {"w": "wrong_section", "i": "insufficient", "o": "outdated", "n": "not_about_metnos"}


class FeedbackButton(CallbackData, prefix="tf"):
    id: str
    r: str  # u (👍), d (👎: show the causes), or a cause's letter


def offered(activity: list[dict[str, Any]] | None) -> str | None:
    """The turn id a reply's activity offers feedback for, if any."""
    for item in activity or []:
        if isinstance(item, dict) and isinstance(item.get("feedback"), str):
            return str(item["feedback"])
    return None


def _button(text: str, turn_id: str, r: str) -> InlineKeyboardButton:
    return InlineKeyboardButton(text=text, callback_data=FeedbackButton(id=turn_id, r=r).pack())


def rating_row(turn_id: str, lang: str) -> list[InlineKeyboardButton]:
    return [_button("👍 " + i18n.get("TUTOR_FEEDBACK_UP", lang), turn_id, "u"),
            _button("👎 " + i18n.get("TUTOR_FEEDBACK_DOWN", lang), turn_id, "d")]


def cause_rows(turn_id: str, lang: str) -> list[list[InlineKeyboardButton]]:
    return [[_button(i18n.get(f"TUTOR_FEEDBACK_CAUSE_{cause.upper()}", lang), turn_id, r)]
            for r, cause in CAUSES.items()]


def with_feedback(markup: InlineKeyboardMarkup | None, activity: list[dict[str, Any]] | None,
                  lang: str) -> InlineKeyboardMarkup | None:
    """`markup` (a reply's Undo buttons, or none) with the 👍/👎 row when it offers feedback."""
    turn_id = offered(activity)
    if turn_id is None:
        return markup
    rows = list(markup.inline_keyboard) if markup is not None else []
    return InlineKeyboardMarkup(inline_keyboard=[*rows, rating_row(turn_id, lang)])


def parse_feedback(data: str | None) -> tuple[str, str] | None:
    """(turn id, u | d | a cause's letter) of a feedback button's data; None otherwise."""
    button = unpack(FeedbackButton, data)
    if button is None or not button.id or len(button.id) > 64 or (
            button.r not in CAUSES and button.r not in ("u", "d")):
        return None
    return button.id, button.r


async def handle_feedback(ch: TelegramChannel, query: CallbackQuery, turn_id: str,
                          r: str) -> None:
    lang = ui_locale(query.from_user.language_code, None, ch.service.settings)
    sender = str(query.from_user.id)
    message = query.message
    user_id = await asyncio.to_thread(in_session, ch.service.engine, paired_user, sender)
    if user_id is None or message is None:  # not paired: not the asker, whoever they are
        await asyncio.to_thread(ch.service.audit.append, sender=sender, channel=CHANNEL,
                                action=feedback.ACTION, turn_id=turn_id, decision="deny",
                                reason="ERR_TUTOR_FEEDBACK_NOT_YOURS", outcome="refused")
        await query.answer(i18n.get("ERR_TUTOR_FEEDBACK_NOT_YOURS", lang), show_alert=True)
        return
    session_id = f"telegram-{message.chat.id}"  # the chat the answer was given in
    try:
        if r == "d":
            await asyncio.to_thread(feedback.may_rate, ch.service.engine, ch.service.audit,
                                    turn_id, user_id=user_id, channel=CHANNEL,
                                    session_id=session_id)
        else:
            done = await asyncio.to_thread(
                feedback.rate, ch.service.engine, ch.service.audit, turn_id, user_id=user_id,
                rating="up" if r == "u" else "down", cause=CAUSES.get(r), channel=CHANNEL,
                session_id=session_id)
    except feedback.FeedbackRefused as exc:
        key = "ERR_TUTOR_FEEDBACK_NOT_YOURS" if exc.key == "ERR_TUTOR_FEEDBACK_UNKNOWN" \
            else exc.key
        await query.answer(i18n.get(key, lang), show_alert=True)
        if exc.key in ("ERR_TUTOR_FEEDBACK_ALREADY", "ERR_TUTOR_FEEDBACK_EXPIRED"):
            await _keyboard(ch, query, None)
        return
    if r == "d":
        await query.answer(i18n.get("TUTOR_FEEDBACK_WHY", lang))
        await _keyboard(ch, query, cause_rows(turn_id, lang))
        return
    thanks = "TUTOR_FEEDBACK_THANKS_UP" if done.rating == "up" else "TUTOR_FEEDBACK_THANKS_DOWN"
    await query.answer(i18n.get(thanks, lang))
    await _keyboard(ch, query, None)


async def _keyboard(ch: TelegramChannel, query: CallbackQuery,
                    rows: list[list[InlineKeyboardButton]] | None) -> None:
    """The message's feedback buttons replaced by `rows` (none: taken away); its other
    buttons (Undo) stay."""
    message = query.message
    if message is None:
        return
    markup = getattr(message, "reply_markup", None)
    kept = [[b for b in row if parse_feedback(b.callback_data) is None]
            for row in (markup.inline_keyboard if markup is not None else [])]
    kept = [row for row in kept if row] + (rows or [])
    try:
        await ch.bot.edit_message_reply_markup(
            chat_id=message.chat.id, message_id=message.message_id,
            reply_markup=InlineKeyboardMarkup(inline_keyboard=kept) if kept else None)
    except Exception as exc:  # too old to edit, or deleted: the rating itself is recorded
        log.info("telegram.feedback_edit_failed message_id=%s: %s", message.message_id, exc)

