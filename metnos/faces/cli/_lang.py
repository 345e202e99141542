"""The CLI's own language (issue 12): the words of `metnos` follow the person at the terminal.

`METNOS_LANG` when set, else the POSIX message locale — the first of `LC_ALL`, `LC_MESSAGES`,
`LANG` that is set and not empty decides (`it_IT.UTF-8` → `it`); `C`/`POSIX`, or a language
that is not active here, gives the instance's language (`lang` in metnos.toml, else the
default). A language Metnos has no messages in (`METNOS_LANG=xx`) gives English, and every
command says so once on stderr (`metnos serve` refuses to start). Read at each call: the
answer is kept only for the same settings object, variables and languages.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from metnos.ground import i18n
from metnos.ground.errors import MetnosError
from metnos.ground.i18n import FALLBACK_LANG
from metnos.ground.i18n.tags import match_language
from metnos.ground.settings import get_settings
from metnos.ground.system_lang import LOCALE_VARS, locale_tag, posix_tag


def cli_lang(environ: Mapping[str, str] | None = None) -> str:
    """The active language the CLI speaks (never raises: with broken settings, METNOS_LANG
    or the machine's language when Metnos has messages in it, else English)."""
    env = os.environ if environ is None else environ
    try:
        settings = get_settings()
        active, default = settings.active_languages, settings.lang
    except (MetnosError, ValueError):  # broken settings: said in the person's language
        return _spoken(env.get("METNOS_LANG", "").strip() or locale_tag(env) or FALLBACK_LANG)
    # the same settings and the same variables give the same answer: worked out once (the
    # help of every command asks for it, some two hundred times at start)
    key = (id(settings), tuple(env.get(name, "") for name in ("METNOS_LANG", *LOCALE_VARS)),
           i18n.languages())
    known = _ANSWERS.get(key)
    if known is not None and known[0] is settings:
        return known[1]
    instance = match_language(default, active) or active[0]
    answer = _spoken(_chosen(env, active, instance))
    _ANSWERS.clear()  # one entry: the settings or the variables of this process
    _ANSWERS[key] = (settings, answer)
    return answer


_ANSWERS: dict[tuple[object, ...], tuple[object, str]] = {}


def _chosen(env: Mapping[str, str], active: tuple[str, ...], instance: str) -> str:
    explicit = env.get("METNOS_LANG", "").strip()
    if explicit:
        return match_language(explicit, active) or instance
    for name in LOCALE_VARS:
        value = env.get(name, "").strip()
        if value:
            return match_language(posix_tag(value), active) or instance
    return instance


def _spoken(lang: str) -> str:
    """`lang` when Metnos has messages in it, else the fallback language (English)."""
    return lang if _base(lang) in i18n.languages() else FALLBACK_LANG


def _base(tag: str) -> str:
    return tag.replace("_", "-").split("-")[0].strip().lower()


def unspoken_language() -> str | None:
    """The process language (METNOS_LANG, else `lang` in metnos.toml) when Metnos has no
    messages in it (`METNOS_LANG=xx`), else None. Never raises."""
    try:
        lang = get_settings().lang
        return None if _base(lang) in i18n.languages() else lang
    except (MetnosError, ValueError):
        return None


def unspoken_vars(lang: str) -> dict[str, str]:
    """The variables of the messages that say so: the tag, what Metnos speaks, the fallback."""
    spoken = ", ".join(f"{code} ({i18n.display_name(code, FALLBACK_LANG)})"
                       for code in i18n.languages())
    return {"lang": lang, "languages": spoken,
            "fallback": i18n.display_name(FALLBACK_LANG, FALLBACK_LANG)}


def msg(key: str, /, **vars: Any) -> str:
    """The message `key` in the CLI's language."""
    return i18n.get(key, cli_lang(), **vars)
