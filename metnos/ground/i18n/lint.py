"""`i18n_lint_text` (SPEC §9.8): does a user-facing text speak the expected language?

Read-only and advisory: it never translates, never mutates, never authorises anything. Code,
commands, paths, URLs, IDs and placeholders are masked first (replaced by spaces, so offsets
still point into the original text): without that an Italian reply holding a bash block reads
as English (notes/i18n_tutor.md §3b). The prose left is cut into sentences, each detected with
lingua restricted to a few candidate languages (the measured best: 27/27 on short snippets),
and scored as the share of prose letters in the expected language: >= 0.8 pass, else warn.
`invalid` is only for bad input (too large, a bad language tag or limit), never for language.
Short or ambiguous text ("ok", "grazie") passes.

This module imports only the standard library and `lingua`: the sandboxed `i18n_lint`
executor binds it read-only as `metnos_ground_i18n_lint` (a test parses its imports).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any, Literal

from lingua import IsoCode639_1, IsoCode639_3, Language, LanguageDetector, LanguageDetectorBuilder

Decision = Literal["pass", "warn", "invalid"]

DEFAULT_LANGUAGES = ("it", "en", "pt", "es", "fr", "de")
DEFAULT_MAX_TEXT_CHARS = 12000
HARD_MAX_TEXT_CHARS = 100_000  # the largest `max_text_chars` a caller may ask for
DETECT_MAX_CHARS = 20_000  # detect_language reads at most this much of a (masked) text
MIN_PROSE_LETTERS = 20  # below this much prose: pass, reason "too_short"
MIN_SEGMENT_LETTERS = 15  # shorter sentences are merged with the next one
MIN_CONFIDENCE = 0.6  # a segment's top language below this is ambiguous
MIN_MARGIN = 0.2  # ... and so is one whose top two languages are closer than this
PASS_SHARE = 0.8
WARN_SHARE = 0.4
MAX_SPANS = 20
EXCERPT_CHARS = 80
_TAG_RE = re.compile(r"^([A-Za-z]{2,3})(?:[-_][A-Za-z0-9]{1,8})*$")
_ALIASES = {"iw": "he", "in": "id", "ji": "yi", "jw": "jv", "no": "nb"}


@dataclass(frozen=True, slots=True)
class Span:
    """A stretch of prose in another language: offsets into the original text."""

    start: int
    end: int
    text: str  # an excerpt of at most EXCERPT_CHARS characters
    language: str
    confidence: float


@dataclass(frozen=True, slots=True)
class LintResult:
    """The verdict. `share` is None when nothing could be measured (too short, invalid)."""

    decision: Decision
    expected: str
    detected: str | None
    share: float | None
    spans: tuple[Span, ...] = ()
    reason: str = "ok"
    authorization: str = "none"
    dispatch_allowed: bool = False
    mutation_allowed: bool = False

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["spans"] = [asdict(span) for span in self.spans]
        return data


# -- masking ---------------------------------------------------------------------------------
_FENCE_RE = re.compile(r"^[ \t]*(`{3,}|~{3,})[^\n]*\n(?:.*?\n)??[ \t]*\1[^\n]*$|"
                       r"^[ \t]*(?:`{3,}|~{3,})[^\n]*(?:\n.*)?\Z", re.M | re.S)
_MASKS = tuple(re.compile(p, re.M) for p in (
    r"`[^`\n]+`",  # inline code
    r"^[ \t]*\$[ \t].*$",  # "$ command" lines
    r"^[ \t]*#[ \t]+[a-z][\w.-]*(?:[ \t].*)?$",  # "# command" (a heading starts upper-case)
    r"\b[A-Za-z][A-Za-z0-9+.-]*://\S+|\bwww\.\S+|\bmailto:\S+|[\w.+-]+@[\w-]+(?:\.[\w-]+)+",
    r"\{\{.*?\}\}|\{%.*?%\}|\{[^{}\n]{0,80}\}|%\([A-Za-z_]\w*\)[sdfr]|%[sd]",  # placeholders
    r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b",
    r"\b(?=[0-9a-fA-F]*\d)(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{7,}\b",  # hashes
    r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b|\b[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b",  # ids
    r"(?:\b[A-Za-z]:)?(?:~|\.{1,2})?(?:[\\/][\w.@%+~-]+)+[\\/]?|\b[\w.-]+(?:/[\w.@%+~-]+)+/?",
    r"(?<![\w-])--?[A-Za-z][\w-]*(?:=\S+)?",  # command-line options
    r"\b[A-Z][A-Z0-9]+s?\b",  # acronyms (IMAP, TLS, PDFs): no language's evidence
    # Metnos's own commands in running text ("metnos proposals accept {id}"): the program,
    # at most two subcommand words, then its arguments
    r"\bmetnos(?:-[a-z]+)?(?:[ \t]+[a-z][\w-]*){1,2}(?:[ \t]+(?:\{[^{}\n]*\}|\d+|--?[\w-]+))*",
    r"(?<![\w.])\.[A-Za-z][\w.-]*|\b[\w-]+(?:\.[\w-]+)*\.(?:md|txt|py|toml|json|ya?ml|sh|j2"
    r"|js|ts|html?|css|csv|pdf|log|conf|cfg|ini|sql|xml|png|jpe?g|gif|svg|zip|gz|tar|lock"
    r"|rs|go|c|h|cpp|java|rb|php|env|service|timer|docx?|xlsx?|odt|ods|minisig|pub)\b",
))


def _blank(match: re.Match[str]) -> str:
    return re.sub(r"[^\n]", " ", match.group(0))


def mask(text: str) -> str:
    """`text` with code, commands, paths, URLs, IDs and placeholders replaced by spaces.

    Same length, newlines kept: an offset into the result is an offset into `text`.
    """
    masked = _FENCE_RE.sub(_blank, text)
    for pattern in _MASKS:
        masked = pattern.sub(_blank, masked)
    return masked


# -- languages and detectors -----------------------------------------------------------------
def language_code(tag: str) -> str | None:
    """The base code lingua knows for a BCP-47 tag (`pt-BR` → `pt`), None when it knows none."""
    match = _TAG_RE.match(tag.strip()) if isinstance(tag, str) else None
    if match is None:
        return None
    base = _ALIASES.get(match.group(1).lower(), match.group(1).lower())
    language = _language(base)
    return None if language is None else language.iso_code_639_1.name.lower()


def _language(base: str) -> Language | None:
    try:
        if len(base) == 2:
            return Language.from_iso_code_639_1(IsoCode639_1.from_str(base))
        return Language.from_iso_code_639_3(IsoCode639_3.from_str(base))
    except ValueError:
        return None


@lru_cache(maxsize=16)
def _detector(codes: frozenset[str]) -> LanguageDetector:
    """A detector for these base codes (cached: lingua loads its models on first use)."""
    languages = [lang for code in sorted(codes) if (lang := _language(code)) is not None]
    if len(languages) == 1:  # lingua needs two; a lone candidate is compared with English
        languages.append(Language.ENGLISH if languages[0] != Language.ENGLISH else Language.ITALIAN)
    return LanguageDetectorBuilder.from_languages(*languages).build()


def _candidates(expected: str, languages: tuple[str, ...] | list[str] | None) -> frozenset[str]:
    """expected + the candidate languages, as base codes; ValueError names a bad tag."""
    codes = {expected}
    for tag in DEFAULT_LANGUAGES if languages is None else languages:
        code = language_code(tag)
        if code is None:
            raise ValueError(tag)
        codes.add(code)
    return frozenset(codes)


def _classify(detector: LanguageDetector, text: str) -> tuple[str | None, float]:
    """The clear top language of `text` and its confidence; (None, top) when ambiguous."""
    values = detector.compute_language_confidence_values(" ".join(text.split()))
    if not values:
        return None, 0.0
    top = values[0]
    second = values[1].value if len(values) > 1 else 0.0
    code = top.language.iso_code_639_1.name.lower()
    if top.value < MIN_CONFIDENCE or top.value - second < MIN_MARGIN:
        return None, round(top.value, 3)
    return code, round(top.value, 3)


def _letters(text: str) -> int:
    return sum(1 for ch in text if ch.isalpha())


def detect_language(
    text: str, candidates: tuple[str, ...] | list[str] = DEFAULT_LANGUAGES,
    min_letters: int = MIN_PROSE_LETTERS,
) -> tuple[str | None, float]:
    """The language of `text` (masked first) among `candidates`, as a base code, with lingua's
    confidence; None when the prose is too short (under `min_letters` letters) or no language
    clearly wins (then the float is the top confidence, 0.0 for too short). Raises ValueError
    for a tag lingua does not know.
    """
    codes = set()
    for tag in candidates:
        code = language_code(tag)
        if code is None:
            raise ValueError(f"unknown language: {tag!r}")
        codes.add(code)
    prose = mask(text[:DETECT_MAX_CHARS])
    if _letters(prose) < min_letters or not codes:
        return None, 0.0
    return _classify(_detector(frozenset(codes)), prose)


def warm_up(languages: tuple[str, ...] | list[str] = DEFAULT_LANGUAGES) -> None:
    """Load the models of `languages` now (about a second), not on a user's first lint."""
    detect_language("Questo testo serve solo a caricare i modelli. This one too.", languages)


