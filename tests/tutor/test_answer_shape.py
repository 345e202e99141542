"""The shape of the Tutor's extractive answer (issue 27, point 1), on the real docs: it starts
at a sentence (never mid-sentence, never a line of a code block), shows no raw timestamp and no
link to a docs file that leads nowhere in a chat, and carries the command the section names."""

from __future__ import annotations

import re

import pytest

from metnos.features.tutor import compose
from metnos.features.tutor.catalog import Hit, Section
from metnos.features.tutor.sections import doc_sections
from metnos.features.tutor.views import Marker, render
from metnos.ground.paths import resources_path

ISO = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2})?")
RELATIVE = re.compile(r"\]\((?!https?://|/)")  # a docs file's own link: nowhere in a chat


@pytest.fixture(scope="module")
def sections() -> list[Section]:
    return list(doc_sections(resources_path("docs")))


def _quoted(answer: compose.Answer) -> list[str]:
    """The answer's paragraphs before its sources line, without the language notice."""
    body = answer.text.rsplit("\n\n", 1)[0]
    return [p for p in body.split("\n\n") if p.strip()]


def _starts_a_sentence(text: str) -> bool:
    if text.startswith("- "):
        return True  # a list item, quoted as an item
    first = text.lstrip("*_>( \n")[:1]
    return first.isupper() or first.isdigit() or first in "`\"'«“$/["


@pytest.mark.parametrize("question", ["how does this work?", "come funziona?"])
def test_every_section_is_quoted_from_a_sentence_without_timestamps(
        sections: list[Section], question: str) -> None:
    bad = []
    for section in sections:
        answer = compose.extractive(question, section.lang, [Hit(section, 0.6)])
        for part in _quoted(answer):
            if not _starts_a_sentence(part) or ISO.search(part) or RELATIVE.search(part):
                bad.append((section.id, part[:80]))
    assert bad == []


def _section(sections: list[Section], lang: str, anchor_url: str) -> Section:
    return next(s for s in sections if s.lang == lang and s.url == anchor_url)


@pytest.mark.parametrize(("lang", "url", "question", "command"), [
    ("en", "/docs/en/languages#adding-a-language", "how would I teach Metnos Spanish?",
     "metnos-prompts add-language"),
    ("it", "/docs/it/lingue#aggiungere-una-lingua", "come insegno lo spagnolo a Metnos?",
     "metnos-prompts add-language"),
    ("en", "/docs/en/security#undo", "how do I undo a change?", "metnos undo"),
    ("it", "/docs/it/sicurezza#annullare", "come faccio a tornare indietro dopo una modifica?",
     "metnos undo"),
])
def test_the_answer_carries_the_command_the_section_names(
        sections: list[Section], lang: str, url: str, question: str, command: str) -> None:
    answer = compose.extractive(question, lang, [Hit(_section(sections, lang, url), 0.6)])
    assert answer.outcome == "answered"
    assert command in answer.text, answer.text


@pytest.mark.parametrize("lang", ["en", "it"])
def test_an_observations_time_is_said_in_words_not_as_a_timestamp(lang: str) -> None:
    marker = Marker("TUTOR_SCHEDULER_IS", {"state_key": "TUTOR_SCHEDULER_RUNNING",
                                           "time": "2026-12-06T11:40:02+00:00"})
    said = render(marker, lang)
    assert not ISO.search(said) and "T11" not in said, said
    assert re.search(r"\d{1,2}[:.]\d{2}", said), said  # the time is still there, readable
