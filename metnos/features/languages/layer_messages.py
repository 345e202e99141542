"""Layer 3 (user-facing messages) on the `Layer` interface.

Texts: `i18n/<lang>/<domain>.toml` (a key keeps its domain file in every language). Record:
`i18n/lang_state.json`, buffered and written once by `flush()` (ten thousand keys are one
file write, not ten thousand). Candidates: rows of the i18n database (SPEC §9.3), so the
sweep can stop halfway and a rerun goes on from there. A promoted translation is written to
the language's TOML file (comments and order of the other keys kept) and to the database.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar

import tomlkit

from metnos.features.languages.resources import (
    Candidate,
    Layer,
    atomic_write,
    entries_from_json,
    entries_to_json,
    read_json,
    write_json,
)
from metnos.features.languages.state import LangEntry
from metnos.ground.i18n.catalogs import CatalogEntry
from metnos.ground.i18n.store import MessageStore, read_catalogs

STATE_FILE = "lang_state.json"
NEW_FILE_HEADER = "# Messages ({lang}). Keys: SCOPE_DOMAIN_DETAIL. Placeholders: {{name}}.\n"


class MessagesLayer(Layer):
    name: ClassVar[str] = "messages"
    kind: ClassVar[str] = "messages"

    def __init__(self, root: Path, store: MessageStore, languages: Iterable[str],
                 default_source: str) -> None:
        super().__init__(languages, default_source)
        self.dir = root / "i18n"
        self.store = store
        self.catalogs = read_catalogs(self.dir)
        self._state = read_json(self.dir / STATE_FILE).get("lang_state", {})
        self._dirty = False
        self._pending_files: dict[tuple[str, str], dict[str, Any]] = {}
        self._candidates: dict[tuple[str, str], Candidate] | None = None

    def resources(self) -> list[str]:
        keys: set[str] = set()
        for entries in self.catalogs.values():
            keys.update(entries)
        return sorted(keys)

    def text(self, name: str, lang: str) -> Any | None:
        entry = self.catalogs.get(lang, {}).get(name)
        return None if entry is None else entry.value

    def domain(self, name: str) -> str:
        for lang in (self.default_source, *self.catalogs):
            entry = self.catalogs.get(lang, {}).get(name)
            if entry is not None:
                return entry.domain
        return "messages"

    def record(self, name: str) -> dict[str, LangEntry]:
        return entries_from_json(self._state.get(name, {}))

    def recorded(self) -> list[str]:
        return sorted(self._state)

    def forget(self, name: str) -> None:
        if self._state.pop(name, None) is not None:
            self._dirty = True

    def candidate(self, name: str, lang: str) -> Candidate | None:
        if self._candidates is None:
            self._candidates = {}
            for row in self.store.candidates():
                self._candidates[(row.key, row.lang)] = Candidate(
                    row.value, row.source_lang, row.source_hash, row.translated_by,
                    row.created_at, tuple(row.problems))
        return self._candidates.get((name, lang))

    def save_record(self, name: str, record: Mapping[str, LangEntry]) -> None:
        self._state[name] = entries_to_json(record)
        self._dirty = True

    def put_candidate(self, name: str, lang: str, candidate: Candidate) -> None:
        self.store.put_candidate(name, lang, candidate.value, candidate.source_lang,
                                 candidate.source_hash, candidate.translated_by,
                                 list(candidate.warnings))
        if self._candidates is not None:
            self._candidates[(name, lang)] = candidate

    def drop_candidate(self, name: str, lang: str) -> None:
        self.store.drop_candidate(name, lang)
        if self._candidates is not None:
            self._candidates.pop((name, lang), None)

    def promote(self, name: str, lang: str, value: Any) -> list[str]:
        domain = self.domain(name)
        self._pending_files.setdefault((lang, domain), {})[name] = value
        self.catalogs.setdefault(lang, {})[name] = CatalogEntry(value, domain)
        self.store.set_text(name, lang, value, domain)
        return []

    def flush(self) -> None:
        for (lang, domain), values in sorted(self._pending_files.items()):
            _write_values(self.dir / lang / f"{domain}.toml", lang, values)
        self._pending_files.clear()
        if self._dirty:
            write_json(self.dir / STATE_FILE, {"lang_state": dict(sorted(self._state.items()))})
            self._dirty = False


def _write_values(path: Path, lang: str, values: Mapping[str, Any]) -> None:
    """Set `values` in the TOML file `path` (created when missing), keeping the rest."""
    text = path.read_text(encoding="utf-8") if path.exists() else NEW_FILE_HEADER.format(lang=lang)
    document = tomlkit.parse(text)
    for key, value in values.items():
        if isinstance(value, Mapping):
            table = tomlkit.inline_table()
            table.update(dict(value))
            document[key] = table
        else:
            document[key] = str(value)
    atomic_write(path, tomlkit.dumps(document))
