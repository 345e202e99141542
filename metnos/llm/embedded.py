"""The embedded planner: no LLM, Home Assistant Assist's sentence matcher (SPEC §8).

Each tool's `utterances` (hassil templates, in the session language) become one hassil intent;
a `{slot}` with `slot_values` is a closed value list, any other `{slot}` a wildcard. Matching is
case- and accent-insensitive; wildcard text is taken from the user's original text, so
`leggi città.md` keeps its accent. A tie between two tools, or no match, runs nothing: the
reply lists what the planner understands, suggests tools by affinity keywords, and names what
to configure for free-form requests. Compiled intents are cached per (language, tools).
"""

from __future__ import annotations

import json
import logging
import re
import unicodedata
from functools import lru_cache
from typing import Any

from hassil import (
    IntentData,
    Intents,
    RecognizeResult,
    SlotList,
    TextSlotList,
    TextSlotValue,
    WildcardSlotList,
    parse_sentence,
    recognize_ranked,
    sample_expression,
)
from hassil.intents import Intent

from metnos import i18n
from metnos.llm.tools import Plan, PlanStep, ToolSpec

log = logging.getLogger(__name__)

MAX_LISTED = 10
_QUOTES = {'"': '"', "'": "'", "“": "”", "‘": "’", "«": "»", "„": "“"}
_TOKEN = re.compile(r"\w+")
_SLOT_REF = re.compile(r"\{([^{}:]+)(?::[^{}]*)?\}")

# (tool name, utterances, ((slot, ((phrase, value as JSON), ...)), ...))
_ToolKey = tuple[str, tuple[str, ...], tuple[tuple[str, tuple[tuple[str, str], ...]], ...]]


def plan_embedded(text: str, lang: str, tools: list[ToolSpec]) -> Plan:
    """Match `text` against the tools' templates; one step on a clear match, else a helpful text."""
    base = _base_lang(lang)
    by_name = {tool.name: tool for tool in tools}
    original = unicodedata.normalize("NFC", text)
    intents = _compile(base, tuple(_tool_key(tool) for tool in tools))
    results = recognize_ranked(fold(original), intents) if intents.intents else []
    results = [r for r in results if not _slot_is_template_text(r, by_name[r.intent.name])]
    if not results:
        return _not_understood(original, base, tools)
    best = results[0]
    rivals = {
        r.intent.name
        for r in results[1:]
        if r.intent.name != best.intent.name and _score(r) == _score(best)
    }
    if rivals:
        tied = [by_name[name] for name in sorted({best.intent.name, *rivals})]
        text_out = i18n.get("MSG_PLAN_AMBIGUOUS", base, capabilities=_capabilities(tied, base))
        return Plan(steps=(), text=text_out, source="embedded", understood=False)
    tool = by_name[best.intent.name]
    step = PlanStep(executor=tool.name, args=_args(best, original, tool))
    return Plan(steps=(step,), text=None, source="embedded")


def fold(text: str) -> str:
    """Lower-risk accent folding that keeps the length: `è` → `e`, `ß` stays (one char each)."""
    out = []
    for char in text:
        bare = "".join(
            c for c in unicodedata.normalize("NFD", char) if not unicodedata.combining(c)
        )
        out.append(bare if len(bare) == 1 else char)
    return "".join(out)


# -- compiling ----------------------------------------------------------------------------
def _tool_key(tool: ToolSpec) -> _ToolKey:
    slots = tuple(
        (slot, tuple((str(phrase), json.dumps(value)) for phrase, value in values.items()))
        for slot, values in sorted(tool.slot_values.items())
    )
    return (tool.name, tuple(tool.utterances), slots)


@lru_cache(maxsize=32)
def _compile(lang: str, keys: tuple[_ToolKey, ...]) -> Intents:
    """hassil intents for these tools (templates that do not parse are logged and skipped)."""
    intents: dict[str, Intent] = {}
    for name, utterances, slots in keys:
        data = _intent_data(name, utterances, dict(slots))
        if data is not None:
            intents[name] = Intent(name=name, data=[data])
    return Intents(language=lang, intents=intents)


def _intent_data(
    name: str, utterances: tuple[str, ...], slots: dict[str, tuple[tuple[str, str], ...]]
) -> IntentData | None:
    templates: list[str] = []
    list_names: set[str] = set()
    for utterance in utterances:
        folded = fold(unicodedata.normalize("NFC", utterance))
        try:
            list_names.update(parse_sentence(folded, keep_text=True).list_names({}))
        except Exception as exc:  # a third-party parser on manifest text: skip the template
            log.warning("embedded.bad_template tool=%s template=%r error=%s", name, utterance, exc)
            continue
        templates.append(folded)
    if not templates:
        return None
    lists: dict[str, SlotList] = {}
    for list_name in list_names:
        values = slots.get(list_name)
        lists[list_name] = _value_list(list_name, values) if values else WildcardSlotList(list_name)
    wildcards = {n for n, lst in lists.items() if isinstance(lst, WildcardSlotList)}
    return IntentData(sentence_texts=templates, slot_lists=lists, wildcard_list_names=wildcards)


def _value_list(name: str, values: tuple[tuple[str, str], ...]) -> TextSlotList:
    return TextSlotList(
        name=name,
        values=[
            TextSlotValue(text_in=parse_sentence(fold(phrase)).expression, value_out=json.loads(v))
            for phrase, v in values
        ],
    )


