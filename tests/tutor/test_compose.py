"""The Tutor's composition (issue 14, point 4) on the real docs: the extractive answer cites
the section it quotes, prefers the asker's language, frames an English-only source in the
asker's words; a model answer that brings in a command, path or number the sources do not
have is discarded for the extractive one (flagged); failures and gaps are said plainly."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from metnos.features.tutor import compose
from metnos.features.tutor.catalog import Hit, Section
from metnos.features.tutor.sections import doc_sections
from metnos.ground.paths import resources_path
from metnos.ground.settings import LLMSettings
from metnos.mechanisms.llm.port import LLMPort
from metnos.testing.llm_server import ScriptedLLM

MNESTOMA_EN = "/docs/en/memory#what-it-remembers-the-mnestoma"
MNESTOMA_IT = "/docs/it/memoria#cosa-ricorda-il-mnestoma"


@pytest.fixture(scope="module")
def sections() -> list[Section]:
    return list(doc_sections(resources_path("docs")))


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        yield server


def _port(server: ScriptedLLM) -> LLMPort:
    return LLMPort(LLMSettings(model="openai/scripted", api_base=server.api_base,
                               api_key="sk-test", timeout_s=5.0, max_attempts=1),
                   wait_initial_s=0.01, wait_max_s=0.02)


def _flat(text: str) -> str:
    return " ".join(text.split())


def _at(sections: list[Section], url: str) -> Section:
    return next(s for s in sections if s.url == url)


def _hits(sections: list[Section], *urls: str, score: float = 0.6) -> list[Hit]:
    return [Hit(_at(sections, u), score - n * 0.05) for n, u in enumerate(urls)]


def test_extractive_quotes_and_cites_the_section(sections: list[Section]) -> None:
    hits = _hits(sections, MNESTOMA_EN)
    answer = compose.extractive("What is the mnestoma, what does it remember?", "en", hits)
    assert answer.outcome == "answered" and answer.composer == "extractive"
    assert answer.citations == [(hits[0].section.title, MNESTOMA_EN)]
    assert "mnestoma" in answer.text and f"]({MNESTOMA_EN})" in answer.text
    assert answer.text.rstrip().splitlines()[-1].startswith("Sources: [")
    body = answer.text.split("\n\nSources:")[0].split("\n\nThe command:")[0]
    body, source = _flat(body), _flat(hits[0].section.text)
    pieces = re.split(r"(?<=[.!?:])\s+", body)
    assert len(pieces) >= 2 and all(p in source for p in pieces), body  # nothing of its own


def test_italian_asker_gets_the_italian_twin(sections: list[Section]) -> None:
    answer = compose.extractive("cos'è il mnestoma?", "it", _hits(sections, MNESTOMA_EN),
                                translations=sections)
    assert [url for _, url in answer.citations] == [MNESTOMA_IT]
    assert "Fonti: [" in answer.text and "La documentazione in" not in answer.text


def test_english_only_source_framed_in_italian(sections: list[Section]) -> None:
    only_en = [s for s in sections if s.lang == "en" and s.url == MNESTOMA_EN]
    answer = compose.extractive("cos'è il mnestoma?", "it", _hits(sections, MNESTOMA_EN),
                                translations=only_en)
    assert answer.text.startswith("La documentazione in inglese dice:")
    assert answer.citations[0][1] == MNESTOMA_EN and "Fonti: [" in answer.text


def test_below_the_threshold_a_gap_with_the_nearest_pages(sections: list[Section]) -> None:
    hits = _hits(sections, MNESTOMA_EN, score=compose.GAP_BELOW - 0.1)
    answer = compose.extractive("quanto costa un caffè?", "it", hits)
    assert answer.outcome == "gap" and answer.text.startswith("La documentazione che ho")
    assert answer.citations == [(hits[0].section.title, MNESTOMA_EN)]
    assert compose.extractive("?", "en", []).outcome == "gap"


@pytest.mark.parametrize("invented", [
    "Run `metnos wipe` to make it forget everything.",
    "Type metnos wipe and it forgets.",
    "Open /admin/reset in the web chat to clear it.",
    "It keeps 30 days of mnests.",
    "Set [memory] forget_after to clear it.",
    "The tool fs_wipe clears it.",
])
async def test_model_inventions_are_discarded_for_the_extractive_answer(
        sections: list[Section], llm: ScriptedLLM, invented: str) -> None:
    hits = _hits(sections, MNESTOMA_EN)
    llm.enqueue_text(f"The mnestoma is a weighted graph kept in the database. {invented}")
    answer = await compose.with_model(_port(llm), "how do I clear the mnestoma?", "en", hits,
                                      executors=["fs_read", "notify"])
    assert answer.composer == "extractive" and answer.unattested, answer
    assert "wipe" not in answer.text and "/admin" not in answer.text
    assert answer.text == compose.extractive("how do I clear the mnestoma?", "en", hits).text
    assert answer.citations == [(hits[0].section.title, MNESTOMA_EN)]


async def test_attested_model_answer_in_italian_from_an_english_source(
        sections: list[Section], llm: ScriptedLLM) -> None:
    only_en = _hits(sections, MNESTOMA_EN)
    llm.enqueue_text("Il mnestoma è un grafo pesato nel database: `metnos mnestoma show` lo "
                     "mostra, e la chat web lo disegna in /mnestoma.")
    answer = await compose.with_model(_port(llm), "cos'è il mnestoma?", "it", only_en)
    assert answer.composer == "llm" and answer.unattested == () and answer.outcome == "answered"
    assert answer.text.startswith("Il mnestoma") and "Fonti: [" in answer.text
    sent = llm.requests[-1]["messages"][0]["content"]
    assert "in italiano" in sent and "<untrusted-data" in sent
    assert "weighted graph kept in the database" in sent  # the section's text, as data


async def test_a_failed_model_is_unavailable_in_the_askers_language(
        sections: list[Section], llm: ScriptedLLM) -> None:
    llm.enqueue_error(500)
    answer = await compose.with_model(_port(llm), "cos'è il mnestoma?", "it",
                                      _hits(sections, MNESTOMA_EN))
    assert answer.outcome == "unavailable" and answer.text.startswith("Ora non posso")
    assert answer.citations == []


def test_unattested_terms() -> None:
    sources = ["Run `metnos login` and open /mnestoma; [tutor] composer is 2 by default "
               "(tutor.window_s), fs_read reads."]
    assert compose.unattested("Run metnos login, open /mnestoma, [tutor] composer, 2, "
                              "tutor.window_s, fs_read.", sources, ["fs_read"]) == ()
    assert set(compose.unattested("Use metnos logout and /mnestoma/x, 3 times, fs_move.",
                                  sources, ["fs_move"])) == {
        "metnos logout", "/mnestoma/x", "3", "fs_move"}
