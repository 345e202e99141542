"""A family's first ten minutes (issue 12, acceptance): what they say, in Italian and English,
and what each reply must be. Replies are checked against the i18n catalogue (the fixed words of
the message that should answer, in the user's language), never against hard-coded texts, and
each must be short and free of the old tool jargon.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from pathlib import Path
from zoneinfo import ZoneInfo

from babel.dates import format_time

from metnos.ground import i18n
from metnos.ground.i18n.formatting import locale_for

ZONE = "Europe/Rome"  # not the machine's (UTC here): the time must come from the setting
MAX_LINES = 8
NEVER = ("METNOS_LLM_MODEL", "<path>", "metnos undo", "fs_write", "lists(", "reminder_set",
         "{", "}")
_HOLE = "\u241f"  # stands for a placeholder's value when a message is cut into its fixed words


@dataclass(frozen=True)
class Family:
    """What one family says, in its language, and what it expects to find."""

    lang: str
    greeting: str
    time: str
    add: str
    show: str
    remove: str
    remind: str
    can: str
    items: tuple[str, str, str]  # as added, in order; the second is removed then restored
    file: str  # lists/<file> in the workspace
    chore: str  # what the reminder says

    @property
    def removed(self) -> str:
        return self.items[1]


FAMILIES = {
    "it": Family("it", "ciao", "che ore sono?",
                 "aggiungi latte, uova e pane alla lista della spesa",
                 "cosa c'è nella lista della spesa?", "togli le uova dalla lista della spesa",
                 "ricordami tra due minuti di spegnere il forno", "cosa sai fare?",
                 ("latte", "uova", "pane"), "shopping.md", "spegnere il forno"),
    "en": Family("en", "hello", "what time is it?",
                 "add milk, eggs and bread to the shopping list",
                 "what's on my shopping list?", "remove eggs from the shopping list",
                 "remind me in two minutes to turn off the oven", "what can you do?",
                 ("milk", "eggs", "bread"), "shopping.md", "turn off the oven"),
}


def fixed_words(key: str, lang: str, **vars: object) -> list[str]:
    """The pieces of message `key` in `lang` that do not depend on its placeholders (`vars`
    names them; a value given is used as is): "Added {added_text} to the {list} list" →
    ["Added", "to the", "list"]. They must differ from the other language's, or they could not
    tell the reply's language."""
    def cut(code: str) -> list[str]:
        filled = {name: (_HOLE if value is None else value) for name, value in vars.items()}
        text = i18n.get(key, code, **filled)
        assert text != key, f"{key} is missing in {code}"
        return [p.strip() for p in text.split(_HOLE) if p.strip()]

    pieces = cut(lang)
    other = "en" if lang == "it" else "it"
    assert pieces != cut(other), f"{key} reads the same in it and en"
    return pieces


def problems(reply: str, lang: str, key: str, **vars: object) -> list[str]:
    """What is wrong with `reply` as the answer that message `key` gives (empty: nothing)."""
    lines = [line for line in reply.splitlines() if line.strip()]
    found = [f"{len(lines)} lines"] if len(lines) > MAX_LINES else []
    found += [f"says {w!r}" for w in NEVER if w in reply]
    found += [f"lacks {p!r} ({key}, {lang})" for p in fixed_words(key, lang, **vars)
              if p not in reply]
    return found


def greeting(reply: str, lang: str) -> list[str]:
    expected = i18n.get("MSG_HOUSEHOLD_GREETING", lang)
    return problems(reply, lang, "MSG_HOUSEHOLD_GREETING") + (
        [] if reply.strip() == expected else [f"not the greeting {expected!r}"])


def clock(reply: str, lang: str, asked: dt.datetime, answered: dt.datetime) -> list[str]:
    """The reply says the household's time (in `ZONE`) of a minute between asking and the
    answer, a minute's tolerance either side."""
    zone = ZoneInfo(ZONE)
    start = asked.astimezone(zone).replace(second=0, microsecond=0) - dt.timedelta(minutes=1)
    minutes = int((answered - asked).total_seconds() // 60) + 3
    said = {i18n.get("MSG_HOUSEHOLD_TIME", lang, time=format_time(
        start + dt.timedelta(minutes=m), format="short", locale=locale_for(lang)))
        for m in range(minutes)}
    found = problems(reply, lang, "MSG_HOUSEHOLD_TIME", time=None)
    return found + ([] if reply.strip() in said else [f"not one of {sorted(said)}"])


def listed(reply: str, family: Family, key: str, count: int, names: tuple[str, ...],
           **vars: object) -> list[str]:
    """A lists reply (`EX_REPLY_lists_*`) about `count` items that names each of `names`."""
    found = problems(reply, family.lang, key, count=count, list=None, **vars)
    return found + [f"lacks the item {n!r}" for n in names if n not in reply]


def added(reply: str, family: Family) -> list[str]:
    return listed(reply, family, "EX_REPLY_lists_add", 3, family.items, added_text=None)


def shown(reply: str, family: Family, items: tuple[str, ...]) -> list[str]:
    found = listed(reply, family, "EX_REPLY_lists_show", len(items), items, items=None)
    bullets = [line for line in reply.splitlines() if any(i in line for i in items)]
    return found + ([] if len(bullets) == len(items) else [f"{len(bullets)} item lines"])


def removed(reply: str, family: Family) -> list[str]:
    found = listed(reply, family, "EX_REPLY_lists_remove", 2, (family.removed,),
                   removed_text=None)
    return found + [f"names {i!r}, still on it" for i in family.items
                    if i != family.removed and i in reply]


def reminder_set(reply: str, family: Family) -> list[str]:
    found = problems(reply, family.lang, "EX_REPLY_reminder_set", when=None, text=None)
    return found + ([] if family.chore in reply else [f"lacks {family.chore!r}"])


def capabilities(reply: str, lang: str) -> list[str]:
    """The short list of what Metnos can do: a heading, then one line each with an example."""
    found = problems(reply, lang, "MSG_HOUSEHOLD_CAPABILITIES", items=None)
    lines = [line for line in reply.splitlines() if line.strip()][1:]
    item = [p.lstrip("-*").strip() for p in  # a markdown bullet is drawn, not written
            fixed_words("MSG_HOUSEHOLD_ITEM", lang, what=None, example=None)]
    item = [p for p in item if p]
    found += [f"item line {line!r} lacks {p!r}" for line in lines for p in item if p not in line]
    return found + ([] if 2 <= len(lines) <= MAX_LINES - 1 else [f"{len(lines)} items"])


def notice(text: str, family: Family) -> list[str]:
    expected = i18n.get("MSG_REMINDER_NOTICE", family.lang, text=family.chore)
    return [] if text.strip() == expected else [f"{text!r} is not {expected!r}"]


def items_in(path: Path) -> list[str]:
    """The items of the list file a person can edit (its markdown bullets)."""
    return [m.group(1).strip() for m in re.finditer(r"(?m)^[-*] (.+)$", path.read_text())]
