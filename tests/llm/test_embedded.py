"""The embedded planner (hassil), in Italian and English, with ToolSpecs built here."""

from __future__ import annotations

import pytest

from metnos.mechanisms.llm import embedded
from metnos.mechanisms.llm.embedded import plan_embedded
from metnos.mechanisms.llm.tools import PlanStep, ToolSpec
from tests.llm.tools_fixture import tools_en, tools_it


@pytest.mark.parametrize(
    ("text", "executor", "args"),
    [
        ("cerca i file markdown nel workspace", "fs_find", {"kind": "*.md"}),
        ("Cerca file MARKDOWN", "fs_find", {"kind": "*.md"}),
        ("trova tutti i file di testo", "fs_find", {"kind": "*.txt"}),
        ("elenca i file markdown", "fs_find", {"kind": "*.md"}),
        ("mostrami i primi 5 file markdown", "fs_find", {"limit": 5, "kind": "*.md"}),
        ("leggi note.md", "fs_read", {"path": "note.md"}),
        ("leggi il file appunti/lista spesa.md", "fs_read", {"path": "appunti/lista spesa.md"}),
        ('apri il file "ricette/torta.md"', "fs_read", {"path": "ricette/torta.md"}),
        ("leggi il file «città.md»", "fs_read", {"path": "città.md"}),
        ("LEGGI IL FILE Perché.md", "fs_read", {"path": "Perché.md"}),
    ],
)
def test_italian_matches(text: str, executor: str, args: dict[str, object]) -> None:
    plan = plan_embedded(text, "it", tools_it())
    assert plan.steps == (PlanStep(executor=executor, args=args),)
    assert (plan.source, plan.understood, plan.text, plan.lang) == ("embedded", True, None, "it")


@pytest.mark.parametrize(
    ("text", "executor", "args"),
    [
        ("find the markdown files in the workspace", "fs_find", {"kind": "*.md"}),
        ("Search for all text files", "fs_find", {"kind": "*.txt"}),
        ("find files of kind markdown", "fs_find", {"kind": "*.md"}),
        ("read the file notes/shopping list.md", "fs_read", {"path": "notes/shopping list.md"}),
        ("open 'todo.md'", "fs_read", {"path": "todo.md"}),
    ],
)
def test_english_matches(text: str, executor: str, args: dict[str, object]) -> None:
    plan = plan_embedded(text, "en-GB", tools_en())
    assert plan.steps == (PlanStep(executor=executor, args=args),)


def test_accents_are_folded_in_templates_and_input() -> None:
    tool = ToolSpec("weather", "Meteo", {}, utterances=("che tempo farà [domani]",))
    assert plan_embedded("che tempo fara domani", "it", [tool]).steps[0].executor == "weather"
    assert plan_embedded("Che tempo farà?", "it", [tool]).steps[0].executor == "weather"


@pytest.mark.parametrize(
    ("text", "lang", "tools"),
    [
        ("fai una capriola", "it", tools_it()),  # (the weather: test_household.py)
        ("cerca i file pdf", "it", tools_it()),  # pdf is not a known kind: no wildcard fallback
        ("apri il file", "it", tools_it()),  # the template's own words are not a path
        ("sing me a lullaby", "en", tools_en()),
        ("read", "en", tools_en()),
    ],
)
def test_non_matches_run_nothing(text: str, lang: str, tools: list[ToolSpec]) -> None:
    plan = plan_embedded(text, lang, tools)
    assert plan.steps == ()
    assert plan.understood is False
    assert plan.text is not None and len(plan.text.splitlines()) == 2
    assert "METNOS_LLM_MODEL" not in plan.text  # the owner's docs say it, not the family's chat


def test_not_understood_message_in_italian() -> None:
    plan = plan_embedded("fai una capriola", "it", tools_it())
    assert plan.text == ("Scusa, non ho capito.\n"
                         "Prova per esempio con «che ore sono?», oppure chiedimi «cosa sai fare?».")
    assert plan.lang is None  # the session's language


def test_not_understood_message_in_english_with_suggestion() -> None:
    plan = plan_embedded("I want to see notes.md please", "en", tools_en())
    assert plan.text == "Sorry, I didn't understand that.\nPerhaps you meant: “read notes.md”"
    assert "<" not in plan.text


