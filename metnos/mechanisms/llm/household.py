"""Household intents of the embedded planner: greetings, thanks, the time and the date, what
Metnos can do, help. They are answered with no model and no executor.

The sentences (hassil templates), the words that ask for a change and the common words of
each language live in `lexicon/<lang>/household.toml` (the resources folder); a language
without that file simply has no household intents.
`metnos/mechanisms/llm/household/capabilities.toml` (the same in every language) orders what "what
can you do?" lists. Every answer is an i18n message of `i18n/<lang>/household.toml`.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import tomllib
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from babel.dates import format_time

from metnos.ground import i18n
from metnos.ground.i18n.formatting import locale_for
from metnos.ground.i18n.lexicon import lexicon_key

log = logging.getLogger(__name__)

DATA_DIR = Path(__file__).with_name("household")  # capabilities.toml
PREFIX = "household."  # intent names: executor names cannot hold a dot
INTENTS = ("greeting", "thanks", "time", "date", "capabilities", "help")
LEVELS = ("change", "remove", "run")  # risk words, 1 to 3; no such word: 0 (reading)
_TOKEN = re.compile(r"\w+(?:'\w+)?")
_AROUND = " \t\n,;:!?.…"  # what may stand between a courtesy and the request
# emoji decorations a sentence may carry: variation selectors, skin tones, joiners
_DECORATION = re.compile("[\ufe0e\ufe0f\u200d\U0001f3fb-\U0001f3ff]")


@dataclass(frozen=True)
class Phrases:
    """One language's household data file."""

    intents: dict[str, tuple[str, ...]]
    risk: dict[int, frozenset[str]]  # level → words and phrases (folded, lower case)
    stop: frozenset[str]
    joiners: tuple[str, ...] = ()  # "and" between the items of a list
    articles: tuple[str, ...] = ()  # left off an item's front ("the milk" → "milk")
    polite: tuple[str, ...] = ()  # around a request: "ciao, ...", "... per favore"
    not_paths: frozenset[str] = frozenset()  # never a file's name: "everything", "tutto"
    unnamed: tuple[tuple[str, ...], tuple[str, ...], frozenset[str]] = ((), (), frozenset())
    # ^ where "add milk" goes: (its verbs, the endings it is read with, words its items lack)
    world: tuple[tuple[str, frozenset[str]], ...] = ()  # topic → words it cannot see


@dataclass(frozen=True)
class Capability:
    name: str
    examples: tuple[str, ...]
    expect: dict[str, str]  # example → the intent it must reach to count


@dataclass(frozen=True)
class Catalogue:
    """`capabilities.toml`: what "what can you do?" lists, and the not-understood example."""

    capabilities: tuple[Capability, ...]
    tries: tuple[str, ...]


def is_household(intent: str) -> bool:
    return intent.startswith(PREFIX)


def phrases(lang: str) -> Phrases:
    """The data file of `lang` (its base language); empty when there is none or it is broken."""
    return _phrases(lexicon_key("household", lang))


@lru_cache(maxsize=16)
def _phrases(key: tuple[str, int] | None) -> Phrases:
    path = Path(key[0]) if key else None
    try:
        table = tomllib.loads(path.read_text(encoding="utf-8")) if path else {}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        log.error("household.bad_file path=%s error=%s", path, exc)
        table = {}
    intents = {
        name: tuple(str(t) for t in table.get("intents", {}).get(name, ()))
        for name in INTENTS
    }
    risk = {
        level: frozenset(_folded(w) for w in table.get("risk", {}).get(name, ()))
        for level, name in enumerate(LEVELS, start=1)
    }
    words = table.get("words", {})
    stop = frozenset(_folded(w) for w in words.get("stop", ()))
    return Phrases(intents=intents, risk=risk, stop=stop,
                   joiners=tuple(str(w) for w in words.get("and", ())),
                   articles=tuple(str(w) for w in words.get("articles", ())),
                   polite=tuple(sorted((_folded(w) for w in words.get("polite", ())),
                                       key=len, reverse=True)),
                   not_paths=frozenset(_folded(w) for w in words.get("not_paths", ())),
                   unnamed=_unnamed(table.get("unnamed_list", {})),
                   world=tuple((str(topic), frozenset(_folded(w) for w in found))
                               for topic, found in table.get("world", {}).items()
                               if isinstance(found, list)))


def _unnamed(table: dict[str, list[str]]) -> tuple[tuple[str, ...], tuple[str, ...],
                                                   frozenset[str]]:
    return (tuple(_folded(w) for w in table.get("verbs", ())),
            tuple(str(w) for w in table.get("ending", ())),
            frozenset(_folded(w) for w in table.get("never", ())))


@lru_cache(maxsize=1)
def catalogue() -> Catalogue:
    table = tomllib.loads((DATA_DIR / "capabilities.toml").read_text(encoding="utf-8"))
    capabilities = tuple(
        Capability(str(c["name"]), tuple(str(e) for e in c.get("examples", ())),
                   {str(k): str(v) for k, v in c.get("expect", {}).items()})
        for c in table.get("capability", ())
    )
    return Catalogue(capabilities=capabilities, tries=tuple(str(t) for t in table.get("try", ())))


