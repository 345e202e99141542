"""List sentences through the embedded planner (no model), with the shipped manifests' tool
specs: each maps to the `lists` executor with the right action, list and items, and none of
them becomes a file write ("aggiungi il latte alla lista della spesa" once wrote "il latte all"
into a file named "lista della spesa")."""

from __future__ import annotations

from typing import Any

import pytest

from metnos.executors.manifest import MANIFEST_FILE, parse_manifest
from metnos.llm.embedded import plan_embedded
from metnos.llm.tools import ToolSpec
from tests.executors.conftest import REPO_EXECUTORS

_FOLDERS = sorted(p for p in REPO_EXECUTORS.iterdir() if (p / MANIFEST_FILE).is_file())


def _tools(lang: str) -> list[ToolSpec]:
    return [parse_manifest(folder / MANIFEST_FILE).tool_spec(lang) for folder in _FOLDERS]


# (sentence, action, list, items); `text`-style items (notes, reminders) are one string
IT: list[tuple[str, str, str, list[str] | str | None]] = [
    ("aggiungi il latte alla lista della spesa", "add", "spesa", ["latte"]),
    ("metti uova e pane nella lista della spesa", "add", "spesa", ["uova", "pane"]),
    ("aggiungi latte, uova e pane alla lista della spesa", "add", "spesa",
     ["latte", "uova", "pane"]),
    ("aggiungi le mele alla spesa", "add", "spesa", ["mele"]),
    ("segna il detersivo nella lista della spesa", "add", "spesa", ["detersivo"]),
    ("scrivi il latte nella lista della spesa", "add", "spesa", ["latte"]),
    ("accoda il latte alla lista della spesa", "add", "spesa", ["latte"]),
    ("aggiungi chiamare il medico alla lista delle cose da fare", "add", "to-do",
     ["chiamare il medico"]),
    ("metti pagare la bolletta nella lista to-do", "add", "to-do", ["pagare la bolletta"]),
    ("aggiungi un libro alla lista dei regali", "add", "regali", ["libro"]),
    ("cosa c'è nella lista della spesa?", "show", "spesa", None),
    ("che cosa c'è nella lista delle cose da fare", "show", "to-do", None),
    ("mostrami la lista della spesa", "show", "spesa", None),
    ("leggimi la lista dei regali", "show", "regali", None),
    ("fammi vedere la lista della spesa", "show", "spesa", None),
    ("togli il latte dalla lista della spesa", "remove", "spesa", ["latte"]),
    ("rimuovi uova e pane dalla lista della spesa", "remove", "spesa", ["uova", "pane"]),
    ("cancella il detersivo dalla lista della spesa", "remove", "spesa", ["detersivo"]),
    ("togli le mele dalla spesa", "remove", "spesa", ["mele"]),
    ("svuota la lista della spesa", "clear", "spesa", None),
    ("cancella la lista delle cose da fare", "clear", "to-do", None),
    ("azzera la lista dei regali", "clear", "regali", None),
    ("ricordami di comprare il latte", "add", "promemoria", "comprare il latte"),
    ("ricordami di comprare latte e pane", "add", "promemoria", "comprare latte e pane"),
    ("prendi nota: il codice del cancello è 1234, scala B", "add", "note",
     "il codice del cancello è 1234, scala B"),
    ("prendi nota che la riunione è spostata", "add", "note", "la riunione è spostata"),
    ("annota il numero dell'idraulico", "add", "note", "il numero dell'idraulico"),
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
CASES = [("it", *case) for case in IT] + [("en", *case) for case in EN]


@pytest.mark.parametrize(("lang", "text", "action", "name", "items"), CASES)
def test_list_sentences_map_to_the_lists_executor(
        lang: str, text: str, action: str, name: str, items: list[str] | str | None) -> None:
    plan = plan_embedded(text, lang, _tools(lang))
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
    plan = plan_embedded(text, lang, _tools(lang))
    assert [(s.executor, s.args) for s in plan.steps] == [("fs_write", args)]


def test_at_least_twenty_sentences_per_language() -> None:
    assert len(IT) >= 20 and len(EN) >= 20
