"""Approval cards in plain words (what happens to which file, why Metnos asks), the exact
arguments in a collapsed block, with Approve/Deny buttons.

The buttons carry `ap:<approval id>:<y|n>` (well under the Bot API's 64 bytes); who may press
them is decided by the approval's binding, never by the button (`callbacks.py`).
"""

from __future__ import annotations

from datetime import datetime, tzinfo
from typing import Any, TypeVar

from aiogram.filters.callback_data import CallbackData, CallbackDataException
from aiogram.types import InlineKeyboardButton, InlineKeyboardMarkup
from sqlmodel import Session

from metnos.faces.channels.render import render
from metnos.faces.channels.telegram.split import LIMIT, units
from metnos.features import pairing
from metnos.ground import i18n
from metnos.ground.escape import html_text
from metnos.mechanisms.approvals.card import PlainCard, plain_card, value_size

CHANNEL = "telegram"
CARD_ARGS_BUDGET = 2400  # characters shared by the shown argument values of one card
SHOW_ALL_PART = 3500  # escaped characters of a value per "Show all" message (limit 4096)
_DECISIONS = {"y": "approve", "n": "deny"}
B = TypeVar("B", bound=CallbackData)


class ApprovalButton(CallbackData, prefix="ap"):
    id: str
    d: str  # y | n


class ShowAllButton(CallbackData, prefix="sa"):
    id: str  # the approval whose arguments are sent whole (`show_all.py`)


def paired_user(db: Session, sender: str) -> str | None:
    """The Metnos user the Telegram user `sender` is paired with, or None (blocking): whose
    a button's tap is."""
    found = pairing.find_paired(db, CHANNEL, sender)
    return found.user_id if found is not None else None


def keyboard(approval_id: str, lang: str, *, decide: bool = True,
             show_all: bool = False) -> InlineKeyboardMarkup | None:
    """Approve/Deny (for who decides) and, when the card cut a value, "Show all"."""
    def button(key: str, d: str) -> InlineKeyboardButton:
        data = ApprovalButton(id=approval_id, d=d).pack()
        return InlineKeyboardButton(text=i18n.get(key, lang), callback_data=data)
    rows = [[button("MSG_TELEGRAM_BUTTON_APPROVE", "y"),
             button("MSG_TELEGRAM_BUTTON_DENY", "n")]] if decide else []
    if show_all:
        rows.append([InlineKeyboardButton(text=i18n.get("MSG_TELEGRAM_BUTTON_SHOW_ALL", lang),
                                          callback_data=ShowAllButton(id=approval_id).pack())])
    return InlineKeyboardMarkup(inline_keyboard=rows) if rows else None


def unpack(kind: type[B], data: str | None) -> B | None:
    """The `kind` button packed in a tap's `data`; None when it is not one."""
    try:
        return kind.unpack(data or "")
    except (CallbackDataException, ValueError, TypeError):
        return None


def parse_show_all(data: str | None) -> str | None:
    """The approval id of a "Show all" button's data; None when it is not one."""
    button = unpack(ShowAllButton, data)
    return button.id if button is not None and button.id and len(button.id) <= 64 else None


def parse_button(data: str | None) -> tuple[str, str] | None:
    """(approval id, "approve" | "deny") of a button's data; None when it is not ours."""
    button = unpack(ApprovalButton, data)
    if button is None or button.d not in _DECISIONS or not button.id or len(button.id) > 64:
        return None
    return button.id, _DECISIONS[button.d]


def card(approval: dict[str, Any], lang: str, outcome: str | None = None,
         tz: tzinfo | None = None) -> str:
    """The card of `approval` (`metnos.mechanisms.approvals.public`, maybe with the turn's `why` and
    `sources`) in plain words, the raw arguments in a collapsed block; with its outcome once
    decided. Times in `tz` (the household's), else UTC."""
    plain = plain_card(approval, lang)
    return _card_text(approval, plain, lang, outcome, tz, _budget(plain))


def cuts(approval: dict[str, Any], lang: str) -> bool:
    """Whether the card may show a value shortened (then it gets a "Show all" button)."""
    plain = plain_card(approval, lang)
    return plain.cut or any(len(value) > 80 for _, value in plain.details)


def _budget(plain: PlainCard) -> int:
    return max(80, CARD_ARGS_BUDGET // max(1, len(plain.details)))


def _card_text(approval: dict[str, Any], plain: PlainCard, lang: str, outcome: str | None,
               tz: tzinfo | None, budget: int) -> str:
    files = [i18n.get("CARD_FILE_EXISTS" if state else "CARD_FILE_NEW", lang, path=path)
             for path, state in sorted((approval.get("files") or {}).items())]
    text = render(CHANNEL, "approval", lang, title=i18n.get("CARD_TITLE", lang),
                  action=plain.action, why=plain.why, files=files,
                  details_label=i18n.get("CARD_DETAILS", lang),
                  details=[(name, _cut(value, budget, lang)) for name, value in plain.details],
                  executor=approval["executor"],
                  valid=i18n.get("CARD_VALID_UNTIL", lang, time=_expires(approval, tz)),
                  outcome=outcome)
    if units(text) > LIMIT:  # a card is one message: shrink the arguments, never the action
        return _card_text(approval, plain, lang, outcome, tz, 80) if budget > 80 \
            else text[:LIMIT]
    return text


def _cut(text: str, budget: int, lang: str) -> str:
    """A value within `budget`; a longer one says it is cut and how long it is whole."""
    if len(text) <= budget:
        return text
    chars, lines = value_size(text)
    return text[:budget] + "… " + i18n.get("CARD_VALUE_CUT", lang, chars=chars, lines=lines)


def full_values(approval: dict[str, Any], lang: str) -> list[str]:
    """Every argument whole (HTML, escaped), each with its length, in as many messages as
    Telegram's limit needs (a long value in numbered parts, no character lost at a split):
    what "Show all" sends."""
    messages = [f"<b>{html_text(i18n.get('CARD_TITLE', lang))}</b> · "
                f"<code>{html_text(str(approval['executor']))}</code>"]
    for name, value in plain_card(approval, lang).details:
        chars, lines = value_size(value)
        size = i18n.get("CARD_VALUE_SIZE", lang, chars=chars, lines=lines)
        parts = _escaped_parts(value, SHOW_ALL_PART)
        for n, part in enumerate(parts, 1):
            label = f"{html_text(name)} ({html_text(size)})" + (
                f" · {n}/{len(parts)}" if len(parts) > 1 else "")
            messages.append(f"<b>{label}</b>\n<pre>{part}</pre>")
    return messages


def _escaped_parts(value: str, budget: int) -> list[str]:
    """`value` HTML-escaped, in pieces of at most `budget` characters, never inside an
    entity."""
    parts: list[str] = []
    current: list[str] = []
    size = 0
    for char in value:
        escaped = html_text(char)
        if size + len(escaped) > budget and current:
            parts.append("".join(current))
            current, size = [], 0
        current.append(escaped)
        size += len(escaped)
    return [*parts, "".join(current)]


def _expires(approval: dict[str, Any], tz: tzinfo | None) -> str:
    try:
        when = datetime.fromisoformat(str(approval["expires_at"]))
    except (KeyError, ValueError):
        return str(approval.get("expires_at", ""))
    if tz is None:
        return when.strftime("%H:%M UTC")
    return when.astimezone(tz).strftime("%H:%M")
