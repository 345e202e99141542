"""The embedded planner: no LLM, Home Assistant Assist's sentence matcher (SPEC §8).

Each tool's `utterances` (hassil templates, in one language) become one hassil intent; a
`{slot}` with `slot_values` is a closed value list, any other `{slot}` a wildcard. The household
intents (greetings, thanks, the time and the date, what Metnos can do: `household.py`) are
matched beside them and answered with no executor. Matching is case- and accent-insensitive;
wildcard text is taken from the user's original text, so `leggi città.md` keeps its accent.

Every active language is tried: the session's first, and a sentence it does not match is
matched in the others (`others`), the best match winning, and answered in its language
(`Plan.lang`). A tie between two tools, or no match, runs nothing: two lines say so, with one
safe hint or one example (`household_hints.py`). Compiled intents are cached per (language,
tools).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import islice
from typing import Any, Protocol

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
)
from hassil.intents import Intent
from hassil.sample import sample_expression

from metnos.ground import i18n
from metnos.ground.settings import get_settings
from metnos.ground.system_lang import Lang, lang_code
from metnos.mechanisms.llm import arguments, household
from metnos.mechanisms.llm import household_hints as hints
from metnos.mechanisms.llm.tools import Plan, PlanStep, ToolSpec

log = logging.getLogger(__name__)



class FirstPlanner(Protocol):
    """A feature's reading of a sentence, tried before the templates (a reminder's time, a
    scheduled task's cadence: `metnos.features.schedules.planning.plan_timed`): a plan, or None."""

    def __call__(self, text: str, lang: str, tools: Sequence[ToolSpec], *,
                 others: Mapping[Lang, Sequence[ToolSpec]] | None = None,
                 now: dt.datetime | None = None) -> Plan | None: ...


_TOKEN = re.compile(r"\w+")
_SLOT_REF = re.compile(r"\{([^{}:]+)(?::[^{}]*)?\}")

# (tool name, utterances, ((slot, ((phrase, value as JSON), ...)), ...))
_ToolKey = tuple[str, tuple[str, ...], tuple[tuple[str, tuple[tuple[str, str], ...]], ...]]
# language, its tools, the results, the text they match (without greetings, "please")
_Match = tuple[Lang, list[ToolSpec], list[RecognizeResult], str]


@dataclass(frozen=True)
class Understanding:
    """What the matcher made of a sentence, before any reply is written.

    `intent`: the executor or `household.<name>` matched, None for no match or a tie (`tied`:
    the intents that tied). `lang`: the language it was matched in (the session's tag when
    that is the one, else the other active language's code)."""

    intent: str | None
    args: dict[str, Any]
    lang: str
    tied: frozenset[str] = frozenset()


