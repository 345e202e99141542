"""Time expressions of everyday speech, for the embedded planner (no model): "tra 2 minuti",
"alle 18:30", "domani alle 9", "stasera", "in ten minutes", "at 6 pm", "tomorrow at 9".

The words of each language are data (`lexicon/<lang>/reminders.toml`); this module only knows the
grammar: a relative duration (a lead word, then numbers and units), or a day (a day word, a
weekday, a part of the day) and a clock time (a lead word, `18`, `18:30`, `6 pm`, a named time
such as noon). Every word of the text must belong to the expression, so "chiamare la nonna"
is no time. Times are in the household's time zone; a clock time already past today without a
day means tomorrow. `dateparser` was measured and left out: offline it reads "alle 18" as the
18th of the month, "at 9" as September, and "domani alle 9" keeps the current time.
"""

from __future__ import annotations

import re
import tomllib
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any

from metnos.ground.i18n.lexicon import lexicon_key

MAX_TOKENS = 12  # the longest expression looked at
_TOKEN = re.compile(r"\d{1,2}[:.]\d{2}|\d+|[^\W\d_]+'|[^\W\d_]+(?:\.[^\W\d_]+\.?)?")
_CLOCK = re.compile(r"^(\d{1,2})(?:[:.](\d{2}))?$")


@dataclass(frozen=True)
class Token:
    text: str
    start: int
    end: int


@dataclass
class _Found:
    """What an expression said, before it is resolved against the current time."""

    delta: float | None = None
    day: int | None = None
    weekday: int | None = None
    hour: int | None = None
    minute: int = 0
    meridiem: str | None = None
    part: dict[str, Any] = field(default_factory=dict)


def words(lang: str) -> dict[str, Any]:
    """The language's data file (`lexicon/<lang>/reminders.toml`), with every phrase folded
    to its tokens; {} when none."""
    key = lexicon_key("reminders", lang)
    return {} if key is None else _words(key)


@lru_cache(maxsize=16)
def _words(key: tuple[str, int]) -> dict[str, Any]:
    raw = tomllib.loads(Path(key[0]).read_text(encoding="utf-8"))
    table: dict[str, Any] = {"default_hour": int(raw.get("default_hour", 9)),
                             "templates": raw.get("templates", {}),
                             "fills": {(k,): v for k, v in raw.get("fills", {}).items()}}
    for name in ("relative", "clock", "fillers", "leads"):
        table[name] = {_key(p): True for p in raw.get(name, [])}
    for name in ("units", "numbers", "durations", "fractions", "days", "weekdays", "parts",
                 "meridiem", "named"):
        table[name] = {_key(p): v for p, v in raw.get(name, {}).items()}
    return table


def _key(phrase: str) -> tuple[str, ...]:
    return tuple(t.text for t in tokenize(phrase))


def fold(text: str) -> str:
    """Accents off, one character for one (`è` → `e`), so offsets stay those of `text`."""
    out = []
    for char in text:
        decomposed = unicodedata.normalize("NFD", char)
        bare = "".join(c for c in decomposed if not unicodedata.combining(c))
        out.append(bare if len(bare) == 1 else char)
    return "".join(out)


def tokenize(text: str) -> list[Token]:
    folded = fold(text).casefold()
    return [Token(m.group(), m.start(), m.end()) for m in _TOKEN.finditer(folded)]


def parse(text: str, lang: str, now: datetime) -> datetime | None:
    """The moment `text` names (all of it), in `now`'s time zone; None if it names none."""
    return _resolve(_read([t.text for t in tokenize(text)], words(lang)), words(lang), now)


def find(text: str, lang: str, now: datetime) -> tuple[int, int, datetime] | None:
    """The longest time expression in `text` (the latest of equal ones) as
    (start, end, moment): character offsets into `text`."""
    table = words(lang)
    tokens = tokenize(text)
    best: tuple[int, int, datetime] | None = None
    best_len = 0
    edge = {key[0] for key in table.get("fillers", {}) if len(key) == 1}
    for i in range(len(tokens)):
        for j in range(min(len(tokens), i + MAX_TOKENS), i, -1):
            if j - i < best_len:
                break
            if tokens[i].text in edge or tokens[j - 1].text in edge:
                continue  # "tra 2 minuti di": the expression ends before the joining word
            moment = _resolve(_read([t.text for t in tokens[i:j]], table), table, now)
            if moment is not None:
                if j - i >= best_len:
                    best, best_len = (tokens[i].start, tokens[j - 1].end, moment), j - i
                break
    return best


def lead_start(text: str, lang: str, start: int) -> int:
    """`start` moved back over the words that open a time expression without being part of
    what `find` reads ("on" Monday, "il prossimo" lunedì: `leads` of the data), so taking
    the expression out of a sentence leaves none of them behind."""
    leads = words(lang).get("leads", {})
    for token in reversed([t for t in tokenize(text) if t.end <= start]):
        if (token.text,) not in leads or text[token.end:start].strip():
            break
        start = token.start
    return start


