"""List sentences through the embedded planner (no model), with the shipped manifests' tool
specs: each maps to the `lists` executor with the right action, list and items, and none of
them becomes a file write ("aggiungi il latte alla lista della spesa" once wrote "il latte all"
into a file named "lista della spesa")."""

from __future__ import annotations

from typing import Any

import pytest

from metnos.mechanisms.executors.manifest import MANIFEST_FILE, parse_manifest
from metnos.mechanisms.llm.embedded import plan_embedded
from metnos.mechanisms.llm.tools import ToolSpec
from tests.executors.conftest import REPO_EXECUTORS
from tests.llm.builtin_tools import FIRST

_FOLDERS = sorted(p for p in REPO_EXECUTORS.iterdir() if (p / MANIFEST_FILE).is_file())


def _tools(lang: str) -> list[ToolSpec]:
    return [parse_manifest(folder / MANIFEST_FILE).tool_spec(lang) for folder in _FOLDERS]


# (sentence, action, list, items); `text`-style items (notes, reminders) are one string
IT: list[tuple[str, str, str, list[str] | str | None]] = [
    ("aggiungi il latte alla lista della spesa", "add", "shopping", ["latte"]),
    ("metti uova e pane nella lista della spesa", "add", "shopping", ["uova", "pane"]),
    ("aggiungi latte, uova e pane alla lista della spesa", "add", "shopping",
     ["latte", "uova", "pane"]),
    ("aggiungi le mele alla spesa", "add", "shopping", ["mele"]),
    ("segna il detersivo nella lista della spesa", "add", "shopping", ["detersivo"]),
    ("scrivi il latte nella lista della spesa", "add", "shopping", ["latte"]),
    ("accoda il latte alla lista della spesa", "add", "shopping", ["latte"]),
    ("aggiungi chiamare il medico alla lista delle cose da fare", "add", "to-do",
     ["chiamare il medico"]),
    ("metti pagare la bolletta nella lista to-do", "add", "to-do", ["pagare la bolletta"]),
    ("aggiungi un libro alla lista dei regali", "add", "regali", ["libro"]),
    ("cosa c'è nella lista della spesa?", "show", "shopping", None),
    ("che cosa c'è nella lista delle cose da fare", "show", "to-do", None),
    ("mostrami la lista della spesa", "show", "shopping", None),
    ("leggimi la lista dei regali", "show", "regali", None),
    ("fammi vedere la lista della spesa", "show", "shopping", None),
    ("togli il latte dalla lista della spesa", "remove", "shopping", ["latte"]),
    ("rimuovi uova e pane dalla lista della spesa", "remove", "shopping", ["uova", "pane"]),
    ("cancella il detersivo dalla lista della spesa", "remove", "shopping", ["detersivo"]),
    ("togli le mele dalla spesa", "remove", "shopping", ["mele"]),
    ("svuota la lista della spesa", "clear", "shopping", None),
    ("cancella la lista delle cose da fare", "clear", "to-do", None),
    ("azzera la lista dei regali", "clear", "regali", None),
    ("ricordami di comprare il latte", "add", "reminders", "comprare il latte"),
    ("ricordami di comprare latte e pane", "add", "reminders", "comprare latte e pane"),
    ("prendi nota: il codice del cancello è 1234, scala B", "add", "notes",
     "il codice del cancello è 1234, scala B"),
    ("prendi nota che la riunione è spostata", "add", "notes", "la riunione è spostata"),
    ("annota il numero dell'idraulico", "add", "notes", "il numero dell'idraulico"),
]
EN: list[tuple[str, str, str, list[str] | str | None]] = [
    ("add milk to my shopping list", "add", "shopping", ["milk"]),
    ("put eggs and bread on the shopping list", "add", "shopping", ["eggs", "bread"]),
    ("add milk, eggs and bread to the shopping list", "add", "shopping",
     ["milk", "eggs", "bread"]),
    ("add apples to my groceries", "add", "shopping", ["apples"]),
    ("write milk on the shopping list", "add", "shopping", ["milk"]),
    ("add call the dentist to my to-do list", "add", "to-do", ["call the dentist"]),
    ("put a bike on the gift list", "add", "gift", ["bike"]),
    ("what's on my shopping list?", "show", "shopping", None),
    ("what is on the to-do list", "show", "to-do", None),
    ("show me my shopping list", "show", "shopping", None),
    ("read me the gift list", "show", "gift", None),
    ("what's in my notes", "show", "notes", None),
    ("remove milk from the shopping list", "remove", "shopping", ["milk"]),
    ("delete eggs and bread from my shopping list", "remove", "shopping", ["eggs", "bread"]),
    ("take the milk off my shopping list", "remove", "shopping", ["milk"]),
    ("cross milk off the shopping list", "remove", "shopping", ["milk"]),
    ("clear the to-do list", "clear", "to-do", None),
    ("empty my shopping list", "clear", "shopping", None),
    ("clear the gift list", "clear", "gift", None),
    ("remind me to buy milk", "add", "reminders", "buy milk"),
    ("remind me to buy milk and eggs", "add", "reminders", "buy milk and eggs"),
    ("note: the gate code is 1234", "add", "notes", "the gate code is 1234"),
    ("take a note: call the plumber", "add", "notes", "call the plumber"),
    ("make a note to renew the passport", "add", "notes", "renew the passport"),
]
# The natural phrasings of a family (issue 27): clitic verbs, "anche"/"also", a list named by
# what it is for, a list not named at all (the shopping list, the household's usual one)
NATURAL: list[tuple[str, str, str, str, list[str] | str | None]] = [
    ("it", "mettimi anche pane e uova nella lista", "add", "shopping", ["pane", "uova"]),
    ("it", "aggiungimi il latte alla lista della spesa", "add", "shopping", ["latte"]),
    ("it", "segnami pure lo zucchero sulla lista", "add", "shopping", ["zucchero"]),
    ("it", "aggiungi pure il sale alla spesa", "add", "shopping", ["sale"]),
    ("it", "aggiungi latte", "add", "shopping", ["latte"]),
    ("it", "metti anche burro e farina", "add", "shopping", ["burro", "farina"]),
    ("it", "cosa devo comprare?", "show", "shopping", None),
    ("it", "che cosa mi serve comprare", "show", "shopping", None),
    ("it", "cosa c'è nella lista?", "show", "shopping", None),
    ("it", "quali promemoria ho?", "show", "reminders", None),
    ("it", "che note ho", "show", "notes", None),
    ("en", "add bread", "add", "shopping", ["bread"]),
    ("en", "also add eggs and butter to the list", "add", "shopping", ["eggs", "butter"]),
    ("en", "put cheese on the list too", "add", "shopping", ["cheese"]),
    ("en", "add coffee to my groceries as well", "add", "shopping", ["coffee"]),
    ("en", "what do I need to buy?", "show", "shopping", None),
    ("en", "what should I get at the shop?", "show", "shopping", None),
    ("en", "what do we need from the supermarket", "show", "shopping", None),
    ("en", "what's on the list?", "show", "shopping", None),
    ("en", "what reminders do I have?", "show", "reminders", None),
    ("en", "which notes do I have", "show", "notes", None),
]
CASES = ([("it", *case) for case in IT] + [("en", *case) for case in EN]
         + [case for case in NATURAL])


