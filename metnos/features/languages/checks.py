"""Checks on a translation candidate before anyone reviews it (issue 4 §5, SPEC §9).

The ideas are Weblate's quality checks (placeholders, unnamed placeholders, unchanged
translation, newlines and whitespace, control and zero-width characters, end punctuation,
double spaces, repeated words); the code is ours (Weblate is GPL). Each function returns
a list of `Problem`s, [] when everything holds; `enforced` problems reject the candidate
(it never leaves `_pending` / the candidate row), the others are warnings for the reviewer.

- `check_message` — layer 3: `{name}` strings and CLDR plural tables;
- `check_prompt` — layer 1: Jinja templates (parse, skeleton, no new constructs);
- `check_prose` — layer 2: an executor description (str) or its affinity keywords (list);
- `check_document` — a workspace document (markdown): headings, numbered items, code kept;
- `check_lexicon` — word data (TOML): it parses and keeps the keys that are structure.
"""

from __future__ import annotations

import re
import string
import tomllib
from collections.abc import Iterable, Mapping
from typing import Any

from metnos.ground.i18n import skeleton as sk
from metnos.ground.i18n.skeleton import Problem, PromptTemplateError
from metnos.ground.i18n.textnorm import ZERO_WIDTH, normalise

__all__ = ["BRAND_WORDS", "CHECKS", "PLURAL_CATEGORIES", "Problem", "check_document",
           "check_lexicon", "check_message", "check_prompt", "check_prose", "check_text",
           "describe", "description_key", "enforced", "has_prose", "placeholders"]

Message = str | Mapping[str, str]
PLURAL_CATEGORIES = frozenset({"zero", "one", "two", "few", "many", "other"})
BRAND_WORDS = frozenset({"metnos"})
MAX_KEYWORD_CHARS = 30

_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f" + ZERO_WIDTH + "]")
_DOUBLE_SPACE = re.compile(r"\S {2,}\S")
_DUPLICATE = re.compile(r"\b(\w+)\s+\1\b", re.IGNORECASE)
_JINJA = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", re.DOTALL)
_CODE = re.compile(r"`[^`]*`")
_FIELD = re.compile(r"\{[^{}]*\}")
_WORD = re.compile(r"[^\W\d_]+")
# trailing punctuation classes, Latin and CJK/full-width forms
_ENDINGS = (("ellipsis", ("…", "...", "⋯")), ("stop", (".", "。", "．")),
            ("exclamation", ("!", "！")), ("question", ("?", "？")), ("colon", (":", "：")))


def enforced(problems: Iterable[Problem]) -> list[Problem]:
    """The problems that reject a candidate."""
    return [p for p in problems if p.enforced]


def placeholders(text: str) -> set[str]:
    """The `{name}` fields of a format string (`{a.b}` stays `a.b`; `{}` is the empty name).
    ValueError when the braces do not balance."""
    return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}


def check_text(source: str, candidate: str) -> list[Problem]:
    """Every string check of a candidate against its source."""
    problems = _placeholder_problems(source, candidate)
    problems += _control(candidate)
    problems += _whitespace(source, candidate)
    problems += _unchanged(source, candidate)
    problems += _warnings(source, candidate)
    return problems


def check_message(source: Message, candidate: Message) -> list[Problem]:
    """A layer-3 message: a string or a plural table `{category: text}` (`other` required)."""
    if isinstance(candidate, str):
        if not isinstance(source, str):
            return [Problem("plural_forms", "the source has plural forms; give a table with "
                            "at least `other`")]
        return check_text(source, candidate)
    problems = _plural_table_problems(candidate)
    if problems:
        return problems
    other = source if isinstance(source, str) else source.get("other", "")
    for form, text in candidate.items():
        found = _form_problems(other, _ref(source, form, other), text, form == "other")
        problems += [Problem(p.check, f"[{form}] {p.detail}", p.enforced) for p in found]
    refs = {form: _ref(source, form, other) for form in candidate}
    if all(_same(refs[f], t) for f, t in candidate.items()) and any(
            _needs_translation(r) for r in refs.values()):
        problems.append(Problem("unchanged", "every form is identical to the source"))
    return problems


