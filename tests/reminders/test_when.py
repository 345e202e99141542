"""Time expressions of everyday speech, in it and en, against a fixed clock."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from metnos.features.reminders import when
from metnos.mechanisms.executors.manifest import parse_manifest
from metnos.mechanisms.llm.embedded import plan_embedded
from tests.executors.conftest import REPO_EXECUTORS
from tests.llm.builtin_tools import FIRST

ROME = ZoneInfo("Europe/Rome")
NOW = datetime(2026, 12, 1, 16, 30, tzinfo=ROME)  # a Tuesday afternoon


@pytest.mark.parametrize(("text", "lang", "expected"), [
    ("tra 2 minuti", "it", "2026-12-01 16:32"),
    ("fra un'ora e mezza", "it", "2026-12-01 18:00"),
    ("tra mezz'ora", "it", "2026-12-01 17:00"),
    ("alle 18", "it", "2026-12-01 18:00"),
    ("alle 18:30", "it", "2026-12-01 18:30"),
    ("alle 9", "it", "2026-12-02 09:00"),  # past today: tomorrow
    ("domani alle 9", "it", "2026-12-02 09:00"),
    ("domani", "it", "2026-12-02 09:00"),
    ("stasera alle 8", "it", "2026-12-01 20:00"),
    ("lunedì alle 10", "it", "2026-12-07 10:00"),
    ("a mezzogiorno", "it", "2026-12-02 12:00"),
    ("in 10 minutes", "en", "2026-12-01 16:40"),
    ("in two minutes", "en", "2026-12-01 16:32"),
    ("in half an hour", "en", "2026-12-01 17:00"),
    ("in 1 hour and 30 minutes", "en", "2026-12-01 18:00"),
    ("at 6 pm", "en", "2026-12-01 18:00"),
    ("at 6:30 p.m.", "en", "2026-12-01 18:30"),
    ("at 9", "en", "2026-12-02 09:00"),
    ("tomorrow at 9", "en", "2026-12-02 09:00"),
    ("tonight", "en", "2026-12-01 20:00"),
    ("on monday at 10 am", "en", "2026-12-07 10:00"),
])
def test_parse(text: str, lang: str, expected: str) -> None:
    moment = when.parse(text, lang, NOW)
    assert moment is not None and moment.strftime("%Y-%m-%d %H:%M") == expected
    assert moment.tzinfo is ROME


@pytest.mark.parametrize(("text", "lang"), [
    ("chiamare la nonna", "it"), ("alle", "it"), ("tra minuti", "en"), ("at 25", "en"),
    ("alle 18:75", "it"), ("tra 2 minuti domani", "it"), ("", "it"), ("tra 2 minuti", "xx"),
])
def test_not_a_time(text: str, lang: str) -> None:
    assert when.parse(text, lang, NOW) is None


@pytest.mark.parametrize(("sentence", "lang", "text", "at"), [
    ("ricordami di chiamare la nonna alle 18", "it", "chiamare la nonna", "2026-12-01T18:00"),
    ("ricordami tra 2 minuti di spegnere il forno", "it", "spegnere il forno",
     "2026-12-01T16:32"),
    ("domani alle 9 ricordami di comprare il pane", "it", "comprare il pane",
     "2026-12-02T09:00"),
    ("remind me to call grandma at 6 pm", "en", "call grandma", "2026-12-01T18:00"),
    ("remind me in two minutes to turn off the oven", "en", "turn off the oven",
     "2026-12-01T16:32"),
    ("remind me tomorrow at 9 to water the plants", "en", "water the plants",
     "2026-12-02T09:00"),
])
def test_the_embedded_planner_sets_a_timed_reminder(sentence: str, lang: str, text: str,
                                                    at: str) -> None:
    tool = parse_manifest(REPO_EXECUTORS / "reminder_set" / "manifest.toml").tool_spec(lang)
    from metnos.features.schedules.planning import plan_timed

    plan = plan_timed(sentence, lang, [tool], now=NOW)
    assert plan is not None and len(plan.steps) == 1
    step = plan.steps[0]
    assert step.executor == "reminder_set"
    assert step.args["text"] == text
    assert step.args["at"].startswith(at) and step.args["at"].endswith("+01:00")


@pytest.mark.parametrize(("sentence", "lang"), [
    ("ricordami di comprare il latte", "it"),  # no time: the reminders list, not this tool
    ("leggi il file report.md alle 18", "it"),  # a time, but no reminder sentence
    ("remind me to buy milk", "en"),
])
def test_no_timed_reminder_without_a_time_or_a_reminder(sentence: str, lang: str) -> None:
    tool = parse_manifest(REPO_EXECUTORS / "reminder_set" / "manifest.toml").tool_spec(lang)
    plan = plan_embedded(sentence, lang, [tool], first=FIRST)
    assert not plan.steps


@pytest.mark.parametrize(("sentence", "lang", "executor", "expected"), [
    ("ricordami di chiamare la nonna alle 18", "it", "reminder_set",
     {"text": "chiamare la nonna"}),
    ("remind me in two minutes to turn off the oven", "en", "reminder_set",
     {"text": "turn off the oven"}),
    ("ricordami di comprare il latte", "it", "lists",
     {"list": "reminders", "text": "comprare il latte"}),
    ("remind me to buy milk", "en", "lists", {"list": "reminders", "text": "buy milk"}),
])
def test_among_every_builtin(sentence: str, lang: str, executor: str,
                             expected: dict[str, object]) -> None:
    from tests.llm.builtin_tools import builtin_tools, others

    plan = plan_embedded(sentence, lang, builtin_tools(lang), others=others(lang), now=NOW,
                         first=FIRST)
    assert [s.executor for s in plan.steps] == [executor], plan
    args = plan.steps[0].args
    assert {k: args.get(k) for k in expected} == expected, args