@pytest.mark.parametrize(("lang", "text", "action", "name", "items"), CASES)
def test_list_sentences_map_to_the_lists_executor(
        lang: str, text: str, action: str, name: str, items: list[str] | str | None) -> None:
    plan = plan_embedded(text, lang, _tools(lang), first=FIRST)
    assert [s.executor for s in plan.steps] == ["lists"], (text, plan.text)
    args: dict[str, Any] = dict(plan.steps[0].args)
    assert args.pop("action", "add") == action  # the manifest's default action is "add"
    assert args.pop("list") == name
    if isinstance(items, str):
        assert args == {"text": items}
    elif items is None:
        assert args == {}
    else:
        assert args == {"items": items}


@pytest.mark.parametrize(("lang", "text", "args"), [
    ("it", "aggiungi latte al file spesa.md",
     {"mode": "append", "content": "latte", "path": "spesa.md"}),
    ("it", "accoda ciao a note.md", {"mode": "append", "content": "ciao", "path": "note.md"}),
    ("en", "append hello to notes.md",
     {"mode": "append", "content": "hello", "path": "notes.md"}),
    ("en", "add hello to the file notes.md",
     {"mode": "append", "content": "hello", "path": "notes.md"}),
    ("en", "write hello to notes/a.md", {"content": "hello", "path": "notes/a.md"}),
])
def test_file_sentences_still_go_to_fs_write(lang: str, text: str, args: dict[str, str]) -> None:
    plan = plan_embedded(text, lang, _tools(lang), first=FIRST)
    assert [(s.executor, s.args) for s in plan.steps] == [("fs_write", args)]


@pytest.mark.parametrize(("lang", "text", "args"), [
    ("en", "will it rain today?", None),  # no list is made of an unplanned sentence
    ("en", "what's in the news?", None),
    ("it", "mettimi la sveglia", None),
])
def test_a_sentence_that_names_no_list_item_is_not_a_list(lang: str, text: str,
                                                         args: None) -> None:
    plan = plan_embedded(text, lang, _tools(lang), first=FIRST)
    assert [s.executor for s in plan.steps] != ["lists"], (text, plan.steps)


def test_at_least_twenty_sentences_per_language() -> None:
    assert len(IT) >= 20 and len(EN) >= 20