def check_prompt(source: str, candidate: str) -> list[Problem]:
    """A layer-1 template: it parses, keeps the source's skeleton, adds no tag kind, filter,
    test or template of its own, is translated, and carries no control characters."""
    try:
        want = sk.skeleton(source)
    except PromptTemplateError as exc:
        return [Problem("prompt_source_parse", str(exc.vars.get("detail", exc)))]
    try:
        got = sk.skeleton(candidate)
    except PromptTemplateError as exc:
        return [Problem("prompt_parse", str(exc.vars.get("detail", exc))), *_control(candidate)]
    problems = sk.compare(want, got)
    new = [f"tag {k}" for k in sorted(sk.tag_kinds(got) - sk.tag_kinds(want))]
    new += [f"filter {f}" for f in sorted(got.filters - want.filters)]
    new += [f"test {t}" for t in sorted(got.tests - want.tests)]
    new += [f"template {t}" for t in sorted(got.templates - want.templates)]
    if new:
        problems.append(Problem("prompt_new_construct", "not in the source: " + ", ".join(new)))
    if normalise(source) == normalise(candidate):
        problems.append(Problem("unchanged", "the candidate is identical to the source"))
    return problems + _control(candidate)


_TAG = re.compile(r"<[^<>]*>")


def has_prose(template: str) -> bool:
    """Whether a template holds words outside its Jinja constructs and HTML tags."""
    return _WORD.search(_TAG.sub(" ", _JINJA.sub(" ", template))) is not None


_HEADING = re.compile(r"^#{1,6}\s", re.M)
_NUMBERED = re.compile(r"^\s*\d+[.)]\s", re.M)


def check_document(source: str, candidate: str) -> list[Problem]:
    """A markdown document: the same headings and numbered items (the code counts the aims of
    TELOS.md), every code span and placeholder kept."""
    problems: list[Problem] = []
    for check, pattern in (("headings", _HEADING), ("numbered_items", _NUMBERED)):
        want, got = len(pattern.findall(source)), len(pattern.findall(candidate))
        if want != got:
            problems.append(Problem(check, f"{got} in the candidate, {want} in the source"))
    lost = sorted(set(_CODE.findall(source)) - set(_CODE.findall(candidate)))
    if lost:
        problems.append(Problem("code", "changed or missing: " + ", ".join(lost[:5])))
    if normalise(source) == normalise(candidate):
        problems.append(Problem("unchanged", "the candidate is identical to the source"))
    return problems + _control(candidate)


def check_lexicon(source: str, candidate: str, others: Iterable[str] = ()) -> list[Problem]:
    """Word data in TOML. It must parse. A key path every language has (`others`: the texts
    of the languages that have one; none given: the top-level keys) is structure the code
    looks up, so the candidate keeps it with a value of the same type; words used as keys
    (`"half an hour" = 1800`) are translated freely. Numbers the source never maps to are a
    warning (a new synonym is fine, a new value is worth a look)."""
    try:
        want, got = tomllib.loads(source), tomllib.loads(candidate)
    except tomllib.TOMLDecodeError as exc:
        return [Problem("lexicon_parse", str(exc))] + _control(candidate)
    texts = [tomllib.loads(t) for t in others if _parses(t)] or [
        {key: {} if isinstance(value, dict) else value for key, value in want.items()}]
    wanted, paths = _key_paths(want), _key_paths(got)
    fixed = set(wanted).intersection(*(set(_key_paths(t)) for t in texts))
    problems = []
    missing = sorted(".".join(p) for p in fixed if p not in paths)
    if missing:
        problems.append(Problem("lexicon_keys", "missing: " + ", ".join(missing[:8])))
    wrong = sorted(".".join(p) for p in fixed
                   if p in paths and _kind(wanted[p]) != _kind(paths[p]))
    if wrong:
        problems.append(Problem("lexicon_types", "another type: " + ", ".join(wrong[:8])))
    new = sorted({str(v) for v in _numbers(got)} - {str(v) for v in _numbers(want)})
    if new:
        problems.append(Problem("lexicon_values", "new values: " + ", ".join(new[:8]), False))
    if normalise(source) == normalise(candidate):
        problems.append(Problem("unchanged", "the candidate is identical to the source"))
    return problems + _control(candidate)


def _parses(text: str) -> bool:
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return False
    return True


def _key_paths(table: Mapping[str, Any], prefix: tuple[str, ...] = ()) -> dict[
        tuple[str, ...], Any]:
    found: dict[tuple[str, ...], Any] = {}
    for key, value in table.items():
        found[(*prefix, key)] = value
        if isinstance(value, Mapping):
            found.update(_key_paths(value, (*prefix, key)))
    return found


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return type(value).__name__