# -- matching -----------------------------------------------------------------------------
def _score(result: RecognizeResult) -> tuple[int, int]:
    """Fewer wildcards, then more literal text: two tools scoring the same are a tie."""
    wildcards = sum(1 for e in result.entities_list if e.is_wildcard)
    return (wildcards, -result.text_chunks_matched)


def _slot_is_template_text(result: RecognizeResult, tool: ToolSpec) -> bool:
    """`apri il file` must not run with path="il file": a wildcard made only of the
    template's own words is a missing argument, not an argument."""
    literal = _literal_words(tool.utterances)
    for entity in result.entities_list:
        if entity.is_wildcard:
            words = _TOKEN.findall(fold(str(entity.text)).casefold())
            if not words or set(words) <= literal:
                return True
    return False


@lru_cache(maxsize=256)
def _literal_words(utterances: tuple[str, ...]) -> frozenset[str]:
    text = fold(" ".join(_SLOT_REF.sub(" ", u) for u in utterances)).casefold()
    return frozenset(_TOKEN.findall(text))


def _args(result: RecognizeResult, original: str, tool: ToolSpec) -> dict[str, Any]:
    props = tool.parameters.get("properties", {}) if isinstance(tool.parameters, dict) else {}
    args: dict[str, Any] = {}
    for name, entity in result.entities.items():
        if not entity.is_wildcard:
            args[name] = entity.value
            continue
        span = entity.text_span
        raw = original[span[0] : span[1]] if span else str(entity.value)
        args[name] = _coerce(_unquote(raw), props.get(name, {}))
    return args


def _unquote(text: str) -> str:
    text = text.strip()
    while len(text) >= 2 and _QUOTES.get(text[0]) == text[-1]:
        text = text[1:-1].strip()
    return text


def _coerce(text: str, schema: dict[str, Any]) -> Any:
    """Wildcards capture text; an integer/number parameter gets a number when it parses."""
    kind = schema.get("type") if isinstance(schema, dict) else None
    try:
        if kind == "integer":
            return int(text)
        if kind == "number":
            return float(text.replace(",", "."))
    except ValueError:
        return text
    return text


# -- the honest "not understood" ----------------------------------------------------------
def _not_understood(text: str, lang: str, tools: list[ToolSpec]) -> Plan:
    suggested = _by_affinity(text, tools)
    message = i18n.get(
        "MSG_PLAN_NOT_UNDERSTOOD", lang, capabilities=_capabilities(suggested + tools, lang)
    )
    if suggested:
        names = ", ".join(
            i18n.get("MSG_PLAN_QUOTED", lang, text=_example(t)) for t in suggested[:3]
        )
        message = i18n.get("MSG_PLAN_SUGGESTION", lang, suggestions=names) + "\n" + message
    return Plan(steps=(), text=message, source="embedded", understood=False)


def _by_affinity(text: str, tools: list[ToolSpec]) -> list[ToolSpec]:
    """Tools whose affinity keywords occur in the text, most overlap first (never run)."""
    words = set(_TOKEN.findall(fold(text).casefold()))
    scored = []
    for index, tool in enumerate(tools):
        keywords = {fold(k).casefold() for k in tool.affinity}
        overlap = len(words & keywords)
        if overlap and tool.utterances:
            scored.append((-overlap, index, tool))
    return [tool for _, _, tool in sorted(scored, key=lambda item: item[:2])]


def _capabilities(tools: list[ToolSpec], lang: str) -> str:
    seen: list[str] = []
    lines: list[str] = []
    for tool in tools:
        if tool.name in seen or not tool.utterances:
            continue
        seen.append(tool.name)
        example = _example(tool)
        lines.append(
            i18n.get(
                "MSG_PLAN_CAPABILITY", lang, description=_short(tool.description), example=example
            )
        )
    if not lines:
        return i18n.get("MSG_PLAN_NO_CAPABILITIES", lang)
    return "\n".join(lines[:MAX_LISTED])


def _short(description: str, limit: int = 120) -> str:
    """The first sentence of a description (manifests may say much more)."""
    first = re.split(r"(?<=[.!?])\s|\n", description.strip(), maxsplit=1)[0].rstrip(".")
    return first if len(first) <= limit else first[: limit - 1].rstrip() + "…"


def _example(tool: ToolSpec) -> str:
    """A readable sentence from the first template: no optionals, first alternatives."""
    return _example_of(tool.utterances[0], tuple(_tool_key(tool)[2])) if tool.utterances else ""


@lru_cache(maxsize=256)
def _example_of(template: str, slots: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]) -> str:
    try:
        expression = parse_sentence(template, keep_text=True).expression
        sample = next(iter(sample_expression(expression, expand_lists=False, skip_optionals=True)))
    except Exception:  # an unparsable template was already logged at compile time
        return template
    values = dict(slots)

    def _fill(match: re.Match[str]) -> str:
        phrases = values.get(match.group(1).strip())
        return phrases[0][0] if phrases else f"<{match.group(1).strip()}>"

    return " ".join(_SLOT_REF.sub(_fill, sample).split())


def _base_lang(lang: str) -> str:
    return lang.replace("_", "-").split("-")[0].lower() or "en"
