"""What matters in a mail, by rules, for the morning digest (issue 27, point 8).

Without a model the digest used to tell only the mail labelled a request; a bill due tomorrow
or a school form never showed. These rules read the sender, the subject and the snippet with
the words of `lexicon/<lang>/mail.toml` `[digest]` (every active language, no words in code):

- `due`: a phrase saying something is due ("scadenza", "entro il", "due by", "pay by"...);
  its day is the nearest date the mail names from a few days ago on: "domani"/"tomorrow",
  07/12, 07/12/2026, "7 dicembre", "Dec 7th", read relative to today;
- `amount`: a number next to a currency sign or word ("€ 45,20", "45,20 EUR", "$82.15");
- `family`: a sender among `[mail] family` addresses, or named as family ("Mamma", "Dad");
- `school`, `appointment`: their words; `bill`: a bill's words (with a due day or amount);
- `promo`: a newsletter's or an offer's words, and bulk headers, weigh against.

A message is worth telling when its score reaches `WORTH` (a request label counts too; a
spam label never). The score orders the digest. The note (`note`) is plain words from i18n
(due tomorrow, the amount as digits and a currency sign from the lexicon): the mail's own
text never enters it, so it holds no link, address or instruction.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any

from metnos.features.mail.screen import fold_plain, word_pattern
from metnos.ground import i18n
from metnos.ground.i18n.lexicon import lexicon_key

LEXICON = "mail"
KINDS = ("due", "bill", "school", "appointment", "family", "promo")
WEIGHTS = {"due": 3, "bill": 1, "school": 3, "appointment": 3, "family": 3, "request": 2,
           "promo": -3, "bulk": -1}
SOON_DAYS = 2  # due today or tomorrow: the top of the digest
WORTH = 2
DATED_DAYS = 14  # an appointment or a school day this close weighs more
PAST_DAYS = 7  # a date this far back is still "overdue", older ones are not this mail's due
AHEAD_DAYS = 120
MAX_TEXT = 1200  # of the snippet read
_NUMERIC = re.compile(r"(?<![\d.,/\-])(\d{1,2})([/\-.])(\d{1,2})(?:\2(\d{4}|\d{2}))?"
                      r"(?![\d/\-]|[.,]\d)")
_ADDRESS = re.compile(r"<([^<>\s]+@[^<>\s]+)>|([^\s<>\"]+@[^\s<>\"]+)")
_NUMBER = r"\d{1,3}(?:[.\s ]\d{3})*(?:[.,]\d{1,2})?|\d+(?:[.,]\d{1,2})?"


@dataclass(frozen=True)
class Words:
    """One language's `[digest]` table, compiled."""

    kinds: dict[str, re.Pattern[str]]
    today: re.Pattern[str]
    tomorrow: re.Pattern[str]
    after_tomorrow: re.Pattern[str]
    named_dates: re.Pattern[str] | None  # groups: day, month name (either order), year
    months: dict[str, int]
    numeric: tuple[str, ...]
    amount: re.Pattern[str] | None


@dataclass
class Importance:
    uid: int
    score: int = 0
    kinds: list[str] = field(default_factory=list)
    due_in: int | None = None  # days from today, negative: overdue
    amount: str | None = None  # "€ 45,20": a currency sign and digits, nothing else

    @property
    def worth(self) -> bool:
        return self.score >= WORTH


def _table(key: tuple[str, int]) -> dict[str, Any]:
    data = tomllib.loads(Path(key[0]).read_text(encoding="utf-8")).get("digest", {})
    return data if isinstance(data, dict) else {}


