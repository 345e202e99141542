"""Source identity on the real docs/ folder (and the seed's four-row table, in it and en):
a published document's name, path or address binds; a user's file, an outside path and an
operative intent on a known document go to the loop; ambiguity stops without a guess."""

from __future__ import annotations

import pytest

from metnos.features.tutor.catalog import DocEntry
from metnos.features.tutor.classify import Classifier
from metnos.features.tutor.identity import (
    Ambiguous,
    Bound,
    UserPath,
    docs_from_folder,
    resolve,
    route,
)
from metnos.ground.paths import resources_path

DOCS = docs_from_folder(resources_path("docs"))


def bound(text: str, lang: str, docs: list[DocEntry] = DOCS) -> str:
    identity = resolve(text, docs, lang)
    assert isinstance(identity, Bound), identity
    assert identity.matched in text
    return identity.doc.source


def test_the_real_docs_folder_lists_both_languages() -> None:
    sources = {d.source for d in DOCS}
    assert {"docs/it/visita-guidata.md", "docs/en/quick-tour.md", "docs/it/memoria.md"} <= sources
    memoria = next(d for d in DOCS if d.source == "docs/it/memoria.md")
    assert (memoria.name, memoria.rel_path, memoria.url) == ("memoria.md", "memoria.md",
                                                             "/docs/it/memoria")


# The seed's table, with the project's doc names: (request, lang, route, identity kind).
SEED = [
    ("Che cosa contiene visita-guidata.md?", "it", "tutor", Bound),
    ("Riassumi docs/it/visita-guidata.md", "it", "tutor", Bound),
    ("Cancella visita-guidata.md", "it", "loop", Bound),
    ("Che cosa contiene appunti_privati.md?", "it", "loop", UserPath),
    ("What does quick-tour.md contain?", "en", "tutor", Bound),
    ("Summarise docs/en/quick-tour.md", "en", "tutor", Bound),
    ("Delete quick-tour.md", "en", "loop", Bound),
    ("What does private_notes.md contain?", "en", "loop", UserPath),
]


@pytest.mark.parametrize(("text", "lang", "target", "kind"), SEED)
def test_the_seed_table(classifier: Classifier, text: str, lang: str, target: str,
                        kind: type) -> None:
    result = route(text, DOCS, lang, classifier)
    assert isinstance(result.identity, kind)
    assert result.target == target
    if isinstance(result.identity, Bound):
        assert result.identity.doc.name in {"visita-guidata.md", "quick-tour.md"}


@pytest.mark.parametrize(("text", "lang", "source"), [
    ("che cosa dice MEMORIA.MD?", "it", "docs/it/memoria.md"),
    ("riassumi ./docs/it/memoria.md per favore", "it", "docs/it/memoria.md"),
    ("apri /docs/it/memoria", "it", "docs/it/memoria.md"),
    ("open /docs/en/memory#settings", "en", "docs/en/memory.md"),
    ("what is in Quick-Tour?", "en", "docs/en/quick-tour.md"),
    ("spiegami «visita-guidata»", "it", "docs/it/visita-guidata.md"),
    ("what does memory.md say?", "it", "docs/en/memory.md"),  # its name, whatever the session
])
def test_a_name_path_or_address_binds(text: str, lang: str, source: str) -> None:
    assert bound(text, lang) == source


@pytest.mark.parametrize("text", [
    "come funziona la memoria?",          # a bare word is not a document name
    "what is a file?",                     # the word "file" alone is no signal
    "mostrami il file",
    "che cosa contiene il file?",
    "what changed in version 0.2.1?",      # a number is not a file name
])
def test_no_signal_no_binding(text: str) -> None:
    assert resolve(text, DOCS, "it") is None


@pytest.mark.parametrize("text", [
    "riassumi /tmp/memoria.md",
    r"leggi C:\Users\anna\memoria.md",
    "what does ~/quick-tour.md contain?",
    "open ../docs/en/memory.md",
    "summarise /home/anna/docs/it/memoria.md",
])
def test_an_outside_path_stays_a_user_path(classifier: Classifier, text: str) -> None:
    identity = resolve(text, DOCS, "it")
    assert isinstance(identity, UserPath) and identity.path in text
    assert route(text, DOCS, "it", classifier).target == "loop"


@pytest.mark.parametrize(("text", "lang", "target"), [
    # an operation on a known document goes to the loop
    ("Sposta memoria.md in archivio", "it", "loop"),
    ("elimina sicurezza.md per favore", "it", "loop"),
    ("copy security.md to my desktop", "en", "loop"),
    ("remove docs/en/memory.md", "en", "loop"),
    # a question on a known document is the Tutor's
    ("che cosa dice memoria.md sul synt?", "it", "tutor"),
    ("what does memory.md say about the ager?", "en", "tutor"),
    ("spiegami «visita-guidata»", "it", "tutor"),
])
def test_a_known_document_goes_where_the_intent_says(classifier: Classifier, text: str,
                                                     lang: str, target: str) -> None:
    result = route(text, DOCS, lang, classifier)
    assert isinstance(result.identity, Bound) and result.target == target


def test_an_unknown_name_is_a_user_file() -> None:
    identity = resolve("Che cosa contiene appunti_privati.md?", DOCS, "it")
    assert identity == UserPath("appunti_privati.md")


def twin(lang: str) -> DocEntry:
    return DocEntry(f"docs/{lang}/telegram.md", lang, "telegram.md", "telegram.md",
                    f"/docs/{lang}/telegram", "Telegram")


def test_the_session_language_resolves_translations_with_one_name() -> None:
    docs = DOCS + [twin("en"), twin("it")]
    assert bound("che cosa dice telegram.md?", "it", docs) == "docs/it/telegram.md"
    assert bound("what does telegram.md say?", "en", docs) == "docs/en/telegram.md"
    assert bound("what does docs/en/telegram.md say?", "it", docs) == "docs/en/telegram.md"


def test_a_language_without_the_page_reads_its_english_one() -> None:
    docs = DOCS + [twin("en"), twin("it")]
    assert bound("que dit telegram.md ?", "fr", docs) == "docs/en/telegram.md"
    identity = resolve("que dit telegram.md ?", [twin("it"), twin("de")], "fr")
    assert isinstance(identity, Ambiguous)  # no English one either: no guess
    assert [d.source for d in identity.candidates] == ["docs/de/telegram.md", "docs/it/telegram.md"]


def test_ambiguity_stops_without_a_guess(classifier: Classifier) -> None:
    two = resolve("compare memoria.md and sicurezza.md", DOCS, "it")
    assert isinstance(two, Ambiguous) and len(two.candidates) == 2
    assert route("compare memoria.md and sicurezza.md", DOCS, "it", classifier).target == "ask"
