"""Status words as a person reads them (issue 12): `status("approval", "used", "it")` → "usata".

Every surface that shows a machine status (the CLI's tables, the web chat's lists, Telegram)
reads its word here, from the `STATUS_<KIND>_<VALUE>` keys of `i18n/<lang>/words.toml`; a
value without a word is shown as it is (a new status never breaks a list).
"""

from __future__ import annotations

from metnos.ground import i18n

KINDS = ("approval", "turn", "decision", "outcome", "pairing", "executor", "risk")


def status_key(kind: str, value: str) -> str:
    """The i18n key of `value` of `kind` (`approval`, `used` → `STATUS_APPROVAL_USED`)."""
    return f"STATUS_{kind}_{value}".upper().replace("-", "_")


def status(kind: str, value: str | None, lang: str | None = None) -> str:
    """The word for `value` in `lang`; the value itself when it has none ("" for None)."""
    if not value:
        return ""
    key = status_key(kind, value)
    if i18n.lookup(key, i18n.FALLBACK_LANG) is None:
        return value
    return i18n.get(key, lang)
