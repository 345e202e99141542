"""A scheduled task said in one sentence, read without a model (SPEC §12).

"ogni giorno alle 8 dimmi cosa c'è nella lista della spesa", "tell me the shopping list every
evening at 9": the cadence is the longest run of words at the start (or at the end) that
`metnos.features.schedules.cadence` reads as a recurring time, and that says so plainly (an "every"
word, or one that says it alone, `plain` in lexicon/<lang>/schedules.toml: "che giorno è
oggi?" names no task); the rest, word for word, is the task's text.

A task's text runs later as a turn. Without a model, only what the embedded planner reads can
run: `runnable` gives the form it reads (the text, or the text without its opening "tell me"
words, `tell` in lexicon/<lang>/schedules.toml), and a text it reads in neither form is
refused when the task is said, with examples of what it reads (`refusal`), never each
morning. The words are data: a third language is a new schedules.toml.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from metnos.features.reminders import when
from metnos.features.schedules import cadence
from metnos.features.schedules.owner import ScheduleError
from metnos.ground import i18n
from metnos.ground.system_lang import Lang, lang_code
from metnos.mechanisms.llm import household
from metnos.mechanisms.llm import household_hints as hints
from metnos.mechanisms.llm.embedded import understand  # the planner's own matcher
from metnos.mechanisms.llm.tools import Plan, PlanStep, ToolSpec

EXECUTOR = "schedule_set"
EXAMPLES = 3  # tasks shown in a refusal
_EDGES = " \t,.;:!-–—"
_SPACES = re.compile(r"\s+")


def split(text: str, lang: str) -> tuple[str, str] | None:
    """(when, what) of a sentence that names a recurring time and something to do then, in
    `lang`; None when it does not."""
    words = cadence.words(lang)
    tokens = when.tokenize(text)
    if not words or not _recurring([t.text for t in tokens], words) or _reads(text, lang) \
            or _opens(tokens, words["reminders"]):
        return None  # no words, only a time (nothing to do then), or a reminder's sentence
    for j in range(len(tokens) - 1, 0, -1):  # the cadence first: the longest that reads
        head, rest = text[:tokens[j - 1].end], text[tokens[j].start:]
        found = _pair(head, rest, lang, words)
        if found is not None:
            return found
    for j in range(1, len(tokens)):  # the cadence last: the longest that reads
        found = _pair(text[tokens[j].start:], text[:tokens[j].start], lang, words)
        if found is not None:
            return found
    return None


def _pair(span: str, rest: str, lang: str, words: dict[str, object]
          ) -> tuple[str, str] | None:
    what = _SPACES.sub(" ", rest).strip(_EDGES)
    span = _SPACES.sub(" ", span).strip(_EDGES)
    if not what or not _recurring([t.text for t in when.tokenize(span)], words) or \
            not _reads(span, lang):
        return None
    return span, what


def _opens(tokens: list[when.Token], table: set[tuple[str, ...]]) -> bool:
    return any(tuple(t.text for t in tokens[:size]) in table for size in (3, 2, 1))


def _reads(text: str, lang: str) -> bool:
    try:
        cadence.parse(text, lang)
    except cadence.CadenceError:
        return False
    return True


def _recurring(tokens: list[str], words: dict[str, object]) -> bool:
    """Whether the words say plainly that they come again: an "every" word, or one that says
    it alone ("daily", "weekdays", "mornings", a weekday in the plural)."""
    tables = [words["recurring"], words["plain"]]
    for i in range(len(tokens)):
        for size in (4, 3, 2, 1):
            key = tuple(tokens[i:i + size])
            if len(key) == size and any(key in table for table in tables):  # type: ignore[operator]
                return True
    return False


def without_tell(text: str, lang: str) -> str:
    """`text` without its opening "tell me" words ("dimmi", "let me know")."""
    tokens = when.tokenize(text)
    tell = cadence.words(lang).get("tell", set())
    for size in (3, 2, 1):
        key = tuple(t.text for t in tokens[:size])
        if len(tokens) > size and key in tell:
            return text[tokens[size].start:].strip(_EDGES)
    return text


def runnable(text: str, lang: str, tools: Sequence[ToolSpec],
             others: Mapping[Lang, Sequence[ToolSpec]] | None = None) -> str | None:
    """The form of a task's `text` the embedded planner reads (the text without its "tell
    me" words first: "tell me what's on the list" is the list; then the text itself), or
    None when it reads neither. A task that schedules a task is none."""
    for candidate in dict.fromkeys((without_tell(text, lang), text)):
        found = understand(candidate, lang, tools, others=others)
        if found.intent is not None and found.intent != EXECUTOR:
            return candidate
    return None


def refusal(text: str, lang: str, tools: Sequence[ToolSpec]) -> str:
    """Why the task `text` cannot be scheduled without a model, and what can."""
    key, values = _refused(text, lang, tools)
    return i18n.get(key, lang, **values)


def _refused(text: str, lang: str, tools: Sequence[ToolSpec]) -> tuple[str, dict[str, str]]:
    form = str(cadence.words(lang).get("example", "")) or str(cadence.words("en")["example"])
    shown = [f"• {form} {example}" for example in examples(lang, tools)]
    key = "ERR_SCHEDULE_TEXT_NOT_UNDERSTOOD" if shown else "ERR_SCHEDULE_TEXT_NOT_UNDERSTOOD_BARE"
    return key, {"text": " ".join(text.split())[:120], "examples": "\n".join(shown)}


def require_runnable(text: str, lang: str, tools_of: Callable[[str], Sequence[ToolSpec]],
                     langs: Sequence[Lang]) -> str:
    """The form of `text` the embedded planner runs (blocking). Raises ScheduleError
    ERR_SCHEDULE_TEXT_NOT_UNDERSTOOD, its message the forms it reads in `lang`."""
    tools = tools_of(lang)
    others = {code: tools_of(code) for code in langs if code != lang}
    found = runnable(text, lang, tools, others)
    if found is None:
        key, values = _refused(text, lang, tools)
        raise ScheduleError(key, **values)
    return found


def examples(lang: str, tools: Sequence[ToolSpec]) -> list[str]:
    """Capability examples that only read, which the embedded planner reads now."""
    found: list[str] = []
    for _capability, _key, text, _expected in hints.example_texts(lang):
        if len(found) >= EXAMPLES:
            break
        if household.level(text, lang) != 0:
            continue
        intent = understand(text, lang, tools).intent
        if intent is not None and not household.is_household(intent) and intent != EXECUTOR:
            bare = text.rstrip("?!. ")
            found.append(bare[:1].lower() + bare[1:])
    return found


def plan_scheduled(text: str, lang: str, tools: Sequence[ToolSpec], *,
                   others: Mapping[Lang, Sequence[ToolSpec]] | None = None) -> Plan | None:
    """The embedded planner's reading of a scheduled task said in one sentence: one
    `schedule_set` step with the cadence and the task's whole text, or the refusal when the
    planner could not run that text; None when `text` is no such sentence (or the tool is
    not offered), in `lang` or one of `others`."""
    for code, specs in [(lang, tools), *(others or {}).items()]:
        if not any(tool.name == EXECUTOR for tool in specs):
            continue
        found = split(text, code)
        if found is None:
            continue
        span, what = found
        rest = {k: v for k, v in [(lang_code(lang), tools), *(others or {}).items()]
                if k != lang_code(code)}
        if runnable(what, code, specs, rest) is None:
            return Plan(steps=(), text=refusal(what, code, specs), source="embedded",
                        lang=code)
        return Plan(steps=(PlanStep(executor=EXECUTOR, args={"when": span, "text": what}),),
                    text=None, source="embedded", lang=code)
    return None
