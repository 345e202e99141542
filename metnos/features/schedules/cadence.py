"""When a scheduled task runs, as a cron expression: either given as one ("0 8 * * 1") or said
the everyday way in the owner's language ("every Monday at 8", "ogni lunedì alle 8", "every
day at 7:30", "tutti i giorni alle 7:30", "every weekday at 18").

The grammar is small: a word for "every" (optional), then a word for several days ("day",
"weekday", "giorni feriali") or one or more weekdays joined by "and"/"e", then a clock time.
The words are data (`data/<lang>/schedules.toml`); the weekdays and the clock time are read
by `metnos.features.reminders.when`, with the reminders' own words, so the two never disagree on
what "alle 8" or "at 6 pm" means. Nothing here needs a model.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from cronsim import CronSim, CronSimError

from metnos.features.reminders import when
from metnos.ground.errors import ModelRetryError
from metnos.ground.i18n.lexicon import lexicon_key
from metnos.ground.settings import Settings

_CRON_FIELD = re.compile(r"^[\w*/,\-]+$")
# a Monday at midnight and a microsecond: a clock time resolves to that day (or the next, for
# midnight) with no seconds; a relative one ("in 2 minutes") keeps the microsecond
_PROBE = datetime(2001, 1, 1, 0, 0, 0, 1)


@dataclass(frozen=True)
class Cadence:
    cron: str  # five fields
    spoken: str  # as the owner wrote it, whitespace tidied


class CadenceError(ValueError):
    """`when` names no recurring time this module understands."""


def _words(lang: str) -> dict[str, Any]:
    key = lexicon_key("schedules", lang)
    return {} if key is None else _read_words(key)


@lru_cache(maxsize=8)
def _read_words(source: tuple[str, int]) -> dict[str, Any]:
    raw = tomllib.loads(Path(source[0]).read_text(encoding="utf-8"))
    key = _key
    return {"every": {key(p) for p in raw.get("every", [])},
            "recurring": {key(p) for p in raw.get("recurring", [])},
            "plain": {key(p) for p in raw.get("plain", [])},
            "joiners": {key(p) for p in raw.get("joiners", [])},
            "days": {key(p): str(v) for p, v in raw.get("days", {}).items()},
            "parts": {key(p): str(v) for p, v in raw.get("parts", {}).items()},
            "tell": {key(p) for p in raw.get("tell", [])},
            "reminders": {key(p) for p in raw.get("reminders", [])},
            "example": str(raw.get("example", ""))}


def words(lang: str) -> dict[str, Any]:
    """The schedule words of `lang` (empty when the language has none)."""
    return _words(lang)


def _key(phrase: str) -> tuple[str, ...]:
    return tuple(t.text for t in when.tokenize(phrase)) or (phrase.strip(),)


def valid_cron(expr: str) -> bool:
    fields = expr.split()
    if len(fields) != 5 or not all(_CRON_FIELD.match(f) for f in fields):
        return False
    try:
        CronSim(" ".join(fields), datetime(2001, 1, 1))
    except (CronSimError, ValueError):
        return False
    return True


def next_times(cron: str, tz: str, after: datetime, count: int = 1) -> list[datetime]:
    """The next `count` times of `cron` in zone `tz` after `after` (aware)."""
    it = CronSim(cron, after.astimezone(ZoneInfo(tz)))
    return [next(it) for _ in range(count)]


def parse(text: str, lang: str) -> Cadence:
    """The cadence `text` names, in `lang` (English as the fallback). Raises CadenceError."""
    spoken = " ".join(text.split())
    if valid_cron(spoken):
        return Cadence(spoken, spoken)
    for candidate in dict.fromkeys((lang, "en")):
        cron = _from_words(spoken, candidate)
        if cron is not None:
            return Cadence(cron, spoken)
    raise CadenceError(spoken)


def parse_any(text: str, langs: Sequence[str]) -> Cadence:
    """The cadence `text` names in the first of `langs` that reads it (a model may write
    "every Monday at 8" in an Italian conversation). Raises CadenceError."""
    for lang in dict.fromkeys(langs):
        try:
            return parse(text, lang)
        except CadenceError:
            continue
    raise CadenceError(" ".join(text.split()))


def says_recurring(text: str, lang: str) -> bool:
    """Whether `text` names days that come again ("every Monday", "ogni lunedì", "tutti i
    giorni"): an explicit "every" word followed by days or a weekday."""
    words, reminder_words = _words(lang), when.words(lang)
    if not words or not reminder_words:
        return False
    tokens = [t.text for t in when.tokenize(text)]
    for i in range(len(tokens)):
        size = _phrase(tokens, i, words["recurring"])[1]
        if size and (_phrase(tokens, i + size, words["days"])[1] or
                     _phrase(tokens, i + size, reminder_words["weekdays"])[1]):
            return True
    return False


def _phrase(tokens: list[str], i: int, table: set[tuple[str, ...]] | dict[Any, Any]
            ) -> tuple[tuple[str, ...], int]:
    for size in (4, 3, 2, 1):
        key = tuple(tokens[i:i + size])
        if len(key) == size and key in table:
            return key, size
    return (), 0


def _from_words(text: str, lang: str) -> str | None:
    words, reminder_words = _words(lang), when.words(lang)
    if not words or not reminder_words:
        return None
    found = when.tokenize(text)
    tokens = [t.text for t in found]
    i = _phrase(tokens, 0, words["every"])[1]
    days: list[str] = []
    while i < len(tokens):
        key, size = _phrase(tokens, i, words["days"])
        if size:
            days.append(words["days"][key])
        else:
            key, size = _phrase(tokens, i, reminder_words["weekdays"])
            if not size:
                break
            days.append(str((int(reminder_words["weekdays"][key]) + 1) % 7))  # cron: 0 Sunday
        i += size
        joined = _phrase(tokens, i, words["joiners"])[1]
        if joined:  # "il sabato e la domenica": an article again after the joiner
            i += joined + _phrase(tokens, i + joined, words["every"])[1]
    rest = text[found[i].start:] if i < len(tokens) else ""
    key, size = _phrase(tokens, i, words["parts"])
    if size:  # "every morning", "ogni lunedì sera alle 9": the reminders read the part
        days = days or ["*"]
        rest = words["parts"][key] + text[found[i + size - 1].end:]
    if not days or any(_phrase(tokens, j, reminder_words["days"])[1]
                       for j in range(i, len(tokens))):
        return None  # no days, or "today", "tomorrow": a day that does not come again
    hour, minute = int(reminder_words["default_hour"]), 0
    if rest.strip():
        moment = when.parse(rest, lang, _PROBE)
        if moment is None or moment.microsecond or moment.second or \
                (moment.date() - _PROBE.date()).days not in (0, 1):
            return None
        hour, minute = moment.hour, moment.minute
    dow = "*" if "*" in days else ",".join(dict.fromkeys(
        part for day in days for part in day.split(",")))
    return f"{minute} {hour} * * {dow}"


def check_cadence(settings: Settings, name: str, value: Any,
                  args: Mapping[str, Any]) -> dict[str, Any]:
    """The `cadence` host check (`metnos.mechanisms.policy.host_checks`)."""
    try:
        found = parse_any(str(value), settings.active_languages)
    except CadenceError as exc:  # the model may say it again another way
        raise ModelRetryError("ERR_SCHEDULE_WHEN_UNKNOWN",
                              when=" ".join(str(value).split())[:80]) from exc
    return {name: found.spoken, "cron": found.cron}
