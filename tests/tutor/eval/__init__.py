"""The Tutor's evaluation set (`<lang>.toml` here, and the held-out `<lang>.heldout.toml`,
never read while tuning) and the run shared by bench/tutor_eval.py and
tests/tutor/test_eval.py: retrieval recall@3 and MRR on the real compiled catalog, and the
classification confusion matrix with the explanation->action count (must be 0)."""

from __future__ import annotations

import time
import tomllib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from metnos.features.tutor.catalog import Catalog, Hit
from metnos.features.tutor.classify import LABELS, Classifier
from metnos.features.tutor.compose import GAP_BELOW
from metnos.features.tutor.identity import Bound, resolve
from metnos.features.tutor.retrieval import DEPTH, admitted, retrieve

EVAL_DIR = Path(__file__).resolve().parent
LANGS = ("it", "en")
K = 3


@dataclass(frozen=True)
class Question:
    lang: str
    text: str
    expected: tuple[str, ...]  # empty: "none"
    label: str
    held_out: bool = False


PARTS = ("tuning", "heldout")


@dataclass
class Report:
    questions: list[Question] = field(default_factory=list)
    predicted: list[str] = field(default_factory=list)
    ranks: list[int | None] = field(default_factory=list)  # retrieval rank, 1-based, per question
    semantic: list[int | None] = field(default_factory=list)  # the same, cosine alone
    best: list[float | None] = field(default_factory=list)  # best admitted cosine (gap check)
    seconds: float = 0.0

    def confusion(self) -> Counter[tuple[str, str]]:
        return Counter((q.label, p) for q, p in zip(self.questions, self.predicted, strict=True))

    def explanation_as_action(self) -> list[Question]:
        return [q for q, p in zip(self.questions, self.predicted, strict=True)
                if q.label == "explanation" and p == "action"]

    def action_swallowed(self) -> list[Question]:
        return [q for q, p in zip(self.questions, self.predicted, strict=True)
                if q.label in ("action", "mixed") and p in ("explanation", "observation")]

    def retrieval(self, semantic: bool = False) -> list[int | None]:
        ranks = self.semantic if semantic else self.ranks
        return [r for q, r in zip(self.questions, ranks, strict=True) if q.expected]

    def recall(self, semantic: bool = False) -> float:
        ranks = self.retrieval(semantic)
        return sum(r is not None and r <= K for r in ranks) / len(ranks) if ranks else 0.0

    def mrr(self, semantic: bool = False) -> float:
        ranks = self.retrieval(semantic)
        return sum(1 / r for r in ranks if r) / len(ranks) if ranks else 0.0

    def answered(self) -> float | None:
        """Questions with an expected section answered from it: found in the top 3 and the
        best admitted section over the composer's gap threshold (else a declared gap)."""
        rows = [(r, b) for q, r, b in zip(self.questions, self.ranks, self.best, strict=True)
                if q.expected]
        if not rows or all(b is None for _, b in rows):
            return None
        return sum(r is not None and r <= K and b is not None and b >= GAP_BELOW
                   for r, b in rows) / len(rows)

    def accuracy(self) -> float:
        right = sum(q.label == p for q, p in zip(self.questions, self.predicted, strict=True))
        return right / len(self.questions) if self.questions else 0.0

    def ms_per_query(self) -> float:
        return 1000 * self.seconds / len(self.questions) if self.questions else 0.0


def load(lang: str, parts: tuple[str, ...] = PARTS) -> list[Question]:
    """The questions of `lang`: the tuning set (`<lang>.toml`) and the held-out one."""
    out = []
    for part in parts:
        name = f"{lang}.toml" if part == "tuning" else f"{lang}.{part}.toml"
        data = tomllib.loads((EVAL_DIR / name).read_text(encoding="utf-8"))
        for row in data["q"]:
            expected = row["expected"]
            ids = () if expected == "none" else tuple(expected)
            out.append(Question(lang, row["text"], ids, row["class"], part != "tuning"))
    return out


def base_id(section_id: str) -> str:
    """A chunk's section id: "docs/en/memory.md#settings/2" -> "docs/en/memory.md#settings"."""
    source, _, anchor = section_id.partition("#")
    return f"{source}#{anchor.split('/', 1)[0]}"


def rank(catalog: Catalog, question: Question, hits: list[Hit]) -> int | None:
    """1-based rank of the first hit on an expected section (or its translation), None if none;
    hits of another language are skipped (the Tutor answers from the asker's language)."""
    wanted = set(question.expected)
    concepts = {s.concept for s in catalog.sections if base_id(s.id) in wanted}
    seen: list[str] = []
    for hit in hits:
        key = base_id(hit.section.id)
        if hit.section.lang != question.lang or key in seen:
            continue  # chunks of one section count once
        seen.append(key)
        if key in wanted or hit.section.source in wanted or hit.section.concept in concepts:
            return len(seen)
    return None


def run(classifier: Classifier, catalog: Catalog | None,
        langs: tuple[str, ...] = LANGS, parts: tuple[str, ...] = PARTS) -> Report:
    report = Report()
    started = time.perf_counter()
    for lang in langs:
        for q in load(lang, parts):
            report.questions.append(q)
            result = classifier.classify(q.text, lang)
            report.predicted.append(result.label)
            if catalog is not None and q.expected:
                query = result.explained or q.text  # mixed: the clause to explain is searched
                identity = resolve(q.text, catalog.documents(), lang)
                sources = {identity.doc.source} if isinstance(identity, Bound) else None
                vector = classifier.embedder.encode([query])[0]
                cosine = catalog.search(vector, k=DEPTH, sources=sources)
                report.semantic.append(rank(catalog, q, cosine))
                hits = admitted(retrieve(catalog, query, vector, k=DEPTH, sources=sources),
                                bound=bool(sources))
                report.ranks.append(rank(catalog, q, hits))  # the Tutor's own ranking
                report.best.append(max((h.score for h in hits), default=None))
            else:
                report.semantic.append(None)
                report.ranks.append(None)
                report.best.append(None)
    report.seconds = time.perf_counter() - started
    return report


def matrix_lines(report: Report) -> list[str]:
    confusion = report.confusion()
    head = "expected \\ got".ljust(16) + "".join(label[:11].rjust(12) for label in LABELS)
    lines = [head]
    for truth in LABELS:
        row = [confusion[(truth, got)] for got in LABELS]
        if sum(row):
            lines.append(truth.ljust(16) + "".join(str(n).rjust(12) for n in row))
    return lines
