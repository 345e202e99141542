"""The Tutor's retrieval: cosine and BM25 fused by reciprocal rank (SPEC §10).

Why both: the embedder reads meaning across languages but blurs names ("undo", "approvals",
a setting key); BM25 reads the names exactly but not paraphrases. Their scores are not
comparable, so their ranks are fused (RRF, Cormack et al. 2009, k = 60). Measured on the
evaluation set (bench/tutor_eval.py): recall@3 rises from cosine alone to above the 0.9 target.

Admissibility stays a matter of meaning: a hit keeps its cosine score, which the pre-check's
floor and the composer's gap threshold read; the fusion decides the order, among cosine's first
`DEPTH` and BM25's first `LEXICAL_EXTRA` (the embedder, weaker in Italian, can miss a section
whose very title the question quotes). The bench and the turn call this one function,
so the figure is the product's.

An executor's whole contract outranks the description of one of its arguments (issue 14,
Build 1): when both are found, the contract takes the first of their places.
"""

from __future__ import annotations

import numpy as np

from metnos.features.tutor.catalog import EVERYONE, Catalog, Hit

DEPTH = 30  # how deep each ranked list is read before fusion
LEXICAL_EXTRA = 3  # BM25's best, taken even when cosine ranks them lower than DEPTH
RRF_K = 60
# Cosine below this: the section is not about the question. Measured with bench/tutor_eval.py
# (USE v3, 2026-12-02): recall@3 after admission 0.756 at 0.30, 0.890 at 0.20, 0.927 at 0.15.
# It can be low because questions about the world ("how do I bake bread?") are the
# classifier's to send to the loop (its `elsewhere` prototypes: 16 of 16 such questions of
# the evaluation set left "unclear"), not this floor's.
ADMIT_FLOOR = 0.15


def retrieve(catalog: Catalog, query: str, vector: np.ndarray | None = None, *, k: int = 8,
             sources: set[str] | None = None,
             audience: set[str] | frozenset[str] = EVERYONE) -> list[Hit]:
    """The `k` best sections for `query` (its embedding `vector`, when the caller has it),
    in fused order, each with its cosine score; the lexical index alone when the catalog has
    no model to serve."""
    if vector is None:
        vector = catalog.query_vector(query)
    if vector is None:
        return contract_first(catalog.search_lexical(query, k=DEPTH, sources=sources,
                                                     audience=audience))[:k]
    cosine = catalog.search(vector, k=len(catalog.sections), sources=sources, audience=audience)
    lexical = catalog.search_lexical(query, k=DEPTH, sources=sources, audience=audience)
    return contract_first(fuse(cosine, lexical))[:k]


def admitted(hits: list[Hit], *, bound: bool = False) -> list[Hit]:
    """The hits the Tutor may answer from: over the floor, or any hit of the document the
    request named (`bound`: the name alone says what it is about)."""
    return [h for h in hits if bound or h.score >= ADMIT_FLOOR]


def _key(hit: Hit) -> str:
    return hit.section.id + "@" + hit.section.lang


def fuse(cosine: list[Hit], lexical: list[Hit], k0: int = RRF_K) -> list[Hit]:
    """The candidates (cosine's first DEPTH, BM25's first LEXICAL_EXTRA) in the order of
    their reciprocal rank fusion (ranks are added, not scores), each with its cosine score.
    `cosine` ranks every admissible section, so each candidate has its cosine rank."""
    cosine_rank = {_key(h): n for n, h in enumerate(cosine)}
    by_key = {_key(h): h for h in cosine}
    candidates = [*cosine[:DEPTH], *(by_key[_key(h)] for h in lexical[:LEXICAL_EXTRA]
                                     if _key(h) in by_key and cosine_rank[_key(h)] >= DEPTH)]
    fused = {_key(h): 1 / (k0 + cosine_rank[_key(h)] + 1) for h in candidates}
    for n, hit in enumerate(lexical):
        if _key(hit) in fused:
            fused[_key(hit)] += 1 / (k0 + n + 1)
    return sorted(candidates, key=lambda h: -fused[_key(h)])


def contract_first(hits: list[Hit]) -> list[Hit]:
    """An executor's contract before its own arguments' descriptions: where an argument
    section precedes its contract, the contract moves up to the argument's place."""
    out = list(hits)
    for hit in hits:
        if hit.section.kind != "contract":
            continue
        at = out.index(hit)
        first = next((n for n, h in enumerate(out[:at]) if h.section.kind == "argument"
                      and h.section.source == hit.section.source
                      and h.section.lang == hit.section.lang), None)
        if first is not None:
            out.insert(first, out.pop(at))
    return out
