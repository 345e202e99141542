"""The machine's language, the process language's default when `METNOS_LANG` (and `lang` in
metnos.toml) are unset: an English machine gets an English Metnos, banner and errors included.

The POSIX message locale decides, as for every program: the first of `LC_ALL`, `LC_MESSAGES`,
`LANG` that is set and not empty (`en_US.UTF-8` → `en`, `it_IT` → `it`). `C`/`POSIX`, or a
language Metnos has no messages for (no `i18n/<lang>/` folder in the resources, the shipped
one or `METNOS_I18N_RESOURCES_DIR`), gives `DEFAULT_LANG`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

DEFAULT_LANG = "it"
LOCALE_VARS = ("LC_ALL", "LC_MESSAGES", "LANG")  # POSIX precedence for messages
NEUTRAL = ("C", "POSIX")


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


def system_lang(environ: Mapping[str, str] | None = None) -> str:
    """The machine's language when Metnos has messages for it, else `DEFAULT_LANG`."""
    env = os.environ if environ is None else environ
    base = locale_tag(env).split("-")[0].lower()
    if base.isalpha() and (_resources(env) / "i18n" / base).is_dir():
        return base
    return DEFAULT_LANG


def _resources(env: Mapping[str, str]) -> Path:
    from metnos.paths import resources_path

    folder = env.get("METNOS_I18N_RESOURCES_DIR", "").strip()
    return Path(folder) if folder else resources_path()
