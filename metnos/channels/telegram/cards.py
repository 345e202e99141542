"""Approval cards: the exact action (executor, arguments, files) with Approve/Deny buttons.

The buttons carry `ap:<approval id>:<y|n>` (well under the Bot API's 64 bytes); who may press
them is decided by the approval's binding, never by the button (`callbacks.py`).
"""

from __future__ import annotations

import json
import string
from datetime import datetime
from typing import Any

from aiogram.filters.callback_data import CallbackData, CallbackDataException
from aiogram.types import InlineKeyboardButton, InlineKeyboardMarkup

from metnos import i18n
from metnos.channels.render import render
from metnos.channels.telegram.split import LIMIT, units

CHANNEL = "telegram"
CARD_ARGS_BUDGET = 2400  # characters shared by the shown argument values of one card
_DECISIONS = {"y": "approve", "n": "deny"}


class ApprovalButton(CallbackData, prefix="ap"):
    id: str
    d: str  # y | n


def keyboard(approval_id: str, lang: str) -> InlineKeyboardMarkup:
    def button(key: str, d: str) -> InlineKeyboardButton:
        data = ApprovalButton(id=approval_id, d=d).pack()
        return InlineKeyboardButton(text=i18n.get(key, lang), callback_data=data)
    return InlineKeyboardMarkup(inline_keyboard=[[
        button("MSG_TELEGRAM_BUTTON_APPROVE", "y"), button("MSG_TELEGRAM_BUTTON_DENY", "n")]])


def parse_button(data: str | None) -> tuple[str, str] | None:
    """(approval id, "approve" | "deny") of a button's data; None when it is not ours."""
    try:
        button = ApprovalButton.unpack(data or "")
    except (CallbackDataException, ValueError, TypeError):
        return None
    decision = _DECISIONS.get(button.d)
    if decision is None or not button.id or len(button.id) > 64:
        return None
    return button.id, decision


def card(approval: dict[str, Any], lang: str, outcome: str | None = None) -> str:
    """The card of `approval` (`metnos.approvals.public`), with its outcome once decided."""
    args = approval.get("args") or {}
    budget = max(80, CARD_ARGS_BUDGET // max(1, len(args)))
    shown = [(name, _value(value, budget)) for name, value in sorted(args.items())]
    files = sorted((approval.get("files") or {}).items())
    text = render(CHANNEL, "approval", lang, why=_why(approval, lang),
                  executor=approval["executor"], args=shown, files=files,
                  approval_id=approval["approval_id"], expires=_expires(approval),
                  outcome=outcome)
    if units(text) > LIMIT:  # a card is one message: shrink the arguments, never the action
        return card({**approval, "args": {k: _value(v, 80) for k, v in args.items()}},
                    lang, outcome) if budget > 80 else text[:LIMIT]
    return text


def _why(approval: dict[str, Any], lang: str) -> str | None:
    """Why the policy asks, when its message can be filled from what the approval keeps."""
    if approval.get("why"):  # the turn's own words (they name the untrusted sources)
        return str(approval["why"])
    key = str(approval.get("reason_key") or "")
    raw = i18n.lookup(key, lang) or i18n.lookup(key, i18n.FALLBACK_LANG)
    if not isinstance(raw, str):
        return None
    values: dict[str, Any] = {"executor": approval["executor"],
                              **{k: v for k, v in (approval.get("args") or {}).items()
                                 if isinstance(v, str | int | float)}}
    needed = {name for _, name, _, _ in string.Formatter().parse(raw) if name}
    return i18n.get(key, lang, **values) if needed <= values.keys() else None


def _value(value: Any, budget: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= budget else text[:budget] + "…"


def _expires(approval: dict[str, Any]) -> str:
    try:
        when = datetime.fromisoformat(str(approval["expires_at"]))
    except (KeyError, ValueError):
        return str(approval.get("expires_at", ""))
    return when.strftime("%Y-%m-%d %H:%M UTC")
