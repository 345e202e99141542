"""Safe hints for what the embedded planner did not understand, and the list of what it can do.

Every hint is one of the capability examples of `household/capabilities.toml` that the planner
understands right now (so it never names an internal tool or shows a `<path>`), and a hint is
never more risky than what was asked: the example's risk words (household/<lang>.toml: change,
remove, run) must ask for exactly as much as the request's. Among those, the example sharing
the most uncommon words with the request wins (a riskier tool never ranks above a safer one);
too little in common gives no hint at all, which beats a wrong one.
"""

from __future__ import annotations

from dataclasses import dataclass

from metnos.ground import i18n
from metnos.mechanisms.llm import household

MIN_SCORE = 2  # a shared uncommon word counts 2, a shared affinity keyword of the tool 1
_RISK = {"low": 0, "medium": 1, "high": 2}


@dataclass(frozen=True)
class Example:
    """A capability example in one language, as the planner understands it now."""

    capability: str
    key: str  # MSG_HOUSEHOLD_EXAMPLE_<key>
    text: str
    intent: str  # the executor or household intent it matches
    level: int  # its risk words (0: reading)
    danger: tuple[int, int]  # the tool's (side effects, risk); (0, 0) for household intents
    affinity: frozenset[str]


def example_texts(lang: str) -> list[tuple[str, str, str, str | None]]:
    """(capability, example key, text, the intent it must reach or None) of every capability
    example, in order, in `lang` (a language that lacks the message is skipped: the English
    text would not match)."""
    found = []
    for capability in household.catalogue().capabilities:
        for key in capability.examples:
            text = i18n.lookup(f"MSG_HOUSEHOLD_EXAMPLE_{key}", lang)
            if isinstance(text, str) and text:
                found.append((capability.name, key, text, capability.expect.get(key)))
    return found


def danger(side_effects: bool, risk: str) -> tuple[int, int]:
    return (int(side_effects), _RISK.get(risk, 2))


def items(examples: tuple[Example, ...], lang: str) -> list[tuple[str, str]]:
    """(what, example) per capability with an understood example, for "what can you do?"."""
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for example in examples:
        if example.capability in seen:
            continue
        seen.add(example.capability)
        out.append((i18n.get(f"MSG_HOUSEHOLD_CAN_{example.capability}", lang), example.text))
    return out


def hint(text: str, lang: str, examples: tuple[Example, ...],
         among: frozenset[str] | None = None) -> Example | None:
    """The example to suggest for `text`, or None. `among`: only examples of these intents
    (a tie between tools suggests one of them, or nothing)."""
    asked = household.level(text, lang)
    words = household.content_words(text, lang)
    every = set(household.words_of(text))
    best: tuple[tuple[int, int, int, int], Example] | None = None
    for index, example in enumerate(examples):
        if example.level != asked:
            continue
        if among is not None and example.intent not in among:
            continue
        shared = len(words & household.content_words(example.text, lang))
        score = 2 * shared + len(every & example.affinity)
        if shared == 0 or score < MIN_SCORE:
            continue
        rank = (-score, *example.danger, index)
        if best is None or rank < best[0]:
            best = (rank, example)
    return best[1] if best else None


def try_example(examples: tuple[Example, ...]) -> Example | None:
    """The example a plain "not understood" offers: the first understood one of `try`,
    and only ever one that reads."""
    by_key = {e.key: e for e in examples if e.level == 0}
    for key in household.catalogue().tries:
        if key in by_key:
            return by_key[key]
    return None


def not_understood(text: str, lang: str, examples: tuple[Example, ...], *,
                   first: str = "MSG_PLAN_NOT_UNDERSTOOD",
                   among: frozenset[str] | None = None) -> str:
    """Two lines: what happened, then one hint or one example."""
    line = i18n.get(first, lang)
    suggested = hint(text, lang, examples, among)
    if suggested is not None:
        return line + "\n" + i18n.get("MSG_PLAN_SUGGESTION", lang, suggestion=suggested.text)
    tried = try_example(examples)
    if tried is None:
        return line
    return line + "\n" + i18n.get("MSG_HOUSEHOLD_TRY", lang, example=tried.text)
