"""TELOS.md (SPEC §7.7, arch §11): three to seven short aims, each with a weight.

The owner edits `workspace/TELOS.md` without a restart: `read_telos` parses it again whenever
its size or modification time changed. The aims are the items of a numbered (`1.` / `1)`) or
bulleted (`-`, `*`, `+`) list; an indented line continues the item above it. An item may end
with a weight marker that needs no words: `(×2)`, `(x2)`, `(*2)`, `[2]` or `[×2]`; items
without one weigh 1. Weights are normalised to sum 1.

Fewer than 3 or more than 7 aims give a warning (an i18n key, in the owner's language through
`Telos.warning_text`) and a sane fallback: more than seven → the first seven; one or two →
those; none (no file, an empty one) → the aims of the shipped TELOS.md in `lang`.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path

from metnos.ground import i18n
from metnos.ground.settings import get_settings

log = logging.getLogger(__name__)

FILE = "TELOS.md"
MIN_AIMS, MAX_AIMS = 3, 7
MAX_WEIGHT = 100.0
_ITEM = re.compile(r"^(\s*)(?:\d{1,2}[.)]|[-*+])\s+(\S.*)$")
_NUMBER = r"(\d+(?:[.,]\d+)?)"
_WEIGHT = re.compile(rf"\s*(?:\(\s*[×xX*]\s*{_NUMBER}\s*\)|\[\s*[×xX*]?\s*{_NUMBER}\s*\])\s*$")
WARN_TOO_FEW = "WARN_TELOS_TOO_FEW"
WARN_TOO_MANY = "WARN_TELOS_TOO_MANY"
WARN_EMPTY = "WARN_TELOS_EMPTY"


@dataclass(frozen=True)
class Aim:
    n: int  # its number, from 1, in the file's order
    text: str  # without the list marker and the weight marker
    weight: float  # normalised: the weights of one Telos sum to 1


@dataclass(frozen=True)
class Telos:
    aims: tuple[Aim, ...]
    warning: str | None = None  # an i18n key (WARN_TELOS_*) when the file needs attention
    found: int = 0  # how many aims the file itself has

    def warning_text(self, lang: str | None) -> str | None:
        if self.warning is None:
            return None
        return i18n.get(self.warning, lang, found=self.found, min=MIN_AIMS, max=MAX_AIMS)


def parse(text: str) -> list[tuple[str, float]]:
    """The list items of `text` as (aim, raw weight), in order."""
    items: list[list[str]] = []
    for line in text.splitlines():
        found = _ITEM.match(line)
        if found:
            items.append([found.group(2).strip()])
        elif items and line.strip() and line[:1].isspace():
            items[-1].append(line.strip())
        elif not line.strip():
            continue
        elif items:  # a plain paragraph after the list ends the item above
            items.append([])
    aims: list[tuple[str, float]] = []
    for parts in items:
        body = " ".join(parts).strip()
        if not body:
            continue
        weight, marker = 1.0, _WEIGHT.search(body)
        if marker:
            raw = (marker.group(1) or marker.group(2)).replace(",", ".")
            weight = min(MAX_WEIGHT, float(raw))
            body = body[:marker.start()].rstrip()
        if body and weight > 0:
            aims.append((body, weight))
    return aims


def telos_of(text: str, lang: str | None = None) -> Telos:
    """The Telos of a TELOS.md's `text`, with the fallback and warning of the module doc."""
    found = parse(text)
    warning = None
    if not found:
        warning = WARN_EMPTY
        found = parse(_shipped(lang))
    elif len(found) < MIN_AIMS:
        warning = WARN_TOO_FEW
    elif len(found) > MAX_AIMS:
        warning = WARN_TOO_MANY
    count = len(parse(text))
    kept = found[:MAX_AIMS]
    total = sum(w for _, w in kept) or 1.0
    aims = tuple(Aim(i, body, w / total) for i, (body, w) in enumerate(kept, start=1))
    return Telos(aims, warning, count)


_cache: dict[tuple[str, str], tuple[tuple[int, int], Telos]] = {}


def read_telos(workspace: Path, lang: str | None = None) -> Telos:
    """The owner's Telos, parsed again only when the file changed."""
    path = workspace / FILE
    try:
        if path.is_symlink() or not path.is_file():
            raise FileNotFoundError(path)
        stat = path.stat()
        stamp = (stat.st_mtime_ns, stat.st_size)
    except OSError:
        return _logged(telos_of("", lang))
    key = (str(path), lang or "")
    cached = _cache.get(key)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    telos = _logged(telos_of(text, lang))
    _cache[key] = (stamp, telos)
    return telos


def _logged(telos: Telos) -> Telos:
    if telos.warning is not None:
        log.warning("telos.%s found=%s", telos.warning.lower(), telos.found)
    return telos


def _shipped(lang: str | None) -> str:
    """The TELOS.md shipped for `lang` (its base language, else English)."""
    root = get_settings().resources_root / "i18n"
    for code in dict.fromkeys(c for c in ((lang or "").split("-")[0].lower(), "en") if c):
        path = root / code / "workspace" / FILE
        if path.is_file():
            return path.read_text(encoding="utf-8")
    return ""
