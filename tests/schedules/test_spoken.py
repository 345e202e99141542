"""A scheduled task said in one sentence, in Italian and English, without a model: the
cadence is taken out wherever it stands (`metnos.features.schedules.spoken.split`), the task's text
is exactly what the person wants done, and a task the embedded planner cannot read is refused
when it is said, with the forms it reads, never each morning (`runnable`, `plan_scheduled`)."""

from __future__ import annotations

import pytest

from metnos.features.schedules import cadence, spoken
from metnos.mechanisms.executors.registry import load_registry
from metnos.mechanisms.llm.embedded import plan_embedded
from metnos.mechanisms.llm.tools import ToolSpec
from tests.llm.builtin_tools import FIRST
from tests.support.home import MakeHome


@pytest.mark.parametrize(("text", "lang", "when", "task", "cron"), [
    ("ogni giorno alle 8 dimmi cosa c'è nella lista della spesa", "it", "ogni giorno alle 8",
     "dimmi cosa c'è nella lista della spesa", "0 8 * * *"),
    ("every day at 8 tell me what's on the shopping list", "en", "every day at 8",
     "tell me what's on the shopping list", "0 8 * * *"),
    ("every Monday at 7:30 show me the shopping list", "en", "every Monday at 7:30",
     "show me the shopping list", "30 7 * * 1"),
    ("tutti i lunedì alle 7 mostrami la lista della spesa", "it", "tutti i lunedì alle 7",
     "mostrami la lista della spesa", "0 7 * * 1"),
    ("every morning tell me what's on the shopping list", "en", "every morning",
     "tell me what's on the shopping list", "0 9 * * *"),
    ("ogni sera alle 9 dimmi che ore sono", "it", "ogni sera alle 9", "dimmi che ore sono",
     "0 21 * * *"),
    ("tutte le mattine alle 7:15, dimmi cosa devo comprare", "it",
     "tutte le mattine alle 7:15", "dimmi cosa devo comprare", "15 7 * * *"),
    ("on weekdays at 18 tell me the shopping list", "en", "on weekdays at 18",
     "tell me the shopping list", "0 18 * * 1-5"),
    ("dimmi la lista della spesa ogni venerdì sera alle 6", "it", "ogni venerdì sera alle 6",
     "dimmi la lista della spesa", "0 18 * * 5"),
    ("tell me the shopping list every evening at 9", "en", "every evening at 9",
     "tell me the shopping list", "0 21 * * *"),
])
def test_the_cadence_comes_out_and_the_task_keeps_every_word(
        text: str, lang: str, when: str, task: str, cron: str) -> None:
    found = spoken.split(text, lang)
    assert found == (when, task)
    assert cadence.parse(when, lang).cron == cron


@pytest.mark.parametrize(("text", "lang"), [
    ("domani alle 9 dimmi la lista della spesa", "it"),  # once: a reminder's, not a schedule
    ("tomorrow at 9 tell me the shopping list", "en"),
    ("ricordami di chiamare la nonna alle 18", "it"),
    ("ricordami di portare fuori la spazzatura ogni lunedì alle 8", "it"),  # a reminder's
    ("remind me to take out the bins every Monday at 8", "en"),
    ("what's on the shopping list", "en"),
    ("every blue moon tell me a joke", "en"),
    ("ogni giorno alle 8", "it"),  # nothing to do
    ("che giorno è oggi?", "it"),
    ("what day is it today?", "en"),
    ("la sera alle 9 dimmi la lista della spesa", "it"),  # no word says it comes again
])
def test_what_is_no_scheduled_task_is_left_alone(text: str, lang: str) -> None:
    assert spoken.split(text, lang) is None


@pytest.fixture
def tools(make_home: MakeHome) -> dict[str, list[ToolSpec]]:
    home = make_home(lang="it")
    registry = load_registry(home.settings)
    return {lang: registry.tool_specs(lang) for lang in ("it", "en")}


@pytest.mark.parametrize(("text", "lang"), [
    ("dimmi cosa c'è nella lista della spesa", "it"),
    ("tell me what's on the shopping list", "en"),
    ("show me the shopping list", "en"),
    ("mostrami la lista della spesa", "it"),
])
def test_what_it_runs_is_understood_by_the_embedded_planner(
        tools: dict[str, list[ToolSpec]], text: str, lang: str) -> None:
    others = {k: v for k, v in tools.items() if k != lang}
    run = spoken.runnable(text, lang, tools[lang], others)
    assert run is not None
    plan = plan_embedded(run, lang, tools[lang], others=others, first=FIRST)
    [step] = plan.steps
    assert step.executor == "lists" and step.args.get("action") == "show", plan
    assert step.args.get("list") in ("spesa", "shopping"), plan


@pytest.mark.parametrize(("text", "lang", "task"), [
    ("ogni giorno alle 8 dimmi cosa c'è nella lista della spesa", "it",
     "dimmi cosa c'è nella lista della spesa"),
    ("every Monday at 7:30 tell me what's on the shopping list", "en",
     "tell me what's on the shopping list"),
])
def test_the_embedded_planner_asks_for_the_whole_task(
        tools: dict[str, list[ToolSpec]], text: str, lang: str, task: str) -> None:
    others = {k: v for k, v in tools.items() if k != lang}
    plan = plan_embedded(text, lang, tools[lang], others=others, first=FIRST)
    [step] = plan.steps
    assert step.executor == "schedule_set"
    assert step.args["text"] == task and cadence.parse(step.args["when"], lang)


@pytest.mark.parametrize(("text", "lang", "form"), [
    ("ogni giorno alle 8 prepara il caffè", "it", "ogni giorno alle 8"),
    ("every morning water the plants", "en", "every day at 8"),
])
def test_a_task_it_cannot_read_is_refused_when_said_with_the_forms_it_reads(
        tools: dict[str, list[ToolSpec]], text: str, lang: str, form: str) -> None:
    others = {k: v for k, v in tools.items() if k != lang}
    plan = plan_embedded(text, lang, tools[lang], others=others, first=FIRST)
    assert plan.steps == () and plan.text is not None
    assert form in plan.text, plan.text  # an example of what it reads, in the person's words
    assert "schedule_set" not in plan.text and "{" not in plan.text
