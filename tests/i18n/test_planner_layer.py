"""The embedded planner's words as a layer (issue 16): each executor's sentences, phrases and
argument descriptions, checked with hassil before anyone reviews them, served to a language
the manifest lacks from `planner/<lang>/`, and written into the manifest (to be signed again)
only for a language it has."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

from metnos.features.languages.layer_planner import PlannerLayer, check_planner, manifest_words
from metnos.features.languages.resources import Candidate
from metnos.ground.paths import resources_path
from metnos.mechanisms.executors.registry import _tool_spec, discover_all
from metnos.mechanisms.llm.embedded import misunderstood, plan_embedded
from tests.i18n.conftest import Instance

LISTS = tomllib.loads((resources_path("executors") / "lists" / "manifest.toml").read_text())
DELETE = tomllib.loads((resources_path("executors") / "fs_delete" / "manifest.toml").read_text())


def french_delete() -> dict[str, object]:
    return {"utterances": ["(supprime|efface) [le fichier|le dossier] {path}"], "slots": {},
            "inputs": {"path": "Le fichier ou le dossier à supprimer, relatif au workspace."}}


def problems(source: dict[str, object], candidate: dict[str, object],
             *others: dict[str, object]) -> list[str]:
    return [p.check for p in check_planner(source, candidate, [source, *others]) if p.enforced]


def test_a_good_translation_passes_and_a_broken_one_is_named() -> None:
    en, it = manifest_words(DELETE, "en"), manifest_words(DELETE, "it")
    assert problems(en, french_delete(), it) == []
    renamed = {**french_delete(), "utterances": ["(supprime|efface) le fichier {chemin}"]}
    assert problems(en, renamed) == ["utterances"]  # {chemin} is no input
    unbalanced = {**french_delete(), "utterances": ["(supprime|efface le fichier {path}"]}
    assert problems(en, unbalanced) == ["utterances"]
    lost = {**french_delete(), "utterances": ["vide la corbeille"]}
    assert problems(en, lost) == ["utterances"]  # nothing fills `path` any more
    undescribed = {**french_delete(), "inputs": {}}
    assert problems(en, undescribed) == ["inputs"]
    assert problems(en, en) == ["unchanged"]


def test_slot_values_every_language_shares_stay_those_of_the_source() -> None:
    en, it = manifest_words(LISTS, "en"), manifest_words(LISTS, "it")
    french = {**en, "utterances": [u.replace("the", "la") for u in en["utterances"]],
              "slots": {**en["slots"], "add_verb": {"ajoute": "add", "mets": "add"}}}
    assert problems(en, french, it) == []
    french["slots"] = {**french["slots"], "add_verb": {"ajoute": "append"}}
    assert problems(en, french, it) == ["slots"]  # "add" is what every language says
    french["slots"] = {**french["slots"], "add_verb": {"ajoute": "add"},
                       "list_name": {"courses": "courses"}}  # a list is one list in every
    assert problems(en, french, it) == ["slots"]  # language: "courses" is not a list's id
    french["slots"] = {**french["slots"], "list_name": {"courses": "shopping"}}
    assert problems(en, french, it) == []


def test_sentences_are_understood_from_their_own_examples() -> None:
    assert misunderstood(["(supprime|efface) [le fichier] {path}"], {}, 8) == []
    slots = {"verb": {"ajoute": "add", "mets": "add"}}
    assert misunderstood(["{verb:action} {items} (à|dans) la liste"], slots, 8) == []
    [(template, _)] = misunderstood(["(supprime {path}"], {}, 8)
    assert template == "(supprime {path}"


def test_a_language_the_manifest_lacks_is_served_from_the_planner_folder(
        instance: Instance) -> None:
    layer = PlannerLayer(instance.root, [instance.root / "executors"], ["en", "it", "fr"], "en")
    en = layer.text("fs_delete", "en")
    assert layer.text("fs_delete", "fr") is None
    layer.put_candidate("fs_delete", "fr", Candidate(french_delete(), "en", "h", "test"))
    assert layer.promote("fs_delete", "fr", french_delete()) == []  # no signature to redo
    assert layer.text("fs_delete", "fr") == french_delete()
    assert (instance.root / "planner" / "fr" / "fs_delete.json").is_file()
    assert en is not None and layer.text("fs_delete", "en") == en

    specs, _ = discover_all([instance.root / "executors"])
    [delete] = [s.manifest for s in specs if s.name == "fs_delete"]
    tool = _tool_spec(delete, "fr")
    assert tool.utterances == tuple(french_delete()["utterances"])  # type: ignore[arg-type]
    assert tool.parameters["properties"]["path"]["description"].startswith("Le fichier")
    plan = plan_embedded("efface le fichier notes.md", "fr", [tool])
    assert [(s.executor, s.args) for s in plan.steps] == [("fs_delete", {"path": "notes.md"})]


def test_a_language_the_manifest_has_is_written_into_it_to_be_signed_again(
        tmp_path: Path) -> None:
    folder = tmp_path / "executors" / "fs_delete"
    shutil.copytree(resources_path("executors") / "fs_delete", folder)
    layer = PlannerLayer(tmp_path, [tmp_path / "executors"], ["en", "it"], "en")
    italian = {"utterances": ["(elimina|cancella) [il file] {path}"], "slots": {},
               "inputs": {"path": "Il file da eliminare."}}
    assert layer.promote("fs_delete", "it", italian) == ["manifest_resign:fs_delete"]
    written = tomllib.loads((folder / "manifest.toml").read_text(encoding="utf-8"))
    assert manifest_words(written, "it") == italian
    assert manifest_words(written, "en") == manifest_words(DELETE, "en")  # the rest kept