def plan_embedded(text: str, lang: str, tools: Sequence[ToolSpec], *,
                  others: Mapping[Lang, Sequence[ToolSpec]] | None = None,
                  now: dt.datetime | None = None,
                  speaks: Callable[[str], str] | None = None,
                  first: Sequence[FirstPlanner] = ()) -> Plan:
    """Match `text` in the session language `lang` (its `tools`), else in the other active
    languages (`others`: language → the same tools described in it). One step or a household
    answer on a clear match, else two lines with a safe hint. `now` is the time the household
    intents tell (default: now in the instance's time zone). `speaks(matched)` is the
    language to answer a match in (default: the one it matched in); `Plan.lang` says it.
    `first`: the features' readings tried before the templates, in order (the runtime's
    `planners`: "ricordami ... alle 18")."""
    for planner in first:
        early = planner(text, lang, tools, others=others, now=now)
        if early is not None:
            return early
    found = understand(text, lang, tools, others=others)
    reply = speaks(found.lang) if speaks is not None and found.intent else found.lang
    code = _base_lang(reply)
    specs = list(tools) if code == _base_lang(lang) else list((others or {}).get(code, ()))
    examples = _examples(code, specs)
    if found.intent is None and not found.tied:
        world = _unseen(text, lang, others)  # "will it rain today?": one plain line
        if world is not None:
            code, topic = world
            what = i18n.get(f"MSG_HOUSEHOLD_WORLD_{topic}", code)
            return Plan(steps=(), text=i18n.get("MSG_HOUSEHOLD_CANNOT_SEE", code, what=what),
                        source="embedded", lang=code if code != _base_lang(lang) else lang)
    if found.intent is None:
        opening = "MSG_PLAN_AMBIGUOUS" if found.tied else "MSG_PLAN_NOT_UNDERSTOOD"
        message = hints.not_understood(text, code, examples, first=opening,
                                       among=found.tied or None)
        return Plan(steps=(), text=message, source="embedded", understood=False,
                    lang=found.lang if found.tied else None)
    if household.is_household(found.intent):
        when = now or dt.datetime.now(get_settings().tz)
        answer = household.answer(found.intent, reply, when, hints.items(examples, code))
        return Plan(steps=(), text=answer, source="embedded", lang=reply)
    step = PlanStep(executor=found.intent, args=found.args)
    return Plan(steps=(step,), text=None, source="embedded", lang=reply)


def understand(text: str, lang: str, tools: Sequence[ToolSpec], *,
               others: Mapping[Lang, Sequence[ToolSpec]] | None = None) -> Understanding:
    """The intent of `text`: the session language's match wins, else the best match among
    the other active languages (an equal score: the one named first)."""
    original = household.calm(unicodedata.normalize("NFC", text))
    folded = fold(original)
    base = _base_lang(lang)
    languages = [(base, list(tools))]
    languages += [(code, list(specs)) for code, specs in (others or {}).items() if code != base]
    matched: _Match | None = None
    for code, specs in languages:
        said, results = original, _recognise(folded, code, specs)
        if not results and (said := household.trimmed(original, code)) != original:
            results = _recognise(fold(said), code, specs)  # "ciao, che ore sono?"
        if not results:
            continue
        if code == base:
            matched = (code, specs, results, said)
            break
        if matched is None or _score(results[0]) < _score(matched[2][0]):
            matched = (code, specs, results, said)
    if matched is None:
        matched = _unnamed_list(original, languages)  # "aggiungi latte": the usual list
    if matched is None:
        return Understanding(intent=None, args={}, lang=lang)
    code, specs, results, original = matched
    found_lang = lang if code == base else code
    best = results[0]
    rivals = {r.intent.name for r in results[1:]
              if r.intent.name != best.intent.name and _score(r) == _score(best)}
    if rivals:
        return Understanding(intent=None, args={}, lang=found_lang,
                             tied=frozenset({best.intent.name, *rivals}))
    name = best.intent.name
    if household.is_household(name):
        return Understanding(intent=name, args={}, lang=found_lang)
    tool = {t.name: t for t in specs}[name]
    filled = arguments.fill(best, original, tool, code)
    return Understanding(intent=name, args=filled, lang=found_lang)


def _unnamed_list(original: str, languages: list[tuple[Lang, list[ToolSpec]]]) -> _Match | None:
    """A request that names no list ("aggiungi latte", "add bread"), read as if it ended with
    the lexicon's `[unnamed_list] ending` ("alla lista della spesa"): only for its verbs, when
    the ending is matched as it is (never taken into an argument) and no argument holds a
    word of `never` ("alla lsita della spesa" is a list named wrong, not an item)."""
    for code, specs in languages:
        said = household.trimmed(original, code).rstrip(" ?!.…")
        for ending in household.unnamed_list(said, code):
            longer = f"{said} {ending}"
            results = _recognise(fold(longer), code, specs)
            if results and _within(results[0], said, code) and not any(
                    r.intent.name != results[0].intent.name and _score(r) == _score(results[0])
                    for r in results[1:]):
                return (code, specs, results[:1], longer)
    return None


