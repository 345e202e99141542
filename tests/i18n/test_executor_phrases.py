"""Every executor speaks a family's words (issue 27, point 6): a progress phrase, a done and a
denied sentence and what a person asks of it, in every shipped language, from the i18n layer
(`i18n/<lang>/phrases.toml`), with a generic fallback that never shows an executor's name."""

from __future__ import annotations

import re
import string
import tomllib

import pytest

from metnos.ground.i18n import phrases
from metnos.ground.paths import resources_path

RESOURCES = resources_path()
EXECUTORS = sorted(p.parent.name for p in (RESOURCES / "executors").glob("*/manifest.toml"))
LANGUAGES = sorted(p.name for p in (RESOURCES / "i18n").iterdir()
                   if p.is_dir() and any(p.glob("*.toml")))
TOOL_SYNTAX = re.compile(r"\b[a-z]+_[a-z_]+\(|\b[a-z_]+=\"")


def _catalog(lang: str) -> dict[str, object]:
    merged: dict[str, object] = {}
    for path in sorted((RESOURCES / "i18n" / lang).glob("*.toml")):
        with path.open("rb") as fh:
            merged.update(tomllib.load(fh))
    return merged


def _inputs(name: str) -> set[str]:
    with (RESOURCES / "executors" / name / "manifest.toml").open("rb") as fh:
        manifest = tomllib.load(fh)
    return set(manifest.get("inputs", {})) | set(manifest.get("outputs", {}))


def test_the_walk_finds_the_executors_and_the_languages() -> None:
    assert {"fs_delete", "fs_find", "lists", "web_fetch"} <= set(EXECUTORS)
    assert {"en", "it"} <= set(LANGUAGES)


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("name", EXECUTORS)
def test_every_executor_has_its_phrases_in_every_language(name: str, lang: str) -> None:
    catalog = _catalog(lang)
    for kind in phrases.KINDS:
        text = catalog.get(phrases.key(kind, name))
        assert isinstance(text, str) and text.strip(), f"{phrases.key(kind, name)} in {lang}"
        assert name not in text and not TOOL_SYNTAX.search(text), text
        fields = {f for _, f, _, _ in string.Formatter().parse(text) if f}
        if kind in ("PROGRESS", "ASK"):  # a status line never carries outside text
            assert not fields, f"{phrases.key(kind, name)} takes no values: {fields}"
        else:  # each value is one the step has (an argument or a result)
            assert fields <= _inputs(name), f"{phrases.key(kind, name)}: {fields}"


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_generic_phrases_exist_in_every_language(lang: str) -> None:
    catalog = _catalog(lang)
    for kind in phrases.KINDS:
        assert isinstance(catalog.get(phrases.key(kind, "GENERIC")), str)


def test_a_new_executor_gets_the_generic_words_never_its_name() -> None:
    for lang in ("en", "it"):
        for text in (phrases.progress("brand_new_tool", lang),
                     phrases.done("brand_new_tool", {"path": "a.md"}, lang),
                     phrases.denied("brand_new_tool", {"path": "a.md"}, lang),
                     phrases.asked("brand_new_tool", lang)):
            assert "brand_new_tool" not in text and "path" not in text and text.strip()


def test_the_denied_sentence_names_the_file_in_plain_words() -> None:
    assert phrases.denied("fs_delete", {"path": "compiti.md"}, "en") == (
        "You said no: I did not delete compiti.md. Nothing changed.")
    assert phrases.denied("fs_delete", {"path": "compiti.md"}, "it") == (
        "Hai detto di no: non ho eliminato compiti.md. Non è cambiato nulla.")
    # a value it needs is missing: the generic sentence, not a hole or a placeholder
    assert phrases.denied("fs_delete", {}, "en") == phrases.phrase("DENIED", "GENERIC", {}, "en")
    assert phrases.progress("fs_find", "it") == "Sto cercando i file…"
    assert phrases.progress("fs_find", "en") == "Looking for your files…"


def test_a_variant_by_action_and_values_quoted_on_one_line() -> None:
    said = phrases.done("lists", {"action": "add", "list": "spesa", "items": ["latte", "pane"]},
                        "it")
    assert said == "Ho aggiunto latte, pane alla lista spesa."
    long = phrases.denied("fs_write", {"path": "a\nb" + "x" * 200}, "en")
    assert "\n" not in long and "…" in long and len(long) < 200