@lru_cache(maxsize=16)
def words_of(key: tuple[str, int]) -> Words | None:
    table = _table(key)
    if not table:
        return None
    kinds = {k: word_pattern([str(e) for e in table.get(k, ())]) for k in KINDS}
    months: dict[str, int] = {}
    for n, names in enumerate(table.get("months", ())[:12], start=1):
        for name in names if isinstance(names, list) else [names]:
            months[fold_plain(str(name))] = n
    named = None
    if months:
        month = "|".join(re.escape(m) for m in sorted(months, key=len, reverse=True))
        ords = "|".join(re.escape(fold_plain(str(o))) for o in table.get("ordinals", ()))
        ordinal = f"(?:{ords})?" if ords else ""
        joins = "|".join(re.escape(fold_plain(str(j))) for j in table.get("joiners", ()))
        joiner = rf"(?:\s+(?:{joins}))*" if joins else ""
        year = r"(?:,?\s+(\d{4}))?"
        named = re.compile(
            rf"(?<![\w])(?:(\d{{1,2}}){ordinal}{joiner}\s+({month})\.?{year}"
            rf"|({month})\.?\s+(\d{{1,2}}){ordinal}{year})(?![\w])")
    signs = sorted((fold_plain(str(c)) for c in table.get("currency", ())), key=len,
                   reverse=True)
    amount = None
    if signs:
        sign = "|".join(re.escape(s) + (r"(?![a-z])" if s[-1:].isalpha() else "")
                        for s in signs)
        amount = re.compile(rf"(?<![\w])(?:({sign})\s?({_NUMBER})|({_NUMBER})\s?({sign}))")
    return Words(kinds=kinds, today=word_pattern([str(e) for e in table.get("today", ())]),
                 tomorrow=word_pattern([str(e) for e in table.get("tomorrow", ())]),
                 after_tomorrow=word_pattern([str(e) for e in
                                              table.get("after_tomorrow", ())]),
                 named_dates=named, months=months,
                 numeric=tuple(str(n) for n in table.get("numeric", ("dmy",))), amount=amount)


def languages_words(languages: Iterable[str]) -> list[Words]:
    found: list[Words] = []
    for lang in dict.fromkeys((*languages, "en")):
        key = lexicon_key(LEXICON, lang)
        words = words_of(key) if key is not None else None
        if words is not None:
            found.append(words)
    return found


def _date(year: int | None, month: int, day: int, today: date) -> date | None:
    """The date, its year inferred when the mail gives none (the next such day, or one
    a few days past)."""
    try:
        if year is not None:
            return date(year + 2000 if year < 100 else year, month, day)
        found = date(today.year, month, day)
    except ValueError:
        return None
    if found < today - timedelta(days=PAST_DAYS):
        try:
            found = date(today.year + 1, month, day)
        except ValueError:
            return None
    return found


def dates_in(text: str, words: Words, today: date) -> list[date]:
    """Every date `text` (folded) names, relative to `today`."""
    found: list[date] = []
    if words.after_tomorrow.search(text):
        found.append(today + timedelta(days=2))
        text = words.after_tomorrow.sub(" ", text)
    if words.tomorrow.search(text):
        found.append(today + timedelta(days=1))
    if words.today.search(text):
        found.append(today)
    for m in _NUMERIC.finditer(text):
        a, sep, b, year = int(m.group(1)), m.group(2), int(m.group(3)), m.group(4)
        if sep == "." and year is None:
            continue  # 12.50 is an amount, not a date
        for order in words.numeric:
            day, month = (a, b) if order == "dmy" else (b, a)
            if not 1 <= month <= 12:
                continue
            found_date = _date(int(year) if year else None, month, day, today)
            if found_date is not None:
                found.append(found_date)
                break
    if words.named_dates is not None:
        for m in words.named_dates.finditer(text):
            day_s, month_s, year_s = ((m.group(1), m.group(2), m.group(3)) if m.group(1)
                                      else (m.group(5), m.group(4), m.group(6)))
            named_month = words.months.get(month_s)
            if named_month is not None:
                named_date = _date(int(year_s) if year_s else None, named_month, int(day_s),
                                   today)
                if named_date is not None:
                    found.append(named_date)
    return found


def amount_in(text: str, words: Words) -> str | None:
    """The first amount: "<sign> <digits>" as the mail wrote the digits."""
    if words.amount is None:
        return None
    m = words.amount.search(text)
    if m is None:
        return None
    sign, number = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
    sign = {"eur": "€", "euro": "€", "euros": "€", "usd": "$", "gbp": "£"}.get(sign, sign)
    return f"{sign.upper() if sign.isalpha() else sign} {number.strip()}"


def sender_address(raw: str) -> str:
    m = _ADDRESS.search(raw)
    return (m.group(1) or m.group(2)).lower() if m else ""