def _within(result: RecognizeResult, said: str, lang: str) -> bool:
    """Every wildcard of `result` ends within `said` and may be an item of a list not named."""
    return all(e.text_span is not None and e.text_span[1] <= len(said)
               and household.unnamed_item(said[e.text_span[0]:e.text_span[1]], lang)
               for e in result.entities_list if e.is_wildcard)


def _unseen(text: str, lang: str,
            others: Mapping[Lang, Sequence[ToolSpec]] | None) -> tuple[Lang, str] | None:
    """(language, topic) of a question about the world Metnos cannot see (the session's
    language first)."""
    for code in dict.fromkeys([_base_lang(lang), *(others or {})]):
        topic = household.unseen(text, code)
        if topic is not None:
            return code, topic
    return None


def fold(text: str) -> str:
    """Lower-risk accent folding that keeps the length: `è` → `e`, `ß` stays (one char each)."""
    out = []
    for char in text:
        bare = "".join(
            c for c in unicodedata.normalize("NFD", char) if not unicodedata.combining(c)
        )
        out.append(bare if len(bare) == 1 else char)
    return "".join(out)


def _recognise(folded: str, lang: str, tools: list[ToolSpec]) -> list[RecognizeResult]:
    """hassil's ranked results for the folded text in `lang`, without arguments made only of
    template words."""
    intents = _compile(lang, household.templates(lang), tuple(_tool_key(tool) for tool in tools))
    if not intents.intents:
        return []
    by_name = {tool.name: tool for tool in tools}
    return [r for r in recognize_ranked(folded, intents)
            if household.is_household(r.intent.name)
            or not _not_an_argument(r, by_name[r.intent.name], lang)]


def _examples(lang: str, tools: list[ToolSpec]) -> tuple[hints.Example, ...]:
    keys = tuple(_tool_key(tool) for tool in tools)
    traits = tuple((t.name, t.side_effects, t.risk, t.affinity, t.paths) for t in tools)
    return _understood_examples(lang, keys, traits, i18n.generation())


@lru_cache(maxsize=32)
def _understood_examples(lang: str, keys: tuple[_ToolKey, ...],
                         traits: tuple[tuple[str, bool, str, tuple[str, ...],
                                             tuple[str, ...]], ...],
                         generation: object) -> tuple[hints.Example, ...]:
    """The capability examples the planner understands, unambiguously, with these tools."""
    paths = {trait[0]: trait[4] for trait in traits}
    tools = [ToolSpec(name, "", {}, utterances=utterances, paths=paths.get(name, ()),
                      slot_values={s: {p: json.loads(v) for p, v in vals} for s, vals in slots})
             for name, utterances, slots in keys]
    by_name = {name: (side, risk, aff) for name, side, risk, aff, _ in traits}
    found = []
    for capability, key, text, expected in hints.example_texts(lang):
        results = _recognise(fold(household.calm(text)), lang, tools)
        if not results or any(r.intent.name != results[0].intent.name
                              and _score(r) == _score(results[0]) for r in results[1:]):
            continue
        intent = results[0].intent.name
        if expected is not None and intent != expected:
            continue
        side, risk, affinity = by_name.get(intent, (False, "low", ()))
        found.append(hints.Example(
            capability=capability, key=key, text=text, intent=intent,
            level=household.level(text, lang), danger=hints.danger(side, risk),
            affinity=frozenset(household.words_of(" ".join(affinity)))))
    return tuple(found)


# -- compiling ----------------------------------------------------------------------------
def _tool_key(tool: ToolSpec) -> _ToolKey:
    slots = tuple(
        (slot, tuple((str(phrase), json.dumps(value)) for phrase, value in values.items()))
        for slot, values in sorted(tool.slot_values.items())
    )
    return (tool.name, tuple(tool.utterances), slots)


