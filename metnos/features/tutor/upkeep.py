"""Keep the Tutor's catalog in step with the published docs and the executor manifests.

`stale` compares what the sources would compile to with what the admitted catalog holds,
without loading the embedding model (cheap enough for a check every few minutes); `refresh`
compiles only then. A catalog that fails its checks (tampered, another key, a changed
model file) counts as stale: a compile replaces it with a verified one, or leaves it
refused if it cannot (the Tutor then steps aside). A changed model file is the exception:
compiling would sign what changed, so only the owner's `metnos tutor compile` does that.

A fresh home gets its catalog at `metnos init` (`due` then `refresh`: about half a minute on
two cores, once), so the Tutor answers from the first turn; a home that starts without one
(an init before this, a new catalog schema, a refused file) compiles it at start, in the
background (`metnos.features.tutor.precheck.Tutor.start_reading`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from metnos.features.tutor.catalog import CatalogUnavailable, open_catalog, section_hash
from metnos.features.tutor.compile import CompileReport, compile_catalog
from metnos.features.tutor.sections import all_sections

OWNER_ONLY = frozenset({"model_changed"})  # refused until the owner compiles by hand


@dataclass(frozen=True)
class Upkeep:
    """What a check found: `reason` (why a compile was due, "" when none), the compile's
    report when one ran."""

    reason: str
    report: CompileReport | None = None


def stale(home: Path, *, docs_dir: Path | None = None,
          executors_dir: Path | None = None) -> str:
    """Why the catalog must be compiled again ("" when it is current)."""
    try:
        catalog = open_catalog(home)
    except CatalogUnavailable as exc:
        return exc.reason
    sources = all_sections(docs_dir, executors_dir)
    if sorted(map(section_hash, sources)) != sorted(map(section_hash, catalog.sections)):
        return "sources"
    return "" if catalog.semantic else "model"


def refresh(home: Path, *, docs_dir: Path | None = None,
            executors_dir: Path | None = None) -> Upkeep:
    """Compile the catalog when `stale` says so; the compile itself is atomic."""
    reason = stale(home, docs_dir=docs_dir, executors_dir=executors_dir)
    if not reason or reason in OWNER_ONLY:
        return Upkeep(reason)
    return Upkeep(reason, compile_catalog(home, docs_dir=docs_dir, executors_dir=executors_dir))


def due(home: Path) -> str:
    """Why `refresh` would compile now ("" when it would not: current, or the owner's)."""
    reason = stale(home)
    return "" if reason in OWNER_ONLY else reason
