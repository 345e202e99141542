"""The embedded planner's timed sentences: "ricordami di chiamare la nonna alle 18".

The input of a timed executor named in `data/<lang>/reminders.toml` (`[fills]`) is filled
from the time expression found in the sentence (`when.find`), wherever it stands; the rest
of the sentence, without it, is matched against the executor's templates there
(`[templates]`). A sentence without a time expression is left to the other tools (a
reminder without a time goes on the reminders list), and so is one that names days that come
again ("ogni lunedì alle 8": a scheduled task, `metnos.features.schedules.cadence.says_recurring`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from metnos.features.reminders import when
from metnos.features.schedules import cadence, spoken
from metnos.ground.settings import get_settings
from metnos.ground.system_lang import Lang
from metnos.mechanisms.llm.embedded import plan_embedded
from metnos.mechanisms.llm.tools import Plan, PlanStep, ToolSpec

_SPACES = re.compile(r"\s+")


def timed_inputs(tool: ToolSpec, lang: str) -> list[str]:
    """The inputs of `tool` a time expression fills in `lang` (`[fills]` of the data)."""
    name = when.words(lang).get("fills", {}).get((tool.name,))
    props = tool.parameters.get("properties", {}) if isinstance(tool.parameters, dict) else {}
    return [name] if isinstance(name, str) and name in props else []


def plan_timed(text: str, lang: str, tools: Sequence[ToolSpec], *,
               others: Mapping[Lang, Sequence[ToolSpec]] | None = None,
               tz: ZoneInfo | None = None, now: datetime | None = None) -> Plan | None:
    """One step of a timed executor when `text` holds a time and, once the time is taken
    out, matches one of its templates (the session language `lang` first, then `others`);
    None otherwise (the planner goes on)."""
    scheduled = spoken.plan_scheduled(text, lang, tools, others=others)
    if scheduled is not None:  # "ogni giorno alle 8 dimmi ...": a scheduled task
        return scheduled
    moment = now or datetime.now(tz or get_settings().tz)
    for code, specs in [(lang, tools), *(others or {}).items()]:
        plan = _timed_in(text, code, specs, moment)
        if plan is not None:
            return plan
    return None


def _timed_in(text: str, lang: str, tools: Sequence[ToolSpec], now: datetime) -> Plan | None:
    templates = when.words(lang).get("templates", {})
    timed = [(tool, names) for tool in tools
             if (names := timed_inputs(tool, lang)) and templates.get(tool.name)]
    if not timed:
        return None
    found = when.find(text, lang, now)
    if found is None or cadence.says_recurring(text, lang):  # "ogni lunedì alle 8": no
        return None  # one-off reminder (the scheduled tasks' templates may take it)
    start, end, moment = found
    start = when.lead_start(text, lang, start)  # "on" Monday: not in the reminder's text
    rest = _SPACES.sub(" ", f"{text[:start]} {text[end:]}").strip(" ,.;:!")
    offered = [_untimed(tool, names, tuple(templates[tool.name])) for tool, names in timed]
    plan = plan_embedded(rest, lang, offered, now=now)  # the same matcher, on fewer tools
    if not plan.steps:
        return None
    step = plan.steps[0]
    names = next(names for tool, names in timed if tool.name == step.executor)
    args: dict[str, Any] = {**step.args, **{name: moment.isoformat() for name in names}}
    return Plan(steps=(PlanStep(executor=step.executor, args=args),), text=None,
                source="embedded", lang=lang)


def _untimed(tool: ToolSpec, names: list[str], utterances: tuple[str, ...]) -> ToolSpec:
    """`tool` with its sentences without a time, and without the inputs the time fills."""
    params = dict(tool.parameters)
    params["properties"] = {k: v for k, v in params.get("properties", {}).items()
                            if k not in names}
    params["required"] = [k for k in params.get("required", []) if k not in names]
    return replace(tool, parameters=params, utterances=utterances, affinity=())