def _numbers(table: Mapping[str, Any]) -> list[Any]:
    return [v for v in _key_paths(table).values()
            if isinstance(v, int | float) and not isinstance(v, bool)]


def check_prose(source: str | list[str], candidate: str | list[str]) -> list[Problem]:
    """A layer-2 manifest text: a description (str) or affinity keywords (list[str])."""
    if isinstance(source, str) != isinstance(candidate, str):
        return [Problem("shape", "the candidate must have the source's type (text or list)")]
    if isinstance(source, str) and isinstance(candidate, str):
        return check_text(source, candidate)
    return _affinity_problems(list(source), list(candidate))


# -- string checks --------------------------------------------------------------------------


def _placeholder_problems(source: str, candidate: str, *, subset: bool = False) -> list[Problem]:
    try:
        want = placeholders(source)
    except ValueError:
        want = set()
    try:
        got = placeholders(candidate)
    except ValueError as exc:
        return [Problem("placeholders_syntax", f"braces do not balance: {exc}")]
    problems = _unnamed(candidate)
    named_want = {n for n in want if n and not n.isdigit()}
    named_got = {n for n in got if n and not n.isdigit()}
    missing = set() if subset else named_want - named_got
    extra = named_got - named_want
    if missing or extra:
        parts = [f"{{{n}}} missing" for n in sorted(missing)]
        parts += [f"{{{n}}} unexpected" for n in sorted(extra)]
        problems.append(Problem("placeholders", ", ".join(parts)))
    return problems


def _unnamed(candidate: str) -> list[Problem]:
    try:
        found = placeholders(candidate)
    except ValueError:
        return []
    unnamed = sorted(n for n in found if n == "" or n.split(".")[0].split("[")[0].isdigit())
    if not unnamed:
        return []
    shown = ", ".join("{" + n + "}" for n in unnamed)
    return [Problem("placeholders_unnamed", f"unnamed placeholders {shown}: use {{name}}")]


def _control(candidate: str) -> list[Problem]:
    chars = sorted(set(_CONTROL.findall(candidate)))
    if not chars:
        return []
    shown = ", ".join(f"U+{ord(c):04X}" for c in chars)
    return [Problem("control_chars", f"control or zero-width characters {shown}")]


def _whitespace(source: str, candidate: str) -> list[Problem]:
    pairs = (
        ("newline_begin", source.startswith("\n"), candidate.startswith("\n")),
        ("newline_end", source.endswith("\n"), candidate.endswith("\n")),
        ("space_begin", _lead(source), _lead(candidate)),
        ("space_end", _lead(source[::-1]), _lead(candidate[::-1])),
        ("newline_count", source.count("\n"), candidate.count("\n")),
    )
    return [Problem(check, f"source has {want!r}, candidate {got!r}")
            for check, want, got in pairs if want != got]


def _lead(text: str) -> str:
    return text[: len(text) - len(text.lstrip(" \t"))]


def _unchanged(source: str, candidate: str) -> list[Problem]:
    if _is_unchanged(source, candidate):
        return [Problem("unchanged", "the candidate is identical to the source")]
    return []


def _is_unchanged(source: str, candidate: str) -> bool:
    return _same(source, candidate) and _needs_translation(source)


def _same(source: str, candidate: str) -> bool:
    return normalise(source).casefold() == normalise(candidate).casefold()


def _needs_translation(source: str) -> bool:
    """False for text too short or too technical to need translating: only placeholders,
    code, brand words, acronyms (HTTP), numbers, or a single word such as "Email"."""
    prose = _FIELD.sub(" ", _CODE.sub(" ", _JINJA.sub(" ", source)))
    words = [w for w in _WORD.findall(prose)
             if w.casefold() not in BRAND_WORDS and not (len(w) > 1 and w.isupper())]
    return len(words) >= 2 and sum(len(w) for w in words) >= 4


