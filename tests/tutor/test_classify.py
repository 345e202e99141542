"""The Tutor's request classifier with the real multilingual embedder: the target of the
question decides, not the verb; mixed requests keep their operative clause verbatim; the
prototypes are data per language, with English as the fallback."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from metnos.features.tutor.classify import (
    CLASSES,
    INTENTS_DIR,
    Classifier,
    decide,
    intents_path,
    load_intents,
    split_clauses,
)
from metnos.features.tutor.identity import route
from tests.tutor.support import MIXED


@pytest.mark.parametrize(("text", "lang", "label"), [
    ("mostrami la pagina Servizi", "it", "explanation"),
    ("show me the approvals page", "en", "explanation"),
    ("mostrami i file nella mia cartella", "it", "action"),
    ("show me the files in my folder", "en", "action"),
    ("why does the scheduler look stopped?", "en", "observation"),
    ("perché lo scheduler sembra fermo?", "it", "observation"),
])
def test_the_target_decides_not_the_verb(classifier: Classifier, text: str, lang: str,
                                         label: str) -> None:
    assert classifier.classify(text, lang).label == label


@pytest.mark.parametrize(("text", "lang"), [
    ("Controlla se c'è posta metnos", "it"),
    ("check if there is metnos mail", "en"),
    ("Cancella note.md", "it"),
])
def test_mail_and_files_are_never_the_tutors(classifier: Classifier, text: str,
                                             lang: str) -> None:
    result = classifier.classify(text, lang)
    assert result.label in ("action", "unclear")  # both go to the loop
    assert route(text, [], lang, classifier).target == "loop"


@pytest.mark.parametrize(("text", "lang", "explained", "operative"), MIXED)
def test_mixed_keeps_the_operative_clause_verbatim(classifier: Classifier, text: str, lang: str,
                                                   explained: str, operative: str) -> None:
    result = classifier.classify(text, lang)
    assert result.label == "mixed"
    assert result.operative == operative and result.operative in text
    assert result.explained == explained and result.explained in text


def test_two_explanations_are_not_mixed(classifier: Classifier) -> None:
    result = classifier.classify("what is the synt? and how does the ager work?", "en")
    assert result.label == "explanation" and result.operative is None
    assert len(result.clauses) == 2


def test_clauses_are_verbatim_substrings() -> None:
    text = "Spiegami l'annullamento E POI annulla la modifica di ieri; grazie"
    clauses = split_clauses(text, "it")
    assert clauses == ["Spiegami l'annullamento", "annulla la modifica di ieri", "grazie"]
    assert all(c in text for c in clauses)
    assert split_clauses("what is memory.md?", "en") == ["what is memory.md"]
    assert split_clauses("nothing to split here", "en") == ["nothing to split here"]
    assert split_clauses("the thenar muscle", "en") == ["the thenar muscle"]  # word boundary


def test_a_language_without_a_file_uses_english(classifier: Classifier) -> None:
    assert intents_path("fr") == INTENTS_DIR / "en.toml"
    assert load_intents("fr").lang == "en"
    assert split_clauses("explique and then delete notes.md", "fr") == [
        "explique", "delete notes.md"]
    assert classifier.classify("zeige mir die Dateien in meinem Ordner", "de").label == "action"


def test_every_language_file_has_every_class() -> None:
    files = sorted(INTENTS_DIR.glob("*.toml"))
    assert {f.stem for f in files} >= {"en", "it"}
    for path in files:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        assert data["separators"], path
        for name in CLASSES:
            assert len(data["prototypes"][name]) >= 10, (path, name)
        assert data["document"]["explanation"] and data["document"]["action"], path


def test_close_or_weak_scores_are_unclear() -> None:
    assert decide({"explanation": 0.2, "observation": 0.1, "action": 0.15}) == "unclear"
    assert decide({"explanation": 0.60, "observation": 0.59, "action": 0.1}) == "unclear"
    # action must beat explanation by the wider margin: explanation never becomes action
    assert decide({"explanation": 0.50, "observation": 0.1, "action": 0.56}) == "unclear"
    assert decide({"explanation": 0.30, "observation": 0.1, "action": 0.56}) == "action"
    assert decide({"explanation": 0.56, "observation": 0.1, "action": 0.50}) == "explanation"


def test_no_python_holds_language_words() -> None:
    source = (Path(__file__).resolve().parents[2] / "metnos/features/tutor/classify.py").read_text()
    for word in ("e poi", "and then", "mostrami", "spiegami"):
        assert f'"{word}"' not in source
