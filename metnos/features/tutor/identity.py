"""Source identity: a request that names a published document binds retrieval to it.

An exact, case-insensitive (NFC casefold) match of a document's file name, relative path or
canonical web chat address inside the request binds to that document. A file name without its
extension counts only when it cannot be an ordinary word (it holds a hyphen, underscore or
digit: "visita-guidata", not "memoria"), and the word "file" alone is no signal. The same name in
two languages resolves to the session language's; anything still ambiguous stops without a
guess. An explicit path outside the publication (/tmp/x.md, C:\\Users\\..\\x.md, ~/x.md) and a
file name the catalog does not hold stay the user's own files: the request goes to the loop.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from metnos.features.tutor.catalog import DocEntry
from metnos.features.tutor.classify import Classification
from metnos.ground.i18n import FALLBACK_LANG

TOKEN = re.compile(r"[^\s\"'«»“”‘’<>()\[\]{}`,;]+")
TRAIL = ".:;?!,)»\"'"
FILE_LIKE = re.compile(r"^\w[\w.\-]*\.(?=[^\W_]*[^\W\d_])[^\W_]{1,5}$")  # ext has a letter
OUTSIDE = re.compile(r"^(?:/|~|\\\\|[A-Za-z]:[\\/]|\.\.[\\/])")
NON_WORD_STEM = re.compile(r"[-_\d]")


@dataclass(frozen=True)
class Bound:
    doc: DocEntry
    matched: str  # the request's token, verbatim


@dataclass(frozen=True)
class Ambiguous:
    candidates: tuple[DocEntry, ...]
    matched: tuple[str, ...]


@dataclass(frozen=True)
class UserPath:
    path: str  # an outside path or a file name the publication does not hold, verbatim


Identity = Bound | Ambiguous | UserPath | None


def fold(text: str) -> str:
    return unicodedata.normalize("NFC", text).casefold()


def tokens(text: str) -> list[str]:
    """Path-like tokens of the request, trailing punctuation dropped, verbatim otherwise."""
    out = []
    for match in TOKEN.finditer(text):
        token = match.group(0).rstrip(TRAIL)
        if token:
            out.append(token)
    return out


def _keys(doc: DocEntry) -> set[str]:
    """Every spelling that names `doc` (already folded)."""
    keys = {fold(doc.name), fold(doc.rel_path), fold(doc.source), fold(doc.url)}
    stem = doc.name.rsplit(".", 1)[0]
    if NON_WORD_STEM.search(stem):
        keys.add(fold(stem))
    for path in (doc.rel_path, doc.source):
        if "/" in path:
            keys.add(fold(path.rsplit(".", 1)[0]))
    return keys


def _normal(token: str) -> str:
    folded = fold(token).replace("\\", "/")
    if folded.startswith("./"):
        folded = folded[2:]
    return folded.split("#", 1)[0].rstrip("/")


def resolve(text: str, docs: Sequence[DocEntry], lang: str) -> Identity:
    """The request's document identity, or None when it names no document nor file."""
    index: dict[str, list[DocEntry]] = {}
    for doc in docs:
        for key in _keys(doc):
            index.setdefault(key, []).append(doc)
    urls = {fold(doc.url) for doc in docs}
    found: dict[str, DocEntry] = {}
    matched: list[str] = []
    for token in tokens(text):
        key = _normal(token)
        if OUTSIDE.match(token) and key not in urls:
            return UserPath(token)  # an explicit outside path wins: never reduced to a name
        hits = index.get(key)
        if hits:
            matched.append(token)
            for doc in hits:
                found[doc.source] = doc
        elif FILE_LIKE.match(token):
            return UserPath(token)
    if not found:
        return None
    return _choose(list(found.values()), tuple(matched), lang)


def _choose(candidates: list[DocEntry], matched: tuple[str, ...], lang: str) -> Identity:
    if len(candidates) > 1:
        here = [d for d in candidates if d.lang == lang]
        if not here and len({d.name for d in candidates}) == 1:
            here = [d for d in candidates if d.lang == FALLBACK_LANG]  # a language without it
        if len(here) == 1 and len({d.name for d in candidates}) == 1:
            candidates = here  # one name, two translations: the session language's
    if len(candidates) == 1:
        return Bound(candidates[0], matched[0])
    return Ambiguous(tuple(sorted(candidates, key=lambda d: d.source)), matched)


def docs_from_folder(docs_dir: Path) -> list[DocEntry]:
    """DocEntry rows of a docs/ folder (tests and tools; the runtime uses Catalog.documents())."""
    out = []
    for lang_dir in sorted(p for p in docs_dir.iterdir() if p.is_dir()):
        for path in sorted(lang_dir.rglob("*.md")):
            rel = path.relative_to(lang_dir).as_posix()
            title = next((line.lstrip("# ").strip() for line in
                          path.read_text(encoding="utf-8").splitlines()
                          if line.startswith("# ")), rel)
            out.append(DocEntry(f"docs/{lang_dir.name}/{rel}", lang_dir.name, path.name, rel,
                                f"/docs/{lang_dir.name}/{rel.removesuffix('.md')}", title))
    return out


class _Classifies(Protocol):
    def classify(self, text: str, lang: str) -> Classification: ...

    def operation(self, remainder: str, lang: str) -> str: ...


@dataclass(frozen=True)
class Route:
    target: str          # "tutor" | "loop" | "ask" (ambiguous identity: stop, no guess)
    identity: Identity
    classification: Classification


def route(text: str, docs: Iterable[DocEntry], lang: str, classifier: _Classifies) -> Route:
    """Where a request goes once identity and class are known."""
    identity = resolve(text, list(docs), lang)
    result = classifier.classify(text, lang)
    if isinstance(identity, UserPath) or result.label == "action":
        return Route("loop", identity, result)  # a user file, or an operative intent
    if isinstance(identity, Ambiguous):
        return Route("ask", identity, result)
    if isinstance(identity, Bound):
        if result.label != "mixed":
            remainder = text.replace(identity.matched, " ")
            if classifier.operation(remainder, lang) == "action":
                return Route("loop", identity, result)  # an operation on the page: the loop's
        return Route("tutor", identity, result)
    if result.label in ("explanation", "observation", "mixed"):
        return Route("tutor", identity, result)
    return Route("loop", identity, result)
