"""Layer 3 of the languages: user-facing messages.

`get(key, lang=None, **vars)` returns the message `key` (`SCOPE_DOMAIN_DETAIL`) in `lang`
(the process language `METNOS_LANG` when None) with `{name}` placeholders filled.

This first cut reads the catalog files `i18n/<lang>/*.toml` of the repository (one file per
domain, merged; a key defined twice is an error caught by the tests). The interface
is the one of SPEC §9.3, so the SQLite-backed store, CLDR plurals and the sweep of a later
issue can grow underneath without touching callers. Missing language → the source language
(`en`), missing key → the key itself, so a user never sees a traceback for a missing string.
"""

from __future__ import annotations

import logging
import tomllib
from functools import lru_cache
from pathlib import Path
from typing import Any

from metnos.paths import repo_path

log = logging.getLogger(__name__)

FALLBACK_LANG = "en"


@lru_cache(maxsize=16)
def catalog(lang: str) -> dict[str, str]:
    """All messages of one language (an empty dict when the language has no file)."""
    messages: dict[str, str] = {}
    for path in sorted((_catalog_dir() / lang).glob("*.toml")):
        with path.open("rb") as fh:
            data = tomllib.load(fh)
        messages.update({str(k): str(v) for k, v in data.items()})
    return messages


@lru_cache(maxsize=1)
def languages() -> tuple[str, ...]:
    """Languages that have a catalog file (read once per process)."""
    folders = (p for p in _catalog_dir().iterdir() if p.is_dir())
    return tuple(sorted(p.name for p in folders if any(p.glob("*.toml"))))


def normalise_lang(lang: str | None) -> str:
    """A BCP-47 tag reduced to a language with a catalog: `it-CH` → `it`, unknown → process lang."""
    if not lang:
        return _process_lang()
    base = lang.replace("_", "-").split("-")[0].lower()
    return base if base in languages() else _process_lang()


def get(key: str, lang: str | None = None, /, **vars: Any) -> str:
    """The message `key` in `lang`, with `{name}` placeholders filled from `vars`."""
    code = normalise_lang(lang)
    text = catalog(code).get(key)
    if text is None:
        text = catalog(FALLBACK_LANG).get(key)
        if text is None:
            log.warning("i18n.missing_key key=%s lang=%s", key, code)
            return key
        log.info("i18n.lang_fallback key=%s lang=%s", key, code)
    try:
        return text.format(**vars)
    except (KeyError, IndexError, ValueError):
        log.warning("i18n.bad_vars key=%s lang=%s vars=%s", key, code, sorted(vars))
        return text


def _process_lang() -> str:
    from metnos.settings import get_settings

    try:
        lang = get_settings().lang
    except Exception:  # settings broken: still speak, in the fallback language
        return FALLBACK_LANG
    base = lang.split("-")[0].lower()
    return base if base in languages() else FALLBACK_LANG


def _catalog_dir() -> Path:
    return repo_path("i18n")