def test_no_tools_at_all() -> None:
    plan = plan_embedded("leggi note.md", "it", [])
    assert plan.understood is False
    assert plan.text is not None and plan.text.startswith("Scusa, non ho capito.\n")
    assert "«che ore sono?»" in plan.text  # the household intents need no tool


def test_a_tie_between_two_tools_runs_nothing() -> None:
    a = ToolSpec("lights_on", "Accende le luci", {}, utterances=("accendi {what}",))
    b = ToolSpec("heater_on", "Accende il riscaldamento", {}, utterances=("accendi {thing}",))
    plan = plan_embedded("accendi la cucina", "it", [a, b])
    assert plan.steps == () and plan.understood is False
    assert plan.text is not None
    assert plan.text.splitlines()[0] == "Può voler dire più di una cosa, quindi non ho fatto nulla."
    assert plan.lang == "it"
    # a tool with more literal text wins over a bare wildcard: not a tie
    c = ToolSpec("lights_on", "Accende le luci", {}, utterances=("accendi [le] luci [in] {room}",))
    won = plan_embedded("accendi le luci in cucina", "it", [c, b])
    assert won.steps == (PlanStep(executor="lights_on", args={"room": "cucina"}),)


def test_a_broken_template_is_skipped_not_fatal() -> None:
    broken = ToolSpec("broken", "Rotto", {}, utterances=("leggi [il file {path",))
    plan = plan_embedded("leggi note.md", "it", [broken, *tools_it()])
    assert plan.steps == (PlanStep(executor="fs_read", args={"path": "note.md"}),)


def test_compiled_intents_are_cached() -> None:
    """Equal tool lists, rebuilt on every call, compile once (the speed: bench/hot_paths.py)."""
    plan_embedded("leggi note.md", "it", tools_it())
    before = embedded._compile.cache_info()
    for _ in range(20):
        plan = plan_embedded("leggi il file appunti/lista spesa.md", "it", tools_it())
        assert plan.steps == (PlanStep(executor="fs_read",
                                       args={"path": "appunti/lista spesa.md"}),)
    after = embedded._compile.cache_info()
    assert after.misses == before.misses and after.hits >= before.hits + 20


def test_slot_table_captured_into_a_differently_named_input() -> None:
    """`{kind:pattern}`: the phrases of slot table `kind`, captured into input `pattern`."""
    tool = ToolSpec(
        "fs_find",
        "Cerca i file nel workspace. Restituisce i percorsi relativi, anche nelle sottocartelle.",
        {"type": "object", "properties": {"pattern": {"type": "string"}}},
        utterances=("(cerca|mostra[mi]) [tutti] i file {kind:pattern} [nel workspace]",),
        slot_values={"kind": {"markdown": "*.md", "di testo": "*.txt"}},
    )
    plan = plan_embedded("mostrami tutti i file di testo", "it", [tool])
    assert plan.steps == (PlanStep(executor="fs_find", args={"pattern": "*.txt"}),)
    refused = plan_embedded("mostra le foto", "it", [tool])
    assert refused.understood is False and refused.steps == ()


def test_a_path_is_not_a_whole_sentence() -> None:
    """Several unquoted words with no `.` or `/` name no file: `cancella il latte dalla lista`
    is not a deletion of the file "il latte dalla lista"."""
    delete = ToolSpec("fs_delete", "Elimina un file", _PATH_PARAMS, side_effects=True,
                      risk="medium", paths=("path",),
                      utterances=("(elimina|cancella) [il file] {path}",))
    assert plan_embedded("cancella il latte dalla lista", "it", [delete]).steps == ()
    for text, path in [("cancella note.md", "note.md"), ("cancella vecchi", "vecchi"),
                       ("cancella il file foto/mare 2024", "foto/mare 2024"),
                       ("cancella «foto vacanze»", "foto vacanze")]:
        assert plan_embedded(text, "it", [delete]).steps == (
            PlanStep(executor="fs_delete", args={"path": path}),), text
    loose = ToolSpec("fs_delete", "Elimina un file", _PATH_PARAMS,
                     utterances=("(elimina|cancella) [il file] {path}",))  # no path inputs
    assert plan_embedded("cancella il latte dalla lista", "it", [loose]).steps != ()


_PATH_PARAMS = {"type": "object", "properties": {"path": {"type": "string"}}}
