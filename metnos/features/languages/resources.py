"""The three string layers as one kind of thing: resources with a text per language.

A `Layer` (prompts, manifests, messages; SPEC §9.1–§9.3) lists its resources, reads the text
of a resource in a language, keeps the latest-wins record (`metnos.features.languages.state`) and
pending translation candidates, and promotes a reviewed candidate into the language's own file.
The sweep, `metnos-prompts` and the checks work on this interface only.

Every file write is atomic (a temporary file in the same folder, fsync, rename): an
interrupted run leaves either the old file or the new one, never half of one.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

from metnos.features.languages.state import Assessment, LangEntry, assess
from metnos.ground import durable
from metnos.ground.i18n.skeleton import Problem
from metnos.ground.i18n.textnorm import value_hash

DAY_ONE = ("en", "it")


@dataclass(frozen=True)
class Candidate:
    """A machine translation waiting for review (never served before `mark-synced`)."""

    value: Any
    source_lang: str
    source_hash: str
    translated_by: str
    created_at: str = field(default_factory=lambda: now_iso())
    warnings: tuple[str, ...] = ()

    def meta(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("value")
        data["warnings"] = list(self.warnings)
        return data

    @classmethod
    def from_meta(cls, value: Any, meta: Mapping[str, Any]) -> Candidate:
        return cls(value, str(meta["source_lang"]), str(meta["source_hash"]),
                   str(meta.get("translated_by") or ""), str(meta.get("created_at") or ""),
                   tuple(str(w) for w in meta.get("warnings", ())))


class Layer(ABC):
    """One string layer. Subclasses read and write their own files."""

    name: ClassVar[str]
    kind: ClassVar[str]  # what the translator is told it translates

    def __init__(self, languages: Iterable[str], default_source: str) -> None:
        self.languages = list(dict.fromkeys(languages))
        self.default_source = default_source

    # -- reading ---------------------------------------------------------------------------
    @abstractmethod
    def resources(self) -> list[str]: ...

    @abstractmethod
    def text(self, name: str, lang: str) -> Any | None:
        """The current value in `lang` (str, list or dict), None when there is none."""

    @abstractmethod
    def record(self, name: str) -> dict[str, LangEntry]: ...

    @abstractmethod
    def candidate(self, name: str, lang: str) -> Candidate | None: ...

    def hashes(self, name: str) -> dict[str, str | None]:
        langs = dict.fromkeys([*self.languages, *self.record(name)])
        return {lang: _hash_or_none(self.text(name, lang)) for lang in langs}

    def assess(self, name: str) -> Assessment:
        """The latest-wins state. A language whose text already equals its pending candidate
        is not an edit: a promotion that was interrupted before its record was written."""
        record, basis = self.record(name), self.hashes(name)
        for lang, current in basis.items():
            pending = self.candidate(name, lang) if current is not None else None
            if pending is not None and value_hash(pending.value) == current:
                basis[lang] = record[lang].version_hash if lang in record else None
        return assess(record, basis, self.languages, self.default_source)

    # -- writing ---------------------------------------------------------------------------
    @abstractmethod
    def save_record(self, name: str, record: Mapping[str, LangEntry]) -> None: ...

    @abstractmethod
    def put_candidate(self, name: str, lang: str, candidate: Candidate) -> None: ...

    @abstractmethod
    def drop_candidate(self, name: str, lang: str) -> None: ...

    @abstractmethod
    def promote(self, name: str, lang: str, value: Any) -> list[str]:
        """Write `value` as `lang`'s text; returns notes for the person (e.g. re-signing)."""

    def recorded(self) -> list[str]:
        """Resources that have a record (some may be gone since)."""
        return []

    def forget(self, name: str) -> None:  # noqa: B027 - layers without a shared state file
        """Drop the record of a resource that no longer exists."""

    def flush(self) -> None:  # noqa: B027 - a no-op for layers that write at once
        """Write what was buffered (layers that batch their state file)."""

    def texts(self, name: str) -> list[Any]:
        """The texts `name` has, in every language that has one."""
        return [t for lang in self.languages if (t := self.text(name, lang)) is not None]

    def problems(self, name: str, source: Any, value: Any) -> list[Problem]:
        """The checks of a candidate `value` of `name` against its `source` text."""
        from metnos.features.languages.sweep import check_candidate

        return check_candidate(self.kind, source, value)


def _hash_or_none(value: Any | None) -> str | None:
    return None if value is None else value_hash(value)


def now_iso() -> str:
    return datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def known_languages(root: Path) -> list[str]:
    """Languages the resources exist in or were added for: `prompts/<lang>/` and
    `i18n/<lang>/*.toml`, day-one languages first."""
    found: set[str] = set(DAY_ONE)
    prompts = root / "prompts"
    if prompts.is_dir():
        found |= {p.name for p in prompts.iterdir() if p.is_dir() and not p.name.startswith("_")}
    messages = root / "i18n"
    if messages.is_dir():
        found |= {p.name for p in messages.iterdir() if p.is_dir() and any(p.glob("*.toml"))}
    return [*DAY_ONE, *sorted(found - set(DAY_ONE))]


# -- JSON state files ---------------------------------------------------------------------
def read_json(path: Path) -> dict[str, Any]:
    """A JSON object from `path` ({} when missing); a broken file is a clear ValueError."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not readable JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a JSON object")
    return data


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    atomic_write(path, json.dumps(data, ensure_ascii=False, indent=2, sort_keys=True) + "\n")


def atomic_write(path: Path, text: str) -> None:
    """Replace `path` with `text` in one step (temporary file, fsync, rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    durable.write_atomic(path, text.encode("utf-8"), mode=mode)


def entries_from_json(data: Mapping[str, Any]) -> dict[str, LangEntry]:
    """Per-language entries of one resource; entries without a version_hash are skipped."""
    return {lang: LangEntry.from_json(e) for lang, e in data.items()
            if isinstance(e, Mapping) and e.get("version_hash")}


def entries_to_json(record: Mapping[str, LangEntry]) -> dict[str, Any]:
    return {lang: record[lang].to_json() for lang in sorted(record)}
