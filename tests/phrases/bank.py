"""The phrase bank: everyday sentences per language (`tests/phrases/<lang>.toml`) run through the
embedded planner with the builtin executors in every active language, as the pipeline does.

Used by tests/phrases/test_bank.py (thresholds, and the hard rule: no sentence may reach a
mutating executor it did not ask for) and by bench/intents.py (the figures)."""

from __future__ import annotations

import datetime as dt
import tomllib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from metnos.mechanisms.llm.embedded import plan_embedded, understand
from tests.llm.builtin_tools import FIRST, builtin_tools, changes, manifests, others

BANK_DIR = Path(__file__).parent
LANGS = ("it", "en")
NONE = "(not understood)"
NOW = dt.datetime(2026, 12, 1, 15, 42, tzinfo=ZoneInfo("Europe/Rome"))


@dataclass(frozen=True)
class Outcome:
    text: str
    expected: str  # an executor, household.<name>, or NONE
    expected_args: dict[str, Any]
    got: str
    got_args: dict[str, Any]
    fallback: str | None = None
    lang: str = ""  # the language it was understood in

    @property
    def pending(self) -> bool:
        """The expected executor is not installed."""
        if self.expected == NONE or self.expected.startswith("household."):
            return False
        return self.expected not in manifests()

    @property
    def correct(self) -> bool:
        if self.got != self.expected:
            return False
        return all(self.got_args.get(k) == v for k, v in self.expected_args.items())

    @property
    def unasked_change(self) -> bool:
        """The hard failure: a run that changes state the sentence did not ask for (another
        executor, or another action of the right one)."""
        if self.got in (NONE,) or self.got.startswith("household."):
            return False
        if not changes(self.got, self.got_args):
            return False
        if self.got == self.fallback:
            return False
        asked = (self.expected == self.got and changes(self.expected, self.expected_args)
                 if self.expected_args else self.expected == self.got)
        same_action = self.got_args.get("action") == self.expected_args.get(
            "action", self.got_args.get("action"))
        return not (asked and same_action)


@dataclass
class Report:
    lang: str
    outcomes: list[Outcome] = field(default_factory=list)

    def counted(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.pending]

    def accuracy(self) -> float:
        counted = self.counted()
        return sum(o.correct for o in counted) / len(counted) if counted else 1.0

    def by_intent(self) -> dict[str, tuple[int, int]]:
        """intent → (correct, counted)."""
        totals: Counter[str] = Counter()
        right: Counter[str] = Counter()
        for outcome in self.counted():
            totals[outcome.expected] += 1
            right[outcome.expected] += outcome.correct
        return {intent: (right[intent], totals[intent]) for intent in sorted(totals)}

    def unasked_changes(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.unasked_change]


def load(lang: str) -> dict[str, Any]:
    return tomllib.loads((BANK_DIR / f"{lang}.toml").read_text(encoding="utf-8"))


def run(lang: str, session: str | None = None) -> Report:
    """The bank of `lang`, from a session in `session` (default: the same language)."""
    bank = load(lang)
    session = session or lang
    tools, elsewhere = builtin_tools(session), others(session, LANGS)
    report = Report(lang)
    entries = [(e["text"], e["intent"], e.get("args", {}), e.get("fallback"))
               for e in bank.get("sentence", ())]
    entries += [(text, NONE, {}, None) for text in bank.get("not_understood", ())]
    for text, intent, args, fallback in entries:
        plan = plan_embedded(text, session, tools, others=elsewhere, now=NOW, first=FIRST)
        got, got_args = NONE, {}
        if plan.steps:
            got, got_args = plan.steps[0].executor, plan.steps[0].args
        elif plan.understood:  # a household answer: which one
            got = understand(text, session, tools, others=elsewhere).intent or NONE
        report.outcomes.append(Outcome(text=text, expected=intent, expected_args=args,
                                       got=got, got_args=got_args, fallback=fallback,
                                       lang=plan.lang or session))
    return report
