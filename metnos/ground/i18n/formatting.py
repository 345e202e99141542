"""CLDR through Babel: plural categories, numbers, dates, language names and the direction
of a language's script (SPEC §9.3).

Every function takes a BCP-47 tag (`it`, `pt-PT`, `it_CH`) and never raises for an unknown
one: the tag's base language is tried, then English. The region matters: Portuguese `0` is
`one` in `pt` (= pt-BR) and `other` in `pt-PT`; Swiss Italian groups digits with an apostrophe.
"""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from functools import lru_cache
from typing import Any, Literal

from babel import Locale, UnknownLocaleError

DateFormat = Literal["full", "long", "medium", "short"]
FALLBACK = "en"


@lru_cache(maxsize=256)
def locale_for(tag: str) -> Locale:
    """The Babel locale of `tag`, else of its base language, else English."""
    raw = (tag or "").strip().replace("_", "-")
    for candidate in (raw, raw.split("-")[0], FALLBACK):
        try:
            return Locale.parse(candidate, sep="-")
        except (UnknownLocaleError, ValueError, TypeError):
            continue
    return Locale.parse(FALLBACK)


def text_direction(tag: str) -> Literal["ltr", "rtl"]:
    """How `tag`'s script runs, from CLDR: "rtl" for Arabic, Hebrew, Persian, Urdu...; "ltr"
    otherwise (an unknown tag too). The web chat's `dir`, Telegram's marks."""
    return "rtl" if locale_for(tag).text_direction == "rtl" else "ltr"


def plural_category(count: Any, tag: str) -> str:
    """The CLDR plural category of `count` in `tag` (`other` when `count` is no number)."""
    number = _number(count)
    if number is None:
        return "other"
    value: float | Decimal = Decimal(number) if isinstance(number, int) else number
    return str(locale_for(tag).plural_form(-value if value < 0 else value))


def number(value: Any, tag: str) -> str:
    """`value` formatted as a decimal number of `tag` (`1234.5` → `1.234,5` in `it`)."""
    from babel.numbers import format_decimal  # loaded when a number is written

    parsed = _number(value)
    return str(value) if parsed is None else format_decimal(parsed, locale=locale_for(tag))


def date(value: dt.date, tag: str, format: DateFormat = "medium") -> str:
    """A date or datetime in the CLDR format of `tag`."""
    from babel.dates import format_date, format_datetime  # loaded when a date is written

    if isinstance(value, dt.datetime):
        return format_datetime(value, format=format, locale=locale_for(tag))
    return format_date(value, format=format, locale=locale_for(tag))


def display_name(tag: str, in_lang: str) -> str:
    """The name of the language `tag` in `in_lang` (`pt-BR` in `it` → `portoghese (Brasile)`);
    the tag itself when Babel does not know it."""
    try:
        name = Locale.parse(tag.strip().replace("_", "-"), sep="-").get_display_name(
            locale_for(in_lang))
    except (UnknownLocaleError, ValueError, TypeError, AttributeError):
        return tag
    return str(name) if name else tag


def _number(value: Any) -> int | float | Decimal | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            value = Decimal(value.strip())
        except ArithmeticError:
            return None
    if isinstance(value, float | Decimal) and math.isfinite(value):
        return value
    return None


def spoken_time(at: dt.datetime, lang: str, tz: Any, now: dt.datetime) -> str:
    """"today at 18:00", "tomorrow at 9:00", "on 3 Dec 2026 at 9:00" in the household's zone."""
    from babel.dates import format_date, format_time

    from metnos.ground.i18n import get  # the package imports this module

    local, today = at.astimezone(tz), now.astimezone(tz).date()
    locale = locale_for(lang)
    time = format_time(local, format="short", locale=locale)
    days = (local.date() - today).days
    if days in (0, 1):
        key = "MSG_REMINDER_WHEN_TODAY" if days == 0 else "MSG_REMINDER_WHEN_TOMORROW"
        return get(key, lang, time=time)
    return get("MSG_REMINDER_WHEN_DATE", lang, time=time,
                    date=format_date(local, format="medium", locale=locale))