def sender_name(raw: str) -> str:
    return _ADDRESS.sub(" ", raw).strip().strip('"').strip()


def bulk(message: Mapping[str, Any]) -> bool:
    return bool(message.get("list_id") or message.get("list_unsubscribe")
                or str(message.get("precedence") or "").strip().lower() in ("bulk", "list"))


def judge(message: Mapping[str, Any], label: str, words: Sequence[Words], today: date,
          family: Iterable[str] = ()) -> Importance:
    """The message's score and kinds (pure)."""
    uid = message.get("uid")
    found = Importance(uid if isinstance(uid, int) else 0)
    if label == "spam":
        return found
    raw_from = str(message.get("from") or "")
    text = fold_plain(" ".join([str(message.get("subject") or ""),
                                str(message.get("snippet") or "")[:MAX_TEXT]]))
    name = fold_plain(sender_name(raw_from))
    kinds: set[str] = set()
    dates: list[date] = []
    for lang in words:
        kinds |= {k for k, pattern in lang.kinds.items()
                  if k != "family" and pattern.search(text)}
        if lang.kinds["family"].search(name):
            kinds.add("family")
        dates += dates_in(text, lang, today)
        found.amount = found.amount or amount_in(text, lang)
    if sender_address(raw_from) in {a.strip().lower() for a in family if a.strip()}:
        kinds.add("family")
    score = sum(WEIGHTS[k] for k in kinds)
    if label == "request":
        score += WEIGHTS["request"]
        kinds.add("request")
    if bulk(message):
        score += WEIGHTS["bulk"]
    if "due" in kinds or ("bill" in kinds and (dates or found.amount)):
        near = [d for d in dates if today - timedelta(days=PAST_DAYS) <= d
                <= today + timedelta(days=AHEAD_DAYS)]
        if near:
            upcoming = [d for d in near if d >= today]
            found.due_in = ((min(upcoming) if upcoming else max(near)) - today).days
            if found.due_in <= SOON_DAYS:
                score += 3
        if found.amount:
            score += 1
    elif kinds & {"appointment", "school"} and any(
            today <= d <= today + timedelta(days=DATED_DAYS) for d in dates):
        score += 2  # a visit or a school day this fortnight
    found.score, found.kinds = score, [k for k in (*KINDS, "request") if k in kinds]
    return found


def note(found: Importance, lang: str) -> str | None:
    """The plain-words line the digest adds under a message, or None."""
    parts: list[str] = []
    due = "due" in found.kinds or "bill" in found.kinds
    if due and found.due_in is not None:
        if found.due_in < 0:
            parts.append(i18n.get("MSG_DIGEST_NOTE_OVERDUE", lang))
        elif found.due_in == 0:
            parts.append(i18n.get("MSG_DIGEST_NOTE_DUE_TODAY", lang))
        elif found.due_in == 1:
            parts.append(i18n.get("MSG_DIGEST_NOTE_DUE_TOMORROW", lang))
        else:
            parts.append(i18n.get("MSG_DIGEST_NOTE_DUE_IN", lang, count=found.due_in))
    elif "due" in found.kinds:
        parts.append(i18n.get("MSG_DIGEST_NOTE_DUE", lang))
    if due and found.amount:
        parts.append(found.amount)
    for kind in ("school", "appointment", "family"):
        if kind in found.kinds:
            parts.append(i18n.get(f"MSG_DIGEST_NOTE_{kind.upper()}", lang))
    return i18n.get("MSG_DIGEST_NOTE", lang, notes=" · ".join(parts)) if parts else None


def rank(messages: Sequence[Mapping[str, Any]], labels: Mapping[int, str],
         languages: Iterable[str], today: date,
         family: Iterable[str] = ()) -> list[Importance]:
    """The messages worth telling, the most important first (then the newest)."""
    words = languages_words(languages)
    judged = [judge(m, labels.get(int(m["uid"]), "other"), words, today, family)
              for m in messages if isinstance(m.get("uid"), int)]
    worth = [j for j in judged if j.worth]
    return sorted(worth, key=lambda j: (-j.score, j.due_in if j.due_in is not None else 999,
                                        -j.uid))
