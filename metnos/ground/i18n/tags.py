"""BCP-47 language tags (SPEC §9.5): normalise, validate and match them with `langcodes`.

`it_IT` → `it-IT`, `iw` → `he`; `it-CH` matches a supported `it`; `pt-PT` matches `pt`.
Resources (prompt folders, catalog columns, manifest tables) are keyed by the base language
(`it`, `pt`); sessions keep the tag a person chose.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import langcodes

from metnos.ground.errors import ConfigError

MAX_TAG_CHARS = 35
Supported = TypeVar("Supported", bound=str)  # a supported language: a `Lang`, a catalog's code


class LanguageTagError(ConfigError):
    """A language tag that is malformed or names no language."""

    key = "ERR_LANG_TAG_INVALID"


def normalise_tag(tag: str) -> str:
    """The standard spelling of `tag` (`it_IT` → `it-IT`); LanguageTagError when invalid."""
    raw = tag.strip() if isinstance(tag, str) else ""
    if not raw or len(raw) > MAX_TAG_CHARS:
        raise LanguageTagError(tag=str(tag)[:MAX_TAG_CHARS])
    try:
        standard = str(langcodes.standardize_tag(raw.replace("_", "-")))
    except (ValueError, LookupError) as exc:
        raise LanguageTagError(tag=raw) from exc
    if not langcodes.tag_is_valid(standard):
        raise LanguageTagError(tag=raw)
    return standard


def base_language(tag: str) -> str:
    """The language subtag of a valid tag: `pt-BR` → `pt`, `iw` → `he`."""
    return str(langcodes.Language.get(normalise_tag(tag)).language)


def is_valid(tag: str) -> bool:
    try:
        normalise_tag(tag)
    except LanguageTagError:
        return False
    return True


def match_language(tag: str | None, supported: Sequence[Supported]) -> Supported | None:
    """The one of `supported` closest to `tag` (`it-CH` → `it`), None when none is close or
    the tag is invalid; never raises, so request headers cannot break a reply. Matched
    against the active languages, it is how a face checks a tag into a `Lang`."""
    if not tag or not supported:
        return None
    try:
        wanted = normalise_tag(tag)
    except LanguageTagError:
        return None
    found = wanted if wanted in supported else langcodes.closest_supported_match(
        wanted, list(supported))
    return next((code for code in supported if code == found), None)