# -- reading ------------------------------------------------------------------------------
def _phrase(tokens: list[str], i: int, table: dict[tuple[str, ...], Any]) -> tuple[Any, int]:
    """The longest phrase of `table` at `tokens[i]`: (its value, its length), or (None, 0)."""
    for size in (4, 3, 2, 1):
        key = tuple(tokens[i:i + size])
        if len(key) == size and key in table:
            return table[key], size
    return None, 0


def _number(tokens: list[str], i: int, table: dict[str, Any]) -> tuple[float | None, int]:
    if i < len(tokens) and tokens[i].isdigit():
        return float(tokens[i]), 1
    value, size = _phrase(tokens, i, table["numbers"])
    return (float(value), size) if value is not None else (None, 0)


def _read(tokens: list[str], table: dict[str, Any]) -> _Found | None:
    """What the tokens say, or None when one of them is not part of a time expression."""
    if not table or not tokens:
        return None
    found, i = _Found(), 0
    while i < len(tokens):
        step = _read_one(tokens, i, table, found)
        if step == 0:
            return None
        i += step
    return found


def _read_one(tokens: list[str], i: int, table: dict[str, Any], found: _Found) -> int:
    """Read one piece at `tokens[i]` into `found`; how many tokens it took (0: none)."""
    for name in ("parts", "days", "weekdays"):
        value, size = _phrase(tokens, i, table[name])
        if size:
            if name == "parts":
                found.part = dict(value)
            elif name == "days":
                found.day = int(value)
            else:
                found.weekday = int(value)
            return size
    _, size = _phrase(tokens, i, table["relative"])
    if size:
        taken = _read_duration(tokens, i + size, table, found)
        return size + taken if taken else 0
    _, size = _phrase(tokens, i, table["clock"])
    taken = _read_clock(tokens, i + size, table, found)
    if taken:
        return size + taken
    _, size = _phrase(tokens, i, table["fillers"])
    return size


def _read_duration(tokens: list[str], i: int, table: dict[str, Any], found: _Found) -> int:
    total, start, unit = 0.0, i, 0.0
    while i < len(tokens):
        phrase, size = _phrase(tokens, i, table["durations"])
        if size:
            total, i, unit = total + float(phrase), i + size, float(phrase)
        else:
            count, size = _number(tokens, i, table)
            unit_value, unit_size = _phrase(tokens, i + size, table["units"])
            if not unit_size:
                break
            total, i, unit = total + (count or 1.0) * unit_value, i + size + unit_size, unit_value
        _, joiner = _phrase(tokens, i, table["fillers"])
        fraction, frac_size = _phrase(tokens, i + joiner, table["fractions"])
        if joiner and frac_size:
            total, i = total + float(fraction) * unit, i + joiner + frac_size
        elif joiner and i + joiner < len(tokens) and _continues(tokens, i + joiner, table):
            i += joiner
        else:
            break
    if total <= 0:
        return 0
    found.delta = total
    return i - start


def _continues(tokens: list[str], i: int, table: dict[str, Any]) -> bool:
    count, size = _number(tokens, i, table)
    return bool(_phrase(tokens, i + size, table["units"])[1]) or bool(
        _phrase(tokens, i, table["durations"])[1])


def _read_clock(tokens: list[str], i: int, table: dict[str, Any], found: _Found) -> int:
    if i >= len(tokens):
        return 0
    start = i
    named, size = _phrase(tokens, i, table["named"])
    match = _CLOCK.match(named if size else tokens[i])
    if match is not None:
        hour, minute, i = int(match.group(1)), int(match.group(2) or 0), i + max(size, 1)
    else:
        count, size = _number(tokens, i, table)
        if count is None or size == 0:
            return 0
        hour, minute, i = int(count), 0, i + size
    _, joiner = _phrase(tokens, i, table["fillers"])
    fraction, frac_size = _phrase(tokens, i + joiner, table["fractions"])
    if joiner and frac_size and minute == 0:
        minute, i = round(60 * float(fraction)), i + joiner + frac_size
    meridiem, size = _phrase(tokens, i, table["meridiem"])
    if hour > 23 or minute > 59:
        return 0
    found.hour, found.minute, found.meridiem = hour, minute, meridiem
    return i + size - start


# -- resolving ----------------------------------------------------------------------------
def _resolve(found: _Found | None, table: dict[str, Any], now: datetime) -> datetime | None:
    if found is None:
        return None
    if found.delta is not None:
        plain = found.day is None and found.weekday is None and found.hour is None
        return now + timedelta(seconds=found.delta) if plain and not found.part else None
    hour = found.hour
    if hour is None:
        if found.part:
            hour = int(found.part["hour"])
        elif found.day is not None or found.weekday is not None:
            hour = int(table["default_hour"])
        else:
            return None
    elif hour < 12 and (found.meridiem or ("pm" if found.part.get("pm") else "")) == "pm":
        hour += 12
    elif hour == 12 and found.meridiem == "am":
        hour = 0
    day = found.day if found.day is not None else found.part.get("day")
    moment = now.replace(hour=hour, minute=found.minute, second=0, microsecond=0)
    if found.weekday is not None:
        ahead = (found.weekday - now.weekday()) % 7
        moment += timedelta(days=ahead)
        return moment + timedelta(days=7) if moment <= now else moment
    if day is not None:
        return moment + timedelta(days=int(day))
    return moment + timedelta(days=1) if moment <= now else moment
