"""What an executor does, in the words a family reads (`i18n/<lang>/phrases.toml`).

Four sentences per executor, each an i18n key so a new language needs only its catalog:
- `progress`: while it runs ("Looking for your files…"), the status line of the web chat,
  Telegram and the CLI; it takes no values (a status line never shows outside text);
- `done`: what it did ("I moved compiti.md to the trash."), from its arguments or results;
- `denied`: the reply after a "no" ("You said no: I did not delete compiti.md. Nothing
  changed.");
- `asked`: what a person asks of it, to fit "When you ask me to …" ("look for files").

`EX_<KIND>_<executor>_<value>` is a variant chosen by the `action` or `mode` argument (the
`lists` executor's "add", "remove"...). An executor without its own sentence (one proposed or
synthesised later), or whose sentence needs a value the step does not have, gets the
`EX_<KIND>_GENERIC` one: never its raw name. Values are quoted as plain text (lists joined
with commas, cut at QUOTE_CHARS); the surface escapes the sentence as it escapes any text.
"""

from __future__ import annotations

import json
import string
from collections.abc import Mapping
from typing import Any, Literal

from metnos.ground import i18n

Kind = Literal["PROGRESS", "DONE", "DENIED", "ASK"]
KINDS: tuple[Kind, ...] = ("PROGRESS", "DONE", "DENIED", "ASK")
SELECTORS = ("action", "mode")  # an argument naming the variant of an executor's action
QUOTE_CHARS = 80


def progress(executor: str, lang: str | None) -> str:
    """The status line while `executor` runs."""
    return phrase("PROGRESS", executor, {}, lang)


def done(executor: str, values: Mapping[str, Any], lang: str | None) -> str:
    """What `executor` did, from its arguments and/or results."""
    return phrase("DONE", executor, values, lang)


def denied(executor: str, values: Mapping[str, Any], lang: str | None) -> str:
    """The reply after the person said no to `executor` with these arguments."""
    return phrase("DENIED", executor, values, lang)


def asked(executor: str, lang: str | None) -> str:
    """What a person asks of `executor`, as the end of "When you ask me to …"."""
    return phrase("ASK", executor, {}, lang)


def action(executor: str, lang: str | None) -> str:
    """What a step of `executor` does, for a message about it ("I am about to {action}");
    an executor without its own words is "do this", never its name."""
    if any(i18n.lookup(key("ASK", executor), code) is not None
           for code in (i18n.normalise_lang(lang), i18n.FALLBACK_LANG)):
        return asked(executor, lang)
    return i18n.get("MSG_ACTION_GENERIC", lang)


def has_own(kind: Kind, executor: str, lang: str | None) -> bool:
    """Whether `executor` has its own `kind` sentence in `lang` (not the English fallback)."""
    return isinstance(i18n.catalog(i18n.normalise_lang(lang)).get(key(kind, executor)), str)


def key(kind: Kind, executor: str) -> str:
    return f"EX_{kind}_{executor}"


def phrase(kind: Kind, executor: str, values: Mapping[str, Any], lang: str | None) -> str:
    """The `kind` sentence of `executor` in `lang`, filled from `values`; the generic one
    when it has none or it needs a value that is missing."""
    shown = {name: quoted(value) for name, value in values.items() if value is not None}
    variants = [f"{key(kind, executor)}_{values[s]}" for s in SELECTORS
                if isinstance(values.get(s), str) and str(values[s]).isidentifier()]
    for candidate in [*variants, key(kind, executor)]:
        text = _fill(candidate, lang, shown)
        if text is not None:
            return text
    return i18n.get(key(kind, "GENERIC"), lang)


def one_line(value: Any) -> str:
    """A value on one line, whole: lists and lines joined with commas, anything else JSON."""
    if isinstance(value, list):
        return ", ".join(str(v).strip() for v in value if str(v).strip())
    if isinstance(value, str):
        return ", ".join(line.strip() for line in value.splitlines() if line.strip())
    return json.dumps(value, ensure_ascii=False)


def quoted(value: Any) -> str:
    """A value as a sentence quotes it: one line, cut."""
    text = one_line(value)
    return text if len(text) <= QUOTE_CHARS else text[:QUOTE_CHARS].rstrip() + "…"


def _fill(name: str, lang: str | None, values: Mapping[str, str]) -> str | None:
    raw = i18n.lookup(name, i18n.normalise_lang(lang)) or i18n.lookup(name, i18n.FALLBACK_LANG)
    if not isinstance(raw, str):
        return None
    needed = {field for _, field, _, _ in string.Formatter().parse(raw) if field}
    if not needed <= values.keys() or any(not values[f].strip() for f in needed):
        return None
    return i18n.get(name, lang, **{f: values[f] for f in needed})
