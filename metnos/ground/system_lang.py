"""The machine's language, the process language's default when `METNOS_LANG` (and `lang` in
metnos.toml) are unset: an English machine gets an English Metnos, banner and errors included.

The POSIX message locale decides, as for every program: the first of `LC_ALL`, `LC_MESSAGES`,
`LANG` that is set and not empty (`en_US.UTF-8` → `en`, `it_IT` → `it`). `C`/`POSIX`, or a
language Metnos has no messages for (no `i18n/<lang>/` folder in the resources, the shipped
one or `METNOS_I18N_RESOURCES_DIR`), gives `DEFAULT_LANG`.

`Lang` is how a checked language travels: the lower-case language subtag of a tag that was
checked where it entered (`it`, `en`, `pt`), the key of its resources (prompt folder, catalog,
lexicon, manifest table). `lang_code` makes one; the settings' `active_languages` are made of
them, a face picks one among those with `metnos.ground.i18n.tags.match_language`, and the turn
carries it without normalising it again.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import NewType

DEFAULT_LANG = "it"
LOCALE_VARS = ("LC_ALL", "LC_MESSAGES", "LANG")  # POSIX precedence for messages
NEUTRAL = ("C", "POSIX")

Lang = NewType("Lang", str)


def lang_code(tag: str) -> Lang:
    """The language subtag of `tag`, lower-case: `pt_BR`, `pt-BR`, `PT` → `pt`."""
    return Lang(tag.replace("_", "-").split("-")[0].lower())


def posix_tag(value: str) -> str:
    """`it_IT.UTF-8@euro` → `it-IT`; `C`, `C.UTF-8`, `POSIX` → "" (no language)."""
    tag = value.split(".")[0].split("@")[0].strip()
    return "" if tag in NEUTRAL else tag.replace("_", "-")


def locale_tag(environ: Mapping[str, str] | None = None) -> str:
    """The message locale's language tag ("" when none is set or it is `C`/`POSIX`)."""
    env = os.environ if environ is None else environ
    for name in LOCALE_VARS:
        value = env.get(name, "").strip()
        if value:
            return posix_tag(value)
    return ""


def system_lang(environ: Mapping[str, str] | None = None) -> Lang:
    """The machine's language when Metnos has messages for it, else `DEFAULT_LANG`."""
    env = os.environ if environ is None else environ
    base = lang_code(locale_tag(env))
    if base.isalpha() and (_resources(env) / "i18n" / base).is_dir():
        return base
    return Lang(DEFAULT_LANG)


def _resources(env: Mapping[str, str]) -> Path:
    from metnos.ground.paths import resources_path

    folder = env.get("METNOS_I18N_RESOURCES_DIR", "").strip()
    return Path(folder) if folder else resources_path()
