"""The CLI's own language (issue 12): the words of `metnos` follow the person at the terminal.

`METNOS_LANG` when set, else the POSIX message locale — the first of `LC_ALL`, `LC_MESSAGES`,
`LANG` that is set and not empty decides (`it_IT.UTF-8` → `it`); `C`/`POSIX`, or a language
that is not active here, gives the instance's language (`lang` in metnos.toml, else the
default). Read at each call, never cached: nothing is decided at import time.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from metnos import i18n
from metnos.errors import MetnosError
from metnos.i18n import FALLBACK_LANG
from metnos.i18n.tags import match_language
from metnos.settings import get_settings

LOCALE_VARS = ("LC_ALL", "LC_MESSAGES", "LANG")  # POSIX precedence for messages
NEUTRAL = ("C", "POSIX")


def cli_lang(environ: Mapping[str, str] | None = None) -> str:
    """The active language the CLI speaks (never raises: broken settings give English)."""
    env = os.environ if environ is None else environ
    try:
        settings = get_settings()
        active, default = settings.active_languages, settings.lang
    except (MetnosError, ValueError):
        return FALLBACK_LANG
    instance = match_language(default, active) or active[0]
    explicit = env.get("METNOS_LANG", "").strip()
    if explicit:
        return match_language(explicit, active) or instance
    for name in LOCALE_VARS:
        value = env.get(name, "").strip()
        if value:
            return match_language(posix_tag(value), active) or instance
    return instance


def posix_tag(value: str) -> str:
    """`it_IT.UTF-8@euro` → `it-IT`; `C`, `C.UTF-8`, `POSIX` → "" (no language)."""
    tag = value.split(".")[0].split("@")[0].strip()
    return "" if tag in NEUTRAL else tag.replace("_", "-")


def msg(key: str, /, **vars: Any) -> str:
    """The message `key` in the CLI's language."""
    return i18n.get(key, cli_lang(), **vars)