# -- the lint --------------------------------------------------------------------------------
_SEGMENT_RE = re.compile(r"[^\n.!?;]+[.!?;]*")


def _segments(masked: str) -> list[tuple[int, int, int]]:
    """Sentences/lines of the masked text as (start, end, letters); short ones are merged
    into the next (the last into the previous), since a few words say little."""
    out: list[tuple[int, int, int]] = []
    pending: tuple[int, int, int] | None = None
    for match in _SEGMENT_RE.finditer(masked):
        letters = _letters(match.group(0))
        if letters == 0:
            continue
        start, end = match.start(), match.end()
        if pending is not None:
            start, letters = pending[0], letters + pending[2]
            pending = None
        if letters < MIN_SEGMENT_LETTERS:
            pending = (start, end, letters)
            continue
        out.append((start, end, letters))
    if pending is not None:
        if out:
            last = out.pop()
            pending = (last[0], pending[1], last[2] + pending[2])
        out.append(pending)
    return out


def _excerpt(text: str, start: int, end: int) -> str:
    excerpt = " ".join(text[start:end].split())
    if len(excerpt) > EXCERPT_CHARS:
        excerpt = excerpt[: EXCERPT_CHARS - 1].rstrip() + "…"
    return excerpt


def _span(text: str, masked: str, start: int, end: int, lang: str, conf: float) -> Span:
    """A span trimmed to its non-blank extent, with a short excerpt of the original."""
    chunk = masked[start:end]
    start += len(chunk) - len(chunk.lstrip())
    end -= len(chunk) - len(chunk.rstrip())
    return Span(start, end, _excerpt(text, start, end), lang, conf)