@lru_cache(maxsize=32)
def _compile(lang: str, own: tuple[tuple[str, tuple[str, ...]], ...],
             keys: tuple[_ToolKey, ...]) -> Intents:
    """hassil intents for the household's sentences `own` and these tools (templates that do
    not parse are logged and skipped)."""
    intents: dict[str, Intent] = {}
    for name, sentences in own:
        data = _intent_data(name, sentences, {})
        if data is not None:
            intents[name] = Intent(name=name, data=[data])
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


def misunderstood(templates: Sequence[str], slots: Mapping[str, Mapping[str, Any]],
                  limit: int) -> list[tuple[str, str]]:
    """(template, example) for each template of which an example sentence, sampled from it
    (at most `limit` each, a wildcard filled with one word), is not understood as the intent
    these templates make together: what a translated sentence list is checked with."""
    values = {slot: tuple((str(p), json.dumps(v)) for p, v in table.items())
              for slot, table in slots.items()}
    data = _intent_data("candidate", tuple(templates), values)
    if data is None:
        return [(template, "") for template in templates]
    intents = Intents(language="xx", intents={"candidate": Intent(name="candidate", data=[data])})
    word = TextSlotValue(text_in=parse_sentence("zanzibar").expression, value_out="zanzibar")
    sample_lists: dict[str, SlotList] = {
        name: lst if isinstance(lst, TextSlotList) else TextSlotList(name=name, values=[word])
        for name, lst in data.slot_lists.items()}
    found = []
    for template in templates:
        try:
            expression = parse_sentence(fold(unicodedata.normalize("NFC", template)),
                                        keep_text=True).expression
            examples = list(islice(sample_expression(expression, sample_lists), limit))
        except Exception:  # a third-party parser on translated text: not understood
            found.append((template, ""))
            continue
        for example in examples:
            if not any(r.intent.name == "candidate" for r in recognize_ranked(example, intents)):
                found.append((template, example))
                break
    return found


def _value_list(name: str, values: tuple[tuple[str, str], ...]) -> TextSlotList:
    return TextSlotList(
        name=name,
        values=[
            TextSlotValue(text_in=parse_sentence(fold(phrase)).expression, value_out=json.loads(v))
            for phrase, v in values
        ],
    )


# -- matching -----------------------------------------------------------------------------
def _score(result: RecognizeResult) -> tuple[int, int, int]:
    """Fewer wildcards, then more literal text, then less text left to wildcards (`elimina
    lo zucchero dalla spesa`: a list's item beats a whole sentence taken as a file name):
    two tools scoring the same are a tie."""
    wild = [e for e in result.entities_list if e.is_wildcard]
    return (len(wild), -result.text_chunks_matched, sum(len(str(e.text)) for e in wild))


def _not_an_argument(result: RecognizeResult, tool: ToolSpec, lang: str) -> bool:
    """`apri il file` must not run with path="il file": a wildcard made only of the
    template's own words is a missing argument, not an argument. Nor is a path several
    unquoted words with no `.` or `/` (`cancella il latte dalla lista` names no file), or a
    word such as "everything" (`elimina tutto`)."""
    literal = _literal_words(tool.utterances)
    for entity in result.entities_list:
        if entity.is_wildcard:
            words = _TOKEN.findall(fold(str(entity.text)).casefold())
            if not words or set(words) <= literal:
                return True
            if entity.name in tool.paths and (not arguments.path_like(str(entity.text))
                                              or household.names_no_file(str(entity.text), lang)):
                return True
    return False


@lru_cache(maxsize=256)
def _literal_words(utterances: tuple[str, ...]) -> frozenset[str]:
    text = fold(" ".join(_SLOT_REF.sub(" ", u) for u in utterances)).casefold()
    return frozenset(_TOKEN.findall(text))


def _base_lang(lang: str) -> Lang:
    """The code of the session's tag (the planner takes a regional tag: `en-GB` tells the
    time as 15:42)."""
    return lang_code(lang) or lang_code("en")