def templates(lang: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(intent name, its hassil templates) for every household intent of `lang`."""
    return tuple(
        (PREFIX + name, sentences) for name, sentences in phrases(lang).intents.items() if sentences
    )


def calm(text: str) -> str:
    """Emoji as the templates spell them: no variation selectors or skin tones, and a run of
    one emoji (`👋👋`) counted once."""
    out: list[str] = []
    for char in _DECORATION.sub("", text):
        if not (out and out[-1] == char and unicodedata.category(char) == "So"):
            out.append(char)
    return "".join(out)


def trimmed(text: str, lang: str) -> str:
    """`text` without the courtesies around the request (`ciao, che ore sono per favore?` →
    `che ore sono`): a piece of `text`, so arguments are still taken from the user's words."""
    polite = phrases(lang).polite
    start, end = 0, len(text)
    folded = _folded(text)  # same length as `text` for Latin scripts; else nothing is trimmed
    if len(folded) != len(text) or not polite:
        return text
    changed = True
    while changed:
        changed = False
        head = folded[start:end]
        lead = len(head) - len(head.lstrip(_AROUND))
        tail = len(head) - len(head.rstrip(_AROUND))
        start, end = start + lead, end - tail
        for phrase in polite:
            piece = folded[start:end]
            if piece.startswith(phrase) and _edge(piece, len(phrase)):
                start, changed = start + len(phrase), True
                break
            if piece.endswith(phrase) and _edge(piece, len(piece) - len(phrase) - 1):
                end, changed = end - len(phrase), True
                break
    return text[start:end] if start < end else text


def _edge(piece: str, index: int) -> bool:
    """A word boundary at `index` of `piece` (or its end)."""
    return index >= len(piece) or index < 0 or not piece[index].isalnum()


def level(text: str, lang: str) -> int:
    """How much `text` asks to change: 0 reading, 1 change, 2 remove, 3 run (its risk words)."""
    words = words_of(text)
    joined = f" {' '.join(words)} "
    found = 0
    for value, table in phrases(lang).risk.items():
        if any((f" {w} " in joined) if " " in w else (w in words) for w in table):
            found = max(found, value)
    return found


def unseen(text: str, lang: str) -> str | None:
    """The topic of the world `text` asks about that Metnos cannot see without a model
    (`[world]` of the lexicon: "will it rain?" → `weather`), or None."""
    words = words_of(text)
    joined = f" {' '.join(words)} "
    for topic, table in phrases(lang).world:
        if any((f" {' '.join(words_of(w))} " in joined) if " " in w else (w in words)
               for w in table):
            return topic
    return None


def unnamed_list(text: str, lang: str) -> tuple[str, ...]:
    """The endings a request that names no list is read with ("alla lista della spesa"):
    none unless `text` starts with one of the lexicon's `[unnamed_list] verbs`."""
    verbs, endings, _ = phrases(lang).unnamed
    said = " ".join(words_of(text))
    starts = any(said == v or said.startswith(v + " ") for v in verbs)
    return endings if starts else ()


def unnamed_item(text: str, lang: str) -> bool:
    """Whether `text` may be an item of a list not named (no word of `never` in it)."""
    return not set(words_of(text)) & phrases(lang).unnamed[2]


def names_no_file(text: str, lang: str) -> bool:
    """A bare word such as "everything" or "tutto": no file is called that in a request."""
    return _folded(text.strip()) in phrases(lang).not_paths


def words_of(text: str) -> list[str]:
    return _TOKEN.findall(_folded(text))


def content_words(text: str, lang: str) -> frozenset[str]:
    """The words of `text` that are not too common to tell two sentences apart."""
    stop = phrases(lang).stop
    return frozenset(w for w in words_of(text) if w not in stop and len(w) > 1)


def items_of(text: str, lang: str) -> list[str]:
    """The items of a spoken list: `latte, il pane e le uova` → `latte`, `pane`, `uova`
    (commas, semicolons, new lines and the language's "and"; a leading article dropped)."""
    data = phrases(lang)
    pattern = r"\s*[,;\n]\s*"
    if data.joiners:
        pattern += "|" + "|".join(rf"\s+{re.escape(j)}\s+" for j in data.joiners)
    found: list[str] = []
    for piece in re.split(pattern, text.strip(), flags=re.IGNORECASE):
        item = _without_article(piece.strip(), data.articles)
        if item:
            found.append(item)
    return found


def _without_article(item: str, articles: tuple[str, ...]) -> str:
    lowered = item.casefold().replace("’", "'")
    for article in articles:
        glued = article.endswith("'")
        if lowered.startswith(article if glued else article + " ") and len(item) > len(article):
            return item[len(article):].strip()
    return item


def answer(intent: str, lang: str, now: dt.datetime, items: list[tuple[str, str]]) -> str:
    """The reply to household intent `intent`; `items` are (what, example) for the list of
    what Metnos can do."""
    name = intent.removeprefix(PREFIX)
    if name == "time":
        return i18n.get("MSG_HOUSEHOLD_TIME", lang,
                        time=format_time(now, format="short", locale=locale_for(lang)))
    if name == "date":
        return i18n.get("MSG_HOUSEHOLD_DATE", lang, date=i18n.date(now.date(), lang, "full"))
    if name in ("capabilities", "help"):
        if not items:
            return i18n.get("MSG_HOUSEHOLD_NOTHING", lang)
        lines = "\n".join(
            i18n.get("MSG_HOUSEHOLD_ITEM", lang, what=what, example=example)
            for what, example in items
        )
        key = "MSG_HOUSEHOLD_HELP" if name == "help" else "MSG_HOUSEHOLD_CAPABILITIES"
        return i18n.get(key, lang, items=lines)
    if name == "thanks":
        return i18n.get("MSG_HOUSEHOLD_THANKS", lang)
    return i18n.get("MSG_HOUSEHOLD_GREETING", lang)


def _folded(text: str) -> str:
    decomposed = unicodedata.normalize("NFD", text.replace("’", "'"))
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()
