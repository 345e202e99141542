"""Compose the reply of a turn in the session language, from i18n messages.

Each executor has a reply message `EX_REPLY_<name>`, or one per outcome when its result names
one in `reply` (`EX_REPLY_lists_add`); its placeholders are the executor's result fields, with
lists rendered as bullet lines, `<field>_text` as one phrase in the reply's language ("milk,
eggs and bread", CLDR list patterns) and `<field>_count` for their length.
Refusals and failures use their own i18n keys. No LLM is involved: what the user reads about
an action is what the action returned.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from babel.lists import format_list

from metnos.ground import i18n
from metnos.ground.i18n import phrases
from metnos.ground.i18n.formatting import locale_for

MAX_LIST_ITEMS = 50
_WORD = re.compile(r"[^a-z0-9]+")
_VARIANT = re.compile(r"^[a-z][a-z0-9_]{0,40}$")
DENIED = "MSG_APPROVAL_DENIED"  # the outcome of a step the person said no to


@dataclass
class StepOutcome:
    """What happened to one plan step: run, refused or failed."""

    executor: str
    status: str  # "done" | "refused" | "failed"
    result: dict[str, Any] | None = None
    key: str | None = None
    vars: dict[str, Any] = field(default_factory=dict)
    audit_seq: int | None = None
    action_id: str | None = None


def result_vars(result: dict[str, Any], lang: str | None = None) -> dict[str, Any]:
    """Placeholders for an executor's reply message: lists become bullet lines (and, given
    `lang`, one phrase `<name>_text`). A result with one list also gives `count`, which
    chooses the CLDR plural form of the message."""
    out: dict[str, Any] = {}
    lists = [value for value in result.values() if isinstance(value, list)]
    if len(lists) == 1:
        out["count"] = len(lists[0])
    for name, value in result.items():
        if isinstance(value, list):
            shown = [f"- {item}" for item in value[:MAX_LIST_ITEMS]]
            if len(value) > MAX_LIST_ITEMS:
                shown.append(f"- … (+{len(value) - MAX_LIST_ITEMS})")
            out[name] = "\n".join(shown)
            out[f"{name}_count"] = len(value)
            if lang is not None:
                words = [str(item) for item in value[:MAX_LIST_ITEMS]]
                out[f"{name}_text"] = format_list(words, locale=locale_for(lang)) if words else ""
        else:
            out[name] = value
    return out


def value_words(executor: str, values: dict[str, Any], lang: str) -> dict[str, Any]:
    """`values` with the words a language has for some of them, `EX_VALUE_<executor>_<field>_
    <value>` ("della spesa" for the list "spesa": the Italian reads "alla lista della spesa");
    any other value is shown as it is."""
    catalog = i18n.catalog(i18n.normalise_lang(lang))
    out = dict(values)
    for name, value in values.items():
        if isinstance(value, str) and value:
            key = f"EX_VALUE_{executor}_{name}_{_WORD.sub('_', value.casefold()).strip('_')}"
            if key in catalog:
                out[name] = i18n.get(key, lang)
    return out


def render_outcome(outcome: StepOutcome, lang: str) -> str:
    if outcome.status == "done":
        vars = {**value_words(outcome.executor, result_vars(outcome.result or {}, lang), lang),
                "action_id": outcome.action_id or ""}
        key = reply_key(outcome, lang)
        if not _known(key, lang):
            # an executor without a reply message of its own: show its result as it is
            fields = [f"{name}:\n{vars[name]}" if isinstance(value, list) else f"{name}: {value}"
                      for name, value in (outcome.result or {}).items()]
            done = phrases.done(outcome.executor, outcome.result or {}, lang)
            return "\n".join([done, *fields])
        return i18n.get(key, lang, **vars)
    if outcome.key == DENIED:  # what the person said no to, in plain words
        return phrases.denied(outcome.executor, dict(outcome.vars.get("args") or {}), lang)
    return i18n.get(outcome.key or "ERR_INTERNAL_UNEXPECTED", lang, **outcome.vars)


def reply_key(outcome: StepOutcome, lang: str) -> str:
    """`EX_REPLY_<executor>_<reply>` when the result names an outcome that has a message,
    else `EX_REPLY_<executor>`."""
    key = f"EX_REPLY_{outcome.executor}"
    variant = (outcome.result or {}).get("reply")
    if isinstance(variant, str) and _VARIANT.match(variant) and _known(f"{key}_{variant}", lang):
        return f"{key}_{variant}"
    return key


def _known(key: str, lang: str) -> bool:
    return key in i18n.catalog(i18n.normalise_lang(lang)) or key in i18n.catalog("en")


def compose(outcomes: list[StepOutcome], plan_text: str | None, lang: str) -> str:
    """The whole reply: the planner's own words (if any), then one paragraph per step."""
    parts = [plan_text.strip()] if plan_text and plan_text.strip() else []
    parts.extend(render_outcome(o, lang) for o in outcomes)
    if not parts:
        parts.append(i18n.get("MSG_TURN_NOTHING_TO_DO", lang))
    return "\n\n".join(parts)