def _warnings(source: str, candidate: str) -> list[Problem]:
    problems: list[Problem] = []
    if _DOUBLE_SPACE.search(candidate) and not _DOUBLE_SPACE.search(source):
        problems.append(Problem("double_space", "double space in the candidate", False))
    want, got = _ending(source), _ending(candidate)
    if want != got:
        problems.append(Problem("end_punctuation", f"the source ends with {want or 'no mark'}"
                                f", the candidate with {got or 'no mark'}", False))
    source_dups = {m.group(1).casefold() for m in _DUPLICATE.finditer(source)}
    dups = sorted({m.group(1).casefold() for m in _DUPLICATE.finditer(candidate)} - source_dups)
    if dups:
        problems.append(Problem("duplicate_words", f"repeated words: {', '.join(dups)}", False))
    return problems


def _ending(text: str) -> str | None:
    stripped = text.rstrip()
    for name, marks in _ENDINGS:
        if stripped.endswith(marks):
            return name
    return None


# -- plural tables and affinity lists -------------------------------------------------------


def _ref(source: Message, form: str, other: str) -> str:
    return source if isinstance(source, str) else source.get(form, other)


def _plural_table_problems(candidate: Mapping[str, str]) -> list[Problem]:
    problems: list[Problem] = []
    unknown = sorted(set(candidate) - PLURAL_CATEGORIES)
    if unknown:
        problems.append(Problem("plural_category", f"not CLDR categories: {', '.join(unknown)}"))
    if "other" not in candidate:
        problems.append(Problem("plural_other", "the plural table has no `other` form"))
    if any(not isinstance(v, str) for v in candidate.values()):
        problems.append(Problem("plural_forms", "every plural form must be a text"))
    return problems


def _form_problems(other: str, ref: str, text: str, is_other: bool) -> list[Problem]:
    """One plural form: its placeholders against the source's `other` (a form such as `one`
    may drop `{count}`, "un file", never add or rename one), the rest against `ref`."""
    problems = _placeholder_problems(other, text, subset=not is_other)
    problems += _control(text) + _whitespace(ref, text) + _warnings(ref, text)
    return problems


def _affinity_problems(source: list[str], candidate: list[str]) -> list[Problem]:
    if not candidate:
        return [Problem("affinity_empty", "no keyword")]
    problems: list[Problem] = []
    folded = [str(k).strip().casefold() for k in candidate]
    dups = sorted({k for k in folded if folded.count(k) > 1})
    if dups:
        problems.append(Problem("affinity_duplicate", f"repeated keywords: {', '.join(dups)}"))
    bad = [k for k in candidate
           if not isinstance(k, str) or not k.strip() or len(k) > MAX_KEYWORD_CHARS
           or any(c.isspace() for c in k.strip())]
    if bad:
        problems.append(Problem("affinity_keyword", "not a short single keyword: "
                                + ", ".join(repr(k) for k in bad)))
    upper = [k for k in candidate if isinstance(k, str) and k != k.lower()]
    if upper:
        problems.append(Problem("affinity_case", f"not lowercase: {', '.join(upper)}", False))
    problems += _control("".join(str(k) for k in candidate))
    if len(source) >= 3 and sorted(folded) == sorted(s.strip().casefold() for s in source):
        problems.append(Problem("unchanged", "the keywords are identical to the source"))
    return problems


# -- the reviewer's view --------------------------------------------------------------------

CHECKS = (
    "placeholders", "placeholders_syntax", "placeholders_unnamed", "unchanged",
    "newline_begin", "newline_end", "newline_count", "space_begin", "space_end",
    "double_space", "control_chars", "end_punctuation", "duplicate_words", "plural_forms",
    "plural_other", "plural_category", "prompt_parse", "prompt_source_parse",
    "prompt_new_construct", "skeleton_variables", "skeleton_attributes", "skeleton_blocks",
    "skeleton_shape", "skeleton_filters", "skeleton_tests", "skeleton_templates", "shape",
    "affinity_empty", "affinity_duplicate", "affinity_keyword", "affinity_case",
)


def description_key(check: str) -> str:
    """The i18n key that names a check for a person (`CHECK_I18N_PLACEHOLDERS`)."""
    return f"CHECK_I18N_{check.upper()}"


def describe(problem: Problem, lang: str | None = None) -> str:
    """One line for a reviewer: what the check means in `lang`, then the specifics."""
    from metnos.ground import i18n

    level = i18n.get("CHECK_I18N_LEVEL_REJECTED" if problem.enforced
                     else "CHECK_I18N_LEVEL_WARNING", lang)
    return f"[{level}] {i18n.get(description_key(problem.check), lang)}: {problem.detail}"