def _merge(spans: list[Span], text: str) -> list[Span]:
    """Adjacent spans of the same language as one (a foreign paragraph is one finding)."""
    merged: list[Span] = []
    for span in spans:
        prev = merged[-1] if merged else None
        if prev is not None and prev.language == span.language and (
            not text[prev.end : span.start].strip(" \t\n.!?;")
        ):
            excerpt = _excerpt(text, prev.start, span.end)
            conf = max(prev.confidence, span.confidence)
            merged[-1] = Span(prev.start, span.end, excerpt, span.language, conf)
        else:
            merged.append(span)
    return merged


def _invalid(expected: str, reason: str) -> LintResult:
    return LintResult("invalid", str(expected)[:35], None, None, reason=reason)


def _check_input(text: object, expected: object, limit: object) -> str | None:
    """The reason the input is invalid, or None."""
    if not isinstance(text, str):
        return "text_invalid"
    if not isinstance(expected, str) or language_code(expected) is None:
        return "language_invalid"
    if isinstance(limit, bool) or not isinstance(limit, int):
        return "limit_invalid"
    if not 1 <= limit <= HARD_MAX_TEXT_CHARS:
        return "limit_invalid"
    return "too_large" if len(text) > limit else None


def i18n_lint_text(
    text: str,
    expected_language: str,
    max_text_chars: int = DEFAULT_MAX_TEXT_CHARS,
    *,
    languages: tuple[str, ...] | list[str] | None = None,
) -> LintResult:
    """Lint `text` against `expected_language` (a BCP-47 tag); `languages` are the other
    candidates (default: it, en, pt, es, fr, de; pass the active languages to restrict)."""
    reason = _check_input(text, expected_language, max_text_chars)
    if reason is not None:
        return _invalid(expected_language, reason)
    expected = language_code(expected_language) or ""
    try:
        codes = _candidates(expected, languages)
    except ValueError:
        return _invalid(expected_language, "language_invalid")
    masked = mask(text)
    if _letters(masked) < MIN_PROSE_LETTERS:
        return LintResult("pass", expected, None, None, reason="too_short")
    return _score(text, masked, expected, _detector(codes))


def _score(text: str, masked: str, expected: str, detector: LanguageDetector) -> LintResult:
    by_lang: dict[str, int] = {}
    spans: list[Span] = []
    for start, end, letters in _segments(masked):
        lang, conf = _classify(detector, masked[start:end])
        if lang is None:
            continue  # ambiguous: counts for nobody
        by_lang[lang] = by_lang.get(lang, 0) + letters
        if lang != expected:
            spans.append(_span(text, masked, start, end, lang, conf))
    scored = sum(by_lang.values())
    if scored == 0:
        return LintResult("pass", expected, None, None, reason="ambiguous")
    detected = max(sorted(by_lang), key=lambda code: by_lang[code])
    share = round(by_lang.get(expected, 0) / scored, 3)
    found = tuple(_merge(spans, text)[:MAX_SPANS])
    if share >= PASS_SHARE:
        return LintResult("pass", expected, detected, share, found, reason="ok")
    reason = "mixed" if share >= WARN_SHARE else "unexpected_language"
    return LintResult("warn", expected, detected, share, found, reason=reason)
