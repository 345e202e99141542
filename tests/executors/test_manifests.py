"""Every shipped manifest is valid (Home Assistant's hassfest idea), and bad ones are refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from hassil import Intents, recognize_best

from metnos.features.languages.lang_state import (
    FIELDS,
    lang_version_hash,
    read_lang_state,
    stale_languages,
)
from metnos.features.reversal import EFFECT, FILES, MAILBOX, REMOTE
from metnos.mechanisms.executors.manifest import MANIFEST_FILE, parse_manifest
from metnos.mechanisms.llm.tools import ToolSpec
from tests.executors.conftest import BUILTINS, REPO_EXECUTORS

FOLDERS = sorted(p.parent for p in REPO_EXECUTORS.glob(f"*/{MANIFEST_FILE}"))


def test_every_builtin_is_shipped() -> None:
    assert {p.name for p in FOLDERS} >= set(BUILTINS)


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_manifest_is_valid(folder: Path) -> None:
    manifest = parse_manifest(folder / MANIFEST_FILE)
    assert manifest.name == folder.name
    for table in (manifest.description, manifest.affinity, manifest.utterances):
        assert {"it", "en"} <= set(table)
        assert all(table[lang] for lang in ("it", "en"))
    for lang in ("it", "en"):
        assert len(manifest.utterances[lang]) >= 2
        assert len(manifest.affinity[lang]) >= 3
        assert len(manifest.description[lang]) >= 60
        for spec in list(manifest.inputs.values()) + list(manifest.outputs.values()):
            assert spec.description[lang].strip()
    if manifest.side_effects:  # a low-risk change runs without asking: it must be undoable
        assert manifest.risk != "low" or manifest.reversible
        # or the host acts on its result, or it changes the account's mailbox (recorded)
        assert manifest.sandbox.write or manifest.effect or manifest.account
    else:
        assert not manifest.sandbox.write


def test_every_manifest_chooses_a_reversal_the_runner_and_the_undo_know() -> None:
    """`Manifest.reversal` names one of the kinds `metnos.faces.wiring.FEATURES` registers (their
    order: tests/gateway/test_runtime.py): a mail move its mailbox, a reminder its effect, a
    file change its files."""
    chosen = {folder.name: parse_manifest(folder / MANIFEST_FILE).reversal for folder in FOLDERS}
    assert set(chosen.values()) <= {EFFECT, MAILBOX, REMOTE, FILES}
    assert chosen["move_messages"] == "mailbox"
    assert chosen["reminder_set"] == chosen["schedule_set"] == "effect"
    assert chosen["fs_write"] == chosen["fs_delete"] == "files"


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_lang_state_matches_manifest(folder: Path) -> None:
    manifest = parse_manifest(folder / MANIFEST_FILE)
    state = read_lang_state(folder)
    assert set(state) == set(manifest.description)
    for lang, entry in state.items():
        assert set(entry) == set(FIELDS)
        assert entry["version_hash"] == lang_version_hash(manifest, lang), lang
        if entry["source_lang"] is None:
            assert entry["source_hash"] is None
    assert stale_languages(manifest, state) == []


def test_editing_the_source_makes_others_stale() -> None:
    folder = REPO_EXECUTORS / "fs_read"
    manifest = parse_manifest(folder / MANIFEST_FILE)
    state = read_lang_state(folder)
    edited = manifest.model_copy(
        update={"description": {**manifest.description, "it": "Legge un file."}}
    )
    assert stale_languages(edited, state) == ["en"]  # it is the source: en follows it
    retro = manifest.model_copy(
        update={"description": {**manifest.description, "en": "Reads a file."}}
    )
    assert stale_languages(retro, state) == ["it"]  # latest wins: en is the source now
    whitespace_only = manifest.model_copy(
        update={
            "description": {
                **manifest.description,
                "it": "  " + manifest.description["it"].replace(" ", "  "),
            }
        }
    )
    assert stale_languages(whitespace_only, state) == []


def _intents(specs: list[ToolSpec], lang: str) -> Intents:
    """What an embedded planner builds from tool specs: slot lists plus wildcard inputs."""
    lists: dict[str, dict[str, object]] = {}
    data = {}
    for spec in specs:
        data[spec.name] = {"data": [{"sentences": list(spec.utterances)}]}
        for slot, values in spec.slot_values.items():
            lists[slot] = {"values": [{"in": k, "out": v} for k, v in values.items()]}
        for name in spec.parameters["properties"]:
            lists.setdefault(name, {"wildcard": True})
    return Intents.from_dict({"language": lang, "intents": data, "lists": lists})


UTTERANCES = [
    ("it", "cerca i file markdown nel workspace", "fs_find", {"pattern": "*.md"}),
    ("en", "find the markdown files in the workspace", "fs_find", {"pattern": "*.md"}),
    ("it", "elenca i file", "fs_find", {}),
    ("en", "list the files", "fs_find", {}),
    ("it", "trova i file di testo in note", "fs_find", {"pattern": "*.txt", "path": "note"}),
    ("en", "find the pdf files in notes", "fs_find", {"pattern": "*.pdf", "path": "notes"}),
    ("it", "leggi il file note/spesa.md", "fs_read", {"path": "note/spesa.md"}),
    ("en", "read the file notes/todo.md", "fs_read", {"path": "notes/todo.md"}),
    (
        "it",
        "aggiungi latte al file spesa.md",
        "fs_write",
        {"mode": "append", "content": "latte", "path": "spesa.md"},
    ),
    ("en", "write hello to notes/a.md", "fs_write", {"content": "hello", "path": "notes/a.md"}),
    ("it", "rinomina a.md in b.md", "fs_move", {"src": "a.md", "dst": "b.md"}),
    ("en", "move a.md to archive/a.md", "fs_move", {"src": "a.md", "dst": "archive/a.md"}),
]


@pytest.mark.parametrize(("lang", "text", "tool", "args"), UTTERANCES)
def test_utterances_match(lang: str, text: str, tool: str, args: dict[str, str]) -> None:
    specs = [parse_manifest(folder / MANIFEST_FILE).tool_spec(lang) for folder in FOLDERS]
    result = recognize_best(text, _intents(specs, lang))
    assert result is not None, text
    assert result.intent.name == tool
    assert {k: v.value for k, v in result.entities.items()} == args
