"""What the digest may say about a mail, checked in code before it goes out (issue 25).

A mail is outside text, and a model that read it may have been fooled by it. The prompt asks
for no links; this module makes sure, whatever the model (or the mail's own first sentence)
wrote:
- `links`: a URL of any scheme (`http://`, `hxxp://`, `javascript:`, `mailto:`...), `www.`,
  a bare domain (`banca-verifica.it`), the same with the dot written otherwise (`[.]`,
  `(dot)`, ` dot `, ` punto `, a full-width dot), an e-mail address (`@`, `[at]`), an IP
  address, a phone number (9 digits or more, or `+` and 7);
- `claims`: words saying something was already done to the mail, the account or money
  ("I already moved it to the Trash", "paid", "nothing to do"), in every active language,
  from `lexicon/<lang>/mail.toml` (a new language is a data file, no code);
- `hide_links`: the header line (sender and subject, built by the executor from the headers)
  keeps its words, each link-like piece replaced by a marker, since a chat app would make a
  bare domain clickable.
The summary (`metnos.features.mail.summary`) keeps the header line always and the second line only
when neither check finds anything; else that mail is told by its header line alone, with a
log and an audit line, and never dropped.
"""

from __future__ import annotations

import re
import tomllib
import unicodedata
from functools import lru_cache
from pathlib import Path

from metnos.ground.i18n.lexicon import lexicon_key

LEXICON = "mail"
_DOT = r"(?:\s*(?:\[\s*(?:\.|dot|punto)\s*\]|\(\s*(?:\.|dot|punto)\s*\)|\{\s*(?:\.|dot)\s*\}" \
       r"|[\u3002\uff0e\uff61])\s*|\s+(?:dot|punto)\s+|\.)"
_LABEL = r"[a-z0-9](?:[a-z0-9\-]{0,61}[a-z0-9])?"
_TLD = r"[a-z]{2,24}(?![a-z0-9\-])"
_AT = r"(?:\s*@\s*|\s*\[\s*(?:at|@)\s*\]\s*|\s*\(\s*(?:at|@)\s*\)\s*)"
LINK = re.compile("|".join((
    r"\b[a-z][a-z0-9+.\-]{0,30}\s*(?::|\[:\])\s*/\s*/[^\s<>\"]*",  # scheme://, hxxp[:]//
    r"\b(?:mailto|tel|sms|callto|javascript|vbscript|data|file|tg|whatsapp|skype|"
    r"intent|market)\s*:",
    rf"[^\s@\[\]()<>]+{_AT}{_LABEL}(?:{_DOT}{_LABEL})*",  # an address, however written
    rf"\bwww\d?{_DOT}",
    rf"\b{_LABEL}(?:{_DOT}{_LABEL})*{_DOT}{_TLD}(?:[/:?#][^\s<>\"]*)?",  # a domain
    r"\b\d{1,3}(?:\.\d{1,3}){3}\b",  # an IP address
)), re.IGNORECASE)
_LOCAL = re.compile(rf"([\w.+\-]{{1,64}}){_AT}{_LABEL}", re.IGNORECASE)
_PHONE = re.compile(r"(?:\+|\b00)?\d[\d\s().\-/]{5,}\d")
_STRICT_DOT_DOMAIN = re.compile(rf"^{_LABEL}(?:\.{_LABEL})*\.{_TLD}$", re.IGNORECASE)


def _plain(text: str) -> str:
    """NFKC (full-width letters become ASCII), zero-width characters out."""
    text = unicodedata.normalize("NFKC", text).replace("\u2019", "'")
    return "".join(c for c in text if unicodedata.category(c) != "Cf")


def _fold(text: str) -> str:
    plain = unicodedata.normalize("NFKD", text.lower())
    return "".join(c for c in plain if not unicodedata.combining(c))


def links(text: str) -> list[str]:
    """The link-like pieces of `text`: URLs, domains, addresses, phone numbers."""
    plain = _plain(text)
    return [plain[a:b] for a, b in _spans(plain)]


def _spans(plain: str) -> list[tuple[int, int]]:
    found = [m.span() for m in LINK.finditer(plain) if _is_link(m.group(0))]
    found += [m.span() for m in _PHONE.finditer(plain) if _is_phone(m.group(0))]
    merged: list[tuple[int, int]] = []
    for a, b in sorted(found):
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
        else:
            merged.append((a, b))
    return merged


def _is_link(piece: str) -> bool:
    """A domain written with a plain dot between two words of prose ("fine.Then") is a link
    only when it looks like one: no capital after the dot (a sentence), not a lone number."""
    if "." not in piece or "/" in piece or "@" in piece or ":" in piece:
        return True
    if not _STRICT_DOT_DOMAIN.match(piece.strip()):
        return True  # written with [.] or " dot ": nobody writes prose like that
    tail = piece.rsplit(".", 1)[1]
    return not tail[:1].isupper()


def _is_phone(piece: str) -> bool:
    digits = sum(c.isdigit() for c in piece)
    return digits >= 9 or (piece.startswith(("+", "00")) and digits >= 7)


def claims(text: str, languages: tuple[str, ...]) -> list[str]:
    """The words of `text` that tell an action as already done, in any of `languages`."""
    words = _fold(_plain(text))
    found: list[str] = []
    for lang in dict.fromkeys((*languages, "en")):
        key = lexicon_key(LEXICON, lang)
        if key is not None:
            found += [m.group(0) for m in _claims(key).finditer(words)]
    return found


@lru_cache(maxsize=16)
def _claims(key: tuple[str, int]) -> re.Pattern[str]:
    table = tomllib.loads(Path(key[0]).read_text(encoding="utf-8"))
    return word_pattern([str(e) for e in table.get("claims", {}).get("done", ())])


def fold_plain(text: str) -> str:
    """`text` as the lexicon's entries are matched: NFKC, lower case, no accents."""
    return _fold(_plain(text))


def word_pattern(entries: list[str]) -> re.Pattern[str]:
    """The lexicon entries as one pattern over folded text: whole words, "*" a stem, a
    space any run of spaces; an entry that starts or ends with a sign ("% off") is not
    bound to a word there. Matches nothing when there are none."""
    parts = []
    for entry in entries:
        word = _fold(entry.rstrip("*"))
        if not word.strip():
            continue
        body = re.escape(word).replace(r"\ ", r"\s+") + (r"\w*" if entry.endswith("*") else "")
        parts.append((r"(?<!\w)" if word[:1].isalnum() else "") + body
                     + (r"(?!\w)" if word[-1:].isalnum() or entry.endswith("*") else ""))
    if not parts:
        return re.compile(r"(?!)")
    return re.compile("(?:" + "|".join(parts) + ")")


def hide_links(text: str, marker: str) -> str:
    """`text` with each link-like piece replaced by `marker` (the header line's words stay);
    an address keeps its name before the `@` ("tom@…"): who wrote, with nothing to click."""
    plain = _plain(text)
    out, last = [], 0
    for a, b in _spans(plain):
        local = _LOCAL.match(plain[a:b])
        name = local.group(1) if local else ""  # the name before @ may hide a domain too
        out += [plain[last:a], f"{name}@…" if name and not _spans(name) else marker]
        last = b
    return "".join([*out, plain[last:]])
