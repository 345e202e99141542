"""Compose the reply of a turn in the session language, from i18n messages.

Each executor has a reply message `EX_REPLY_<name>`; its placeholders are the executor's
result fields, with lists rendered as bullet lines and `<field>_count` for their length.
Refusals and failures use their own i18n keys. No LLM is involved: what the user reads about
an action is what the action returned.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from metnos import i18n

MAX_LIST_ITEMS = 50


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


def result_vars(result: dict[str, Any]) -> dict[str, Any]:
    """Placeholders for an executor's reply message: lists become bullet lines. A result
    with one list also gives `count`, which chooses the CLDR plural form of the message."""
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
        else:
            out[name] = value
    return out


def render_outcome(outcome: StepOutcome, lang: str) -> str:
    if outcome.status == "done":
        vars = {**result_vars(outcome.result or {}), "action_id": outcome.action_id or ""}
        key = f"EX_REPLY_{outcome.executor}"
        if key not in i18n.catalog(i18n.normalise_lang(lang)) and key not in i18n.catalog("en"):
            # an executor without a reply message of its own: show its result as it is
            fields = [f"{name}:\n{vars[name]}" if isinstance(value, list) else f"{name}: {value}"
                      for name, value in (outcome.result or {}).items()]
            done = i18n.get("MSG_TURN_STEP_DONE", lang, executor=outcome.executor)
            return "\n".join([done, *fields])
        return i18n.get(key, lang, **vars)
    return i18n.get(outcome.key or "ERR_INTERNAL_UNEXPECTED", lang, **outcome.vars)


def compose(outcomes: list[StepOutcome], plan_text: str | None, lang: str) -> str:
    """The whole reply: the planner's own words (if any), then one paragraph per step."""
    parts = [plan_text.strip()] if plan_text and plan_text.strip() else []
    parts.extend(render_outcome(o, lang) for o in outcomes)
    if not parts:
        parts.append(i18n.get("MSG_TURN_NOTHING_TO_DO", lang))
    return "\n\n".join(parts)
