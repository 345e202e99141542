"""The Tutor's composition (issue 14, point 4): the answer from the admitted sections only,
in the asker's language, citing each section it used with its web chat link.

Two composers. `extractive` (no model): the sentences of the best sections that match the
question best, taken from a same-concept section in the asker's language when there is one,
else quoted from the source under the asker's own wording. `llm`: the model is given only
the sections' text, as untrusted data, and the answer's language; its answer is then checked
(`unattested`): every executor name, web path, setting key, `metnos` command and number in it
must appear in the sources, else it is discarded for the extractive answer and the discarded
terms are returned for the audit. Sections below GAP_BELOW → a declared gap; a composer
failure → a plain "unavailable".
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from metnos.features.tutor.catalog import Hit, Section
from metnos.features.tutor.embedder import Embedder
from metnos.features.tutor.quote import Unit, command, units
from metnos.ground import i18n
from metnos.ground.errors import LLMError, MetnosError
from metnos.mechanisms import prompts
from metnos.mechanisms.llm.port import LLMPort
from metnos.mechanisms.policy.untrusted import wrap_untrusted

log = logging.getLogger(__name__)

# The best admitted section below this: the docs do not answer (a declared gap). Measured with
# bench/tutor_eval.py: every question whose expected section was found had a best admitted
# cosine of 0.219 or more (0.35 turned a third of the right answers into gaps).
GAP_BELOW = 0.20
MAX_SECTIONS = 3      # sections an answer may rest on
MAX_SENTENCES = 3     # sentences the extractive answer quotes
# A section far below the best one is cited by the model's answer, not quoted by the extractive
# one: its best words are some other matter's ("the Prefect server" under an undo question).
RELATED_WITHIN = 0.12
ROLE = "tutor_compose"

_WORD = re.compile(r"\w{3,}")
# what an answer may not bring in unless a source says it
_CHECKS = {
    "code": re.compile(r"`[^`\n]+`"),
    "command": re.compile(r"\bmetnos\s+[a-z][a-z0-9_-]*"),
    "path": re.compile(r"(?<![\w.:/])/[A-Za-z0-9_\-.{}]+(?:/[A-Za-z0-9_\-.{}#]*)*"),
    "setting": re.compile(r"\[[a-z_][a-z0-9_.]*\]\s*`?[a-z_][a-z0-9_]*"),
    "dotted": re.compile(r"\b[a-z_][a-z0-9_]+(?:\.[a-z_][a-z0-9_]+)+\b"),
    "identifier": re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b"),
    "number": re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*"),
}


@dataclass(frozen=True)
class Answer:
    text: str
    citations: list[tuple[str, str]] = field(default_factory=list)  # (title, url)
    outcome: str = "answered"       # "answered" | "gap" | "unavailable"
    composer: str = "extractive"    # who wrote `text`: "extractive" | "llm"
    unattested: tuple[str, ...] = ()  # what a discarded model answer brought in: audit it
    cost_usd: float | None = None   # the model call's cost, when one answered (the budget's)
    model: str = ""                 # the model that answered, when one did


def extractive(question: str, lang: str, hits: Sequence[Hit], *,
               translations: Sequence[Section] = (), observed: str | None = None,
               embedder: Embedder | None = None) -> Answer:
    """The best-matching sentences of the top sections, cited. `translations`: sections the
    asker may see (e.g. the catalog's), searched for a same-concept one in `lang`."""
    top = max((h.score for h in hits), default=0.0)
    chosen = chosen_sections([h for h in hits if h.score >= top - RELATED_WITHIN], lang,
                             translations)
    if not chosen and observed is None:
        return gap(lang, hits)
    if chosen and observed is None and max(h.score for h in hits) < GAP_BELOW:
        return gap(lang, hits)
    parts = [observed] if observed else []
    picked = _best_sentences(question, chosen, embedder)
    for n, section in enumerate(chosen):
        mine = [u for owner, u in picked if owner is section]
        if not mine:
            continue
        quote = _join(mine)
        if n == 0:
            quote = _with_command(quote, section, mine, lang)
        if section.lang != lang:
            quote = i18n.get("TUTOR_ANSWER_IN_LANGUAGE", lang,
                             language=i18n.display_name(section.lang, lang)) + "\n\n" + quote
        parts.append(quote)
    used = [s for s in chosen if any(owner is s for owner, _ in picked)]
    return _with_sources("\n\n".join(parts), lang, used, "extractive")


def gap(lang: str, hits: Sequence[Hit]) -> Answer:
    nearest = _distinct([h.section for h in hits])[:MAX_SECTIONS]
    return _with_sources(i18n.get("TUTOR_ANSWER_GAP", lang), lang, nearest, "extractive",
                         outcome="gap")


def unavailable(lang: str) -> Answer:
    return Answer(i18n.get("TUTOR_ANSWER_UNAVAILABLE", lang), [], "unavailable")


async def with_model(port: LLMPort, question: str, lang: str, hits: Sequence[Hit], *,
                     tier: str = "fast", translations: Sequence[Section] = (),
                     observed: str | None = None, embedder: Embedder | None = None,
                     executors: Iterable[str] = ()) -> Answer:
    """The model's answer from the sections' text only, if every term it uses is attested;
    else the extractive answer, with what was discarded in `unattested`."""
    fallback = extractive(question, lang, hits, translations=translations,
                          observed=observed, embedder=embedder)
    if fallback.outcome == "gap":
        return fallback
    chosen = chosen_sections(hits, lang, translations)
    try:
        reply = await port.complete(
            [{"role": "user", "content": prompt(question, lang, chosen, observed)}], tier=tier)
    except (LLMError, MetnosError) as exc:
        log.warning("tutor.compose_llm_failed key=%s", getattr(exc, "key", type(exc).__name__))
        return unavailable(lang)
    cost, model = reply.cost_usd, reply.model or ""
    text = (reply.text or "").strip()
    if not text:
        return replace(fallback, unattested=("<empty>",), cost_usd=cost, model=model)
    sources = [s.text for s in chosen] + [s.title for s in chosen] + [observed or ""]
    bad = unattested(text, sources, executors)
    if bad:
        log.warning("tutor.compose_unattested terms=%s", list(bad)[:10])
        return replace(fallback, unattested=bad, cost_usd=cost, model=model)
    return replace(_with_sources(text, lang, chosen, "llm"), cost_usd=cost, model=model)


def prompt(question: str, lang: str, sections: Sequence[Section], observed: str | None) -> str:
    return prompts.get(
        ROLE, lang, language=i18n.display_name(lang, lang),
        question=wrap_untrusted(question, source="question"),
        sections=[{"n": n, "title": s.title, "text": wrap_untrusted(s.text, source="docs")}
                  for n, s in enumerate(sections, 1)],
        observed=wrap_untrusted(observed, source="observation") if observed else "")


def unattested(answer: str, sources: Iterable[str], executors: Iterable[str] = ()) -> tuple[
        str, ...]:
    """The terms of `answer` (inline code, executor names, web paths, setting keys,
    dotted names, `metnos` commands, numbers) that no source contains."""
    corpus = _flat(" ".join(sources))
    found: list[str] = []
    terms = [m.group(0) for check in _CHECKS.values() for m in check.finditer(answer)]
    terms += [name for name in executors
              if re.search(rf"\b{re.escape(name)}\b", answer)]
    for term in terms:
        clean = _flat(term).rstrip(".,;:)")
        if clean and clean not in corpus and clean not in found:
            found.append(clean)
    return tuple(found)


def chosen_sections(hits: Sequence[Hit], lang: str,
                    translations: Sequence[Section] = ()) -> list[Section]:
    """The top sections in the retriever's order (`metnos.features.tutor.retrieval`: fused, not by
    cosine alone), each replaced by its same-concept twin in `lang` when one exists."""
    ranked = list(hits)
    pool = [h.section for h in ranked] + list(translations)
    out: list[Section] = []
    for hit in ranked:
        section = hit.section
        if section.lang != lang:
            twin = next((s for s in pool if s.lang == lang and s.concept == section.concept
                         and s.audience == section.audience), None)
            section = twin or section
        out.append(section)
    return _distinct(out)[:MAX_SECTIONS]


def _distinct(sections: Sequence[Section]) -> list[Section]:
    seen: set[str] = set()
    out: list[Section] = []
    for s in sections:
        if s.concept not in seen:
            seen.add(s.concept)
            out.append(s)
    return out


def _best_sentences(question: str, sections: Sequence[Section],
                    embedder: Embedder | None) -> list[tuple[Section, Unit]]:
    """Up to MAX_SENTENCES (section, unit), best first by match, in the text's order."""
    candidates = [(n, i, s, unit) for n, s in enumerate(sections)
                  for i, unit in enumerate(units(s.text))]
    if not candidates:
        return []
    if embedder is not None:
        vectors = embedder.encode([question] + [c[3].text for c in candidates])
        scores = list(np.asarray(vectors[1:] @ vectors[0], dtype=float))
    else:
        words = set(_WORD.findall(question.lower()))
        scores = [len(words & set(_WORD.findall(c[3].text.lower())))
                  / (1 + 0.01 * len(c[3].text)) for c in candidates]
    # the top section always speaks: its best sentence first, then the best of the rest
    order = sorted(range(len(candidates)), key=lambda k: (candidates[k][0] != 0, -scores[k]))
    keep = sorted(order[:1] + sorted(order[1:], key=lambda k: -scores[k])[:MAX_SENTENCES - 1],
                  key=lambda k: (candidates[k][0], candidates[k][1]))
    return [(candidates[k][2], candidates[k][3]) for k in keep]


def _join(picked: Sequence[Unit]) -> str:
    """Sentences run on; a list item stands on its own line."""
    lines: list[str] = []
    for unit in picked:
        if unit.item:
            lines.append(f"- {unit.text}")
        elif lines and not lines[-1].startswith("- "):
            lines[-1] += f" {unit.text}"
        else:
            lines.append(unit.text)
    return "\n".join(lines)


def _with_command(quote: str, section: Section, picked: Sequence[Unit], lang: str) -> str:
    """The first command the section names, when the quote lacks it: the section's sentence
    that names it (in the text's order), else the command itself (from a code block)."""
    cmd = command(section.text)
    if cmd is None or cmd in quote:
        return quote
    every = units(section.text)
    said = next((u for u in every if cmd in u.text), None)
    if said is not None:
        return _join([u for u in every if u in picked or u == said])
    return f"{quote}\n\n{i18n.get('TUTOR_ANSWER_COMMAND', lang, command=f'`{cmd}`')}"


def _with_sources(text: str, lang: str, used: Sequence[Section], composer: str, *,
                  outcome: str = "answered") -> Answer:
    citations = [(s.title, s.url) for s in used]
    if citations:
        links = ", ".join(f"[{title}]({url})" for title, url in citations)
        text = f"{text}\n\n{i18n.get('TUTOR_ANSWER_SOURCES', lang, links=links)}"
    return Answer(text, citations, outcome, composer)


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("`", "")).strip()
