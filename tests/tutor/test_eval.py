"""The evaluation set (tests/tutor/eval/<lang>.toml and the held-out <lang>.heldout.toml) on the
real compiled catalog and the real embedder: recall@3 >= 0.9 on the product path, on the whole
set and on the held-out questions alone, and no explanation ever classified as an action, no
action or mixed request swallowed as an explanation. bench/tutor_eval.py prints the full figures."""

from __future__ import annotations

import pytest

from metnos.features.tutor.catalog import open_catalog
from metnos.features.tutor.classify import LABELS, Classifier
from metnos.features.tutor.compile import compile_catalog
from metnos.features.tutor.sections import all_sections
from tests.tutor.eval import LANGS, Report, base_id, load, run

RECALL = 0.9  # issue 27: restored (was 0.87 since issue 15), with questions asked as people ask


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Report:
    home = tmp_path_factory.mktemp("tutor_eval")
    classifier = Classifier()
    compile_catalog(home, embedder=classifier.embedder)
    return run(classifier, open_catalog(home))


@pytest.fixture(scope="module")
def held_out(report: Report) -> Report:
    out = Report()
    for n, q in enumerate(report.questions):
        if q.held_out:
            out.questions.append(q)
            out.predicted.append(report.predicted[n])
            out.ranks.append(report.ranks[n])
            out.semantic.append(report.semantic[n])
            out.best.append(report.best[n])
    return out


def test_the_set_is_large_and_covers_every_kind() -> None:
    for lang in LANGS:
        questions = load(lang)
        assert len(questions) >= 80
        assert sum(q.held_out for q in questions) >= 12
        assert {q.label for q in questions} >= {"explanation", "observation", "action", "mixed"}
        assert {q.label for q in questions} <= set(LABELS)


def test_every_expected_section_exists() -> None:
    sections = all_sections()
    ids = {base_id(s.id) for s in sections} | {s.source for s in sections}
    for lang in LANGS:
        for q in load(lang):
            assert all(expected in ids for expected in q.expected), q
            assert all(e.startswith((f"docs/{lang}/", "executors/")) for e in q.expected), q


def test_recall_at_3(report: Report) -> None:
    assert report.recall() >= RECALL, report.recall()  # the Tutor's own retrieval and admission
    assert report.answered() == report.recall()  # no found section falls under the gap
    assert report.mrr() > 0.8
    # cosine alone (not the product's path): a floor that catches an embedder regression
    assert report.recall(semantic=True) >= 0.85, report.recall(semantic=True)


def test_recall_at_3_on_the_held_out_questions(held_out: Report) -> None:
    # never read while tuning the docs' phrasings: the figure that says it generalises
    assert len(held_out.retrieval()) >= 24
    assert held_out.recall() >= RECALL, held_out.recall()


def test_no_explanation_becomes_an_action(report: Report) -> None:
    assert report.explanation_as_action() == []
    assert report.action_swallowed() == []
