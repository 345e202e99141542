"""The file layers and layer 2 (executor manifests) on the `Layer` interface.

File layers (`FilesLayer`): prompts `prompts/<lang>/<role>.j2` (layer 1), the channels'
templates `channels/<lang>/<channel>/<name>.j2` (layer 4), the word data `lexicon/<lang>/
<name>.toml` and the workspace documents `i18n/<lang>/workspace/<NAME>.md`. Candidates wait
beside them in `<lang>/_pending/`; the record and the candidates' provenance are one JSON file
per layer (`prompts/lang_state.json`, ...).

Manifests: `[description]`/`[affinity]` of `executors/<name>/manifest.toml` (signed, never
rewritten for a language it does not have), the record in `manifest.lang_state.json`
(`lang_state`), reviewed translations of other languages in its `text` table and candidates
in its `candidates` table. A description is compared with its spaces collapsed: re-wrapping
a TOML string is not an edit.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar

import tomlkit

from metnos.features.languages.checks import Problem, check_lexicon
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

PENDING_DIR = "_pending"
CANDIDATE_SUFFIX = ".candidate"
STATE_FILE = "lang_state.json"
MANIFEST_FILE = "manifest.toml"
MANIFEST_STATE = "manifest.lang_state.json"


class RecordedLayer(Layer):
    """A layer whose record and candidates' provenance are one JSON file (`state_path`):
    `{"lang_state": {name: {lang: entry}}, "candidates": {name: {lang: meta}}}`."""

    def __init__(self, languages: Iterable[str], default_source: str, state_path: Path) -> None:
        super().__init__(languages, default_source)
        self.state_path = state_path
        self._state: dict[str, Any] | None = None

    def _data(self) -> dict[str, Any]:
        if self._state is None:
            self._state = read_json(self.state_path)
            self._state.setdefault("lang_state", {})
            self._state.setdefault("candidates", {})
        return self._state

    def record(self, name: str) -> dict[str, LangEntry]:
        return entries_from_json(self._data()["lang_state"].get(name, {}))

    def recorded(self) -> list[str]:
        return sorted(self._data()["lang_state"])

    def forget(self, name: str) -> None:
        self._data()["lang_state"].pop(name, None)
        self._data()["candidates"].pop(name, None)
        self._write()

    def save_record(self, name: str, record: Mapping[str, LangEntry]) -> None:
        self._data()["lang_state"][name] = entries_to_json(record)
        self._write()

    def _meta(self, name: str, lang: str) -> Any:
        return self._data()["candidates"].get(name, {}).get(lang)

    def _set_meta(self, name: str, lang: str, meta: dict[str, Any]) -> None:
        self._data()["candidates"].setdefault(name, {})[lang] = meta
        self._write()

    def _drop_meta(self, name: str, lang: str) -> None:
        metas = self._data()["candidates"].get(name, {})
        if metas.pop(lang, None) is not None:
            if not metas:
                self._data()["candidates"].pop(name, None)
            self._write()

    def _write(self) -> None:
        write_json(self.state_path, self._data())


class FilesLayer(RecordedLayer):
    """A layer whose texts are files, one per language: `<base>/<lang>/<sub>/<name><suffix>`
    (a name may hold `/`: `telegram/approval`). Candidates wait in
    `<base>/<lang>/_pending/<sub>/<name><suffix>.candidate`, the record and the candidates'
    provenance in one JSON file (`state`). Prompts (layer 1), the channels' templates
    (layer 4), the word data the code reads (`lexicon`) and the household's starting
    documents (`workspace`) are all files of this kind."""

    def __init__(self, base: Path, languages: Iterable[str], default_source: str, *,
                 suffix: str, sub: str = "", state: Path | None = None) -> None:
        super().__init__(languages, default_source, state or base / STATE_FILE)
        self.dir = base
        self.suffix = suffix
        self.sub = sub

    def _folder(self, lang: str, pending: bool = False) -> Path:
        folder = self.dir / lang / PENDING_DIR if pending else self.dir / lang
        return folder / self.sub if self.sub else folder

    def path(self, name: str, lang: str) -> Path:
        return self._folder(lang) / f"{name}{self.suffix}"

    def pending_path(self, name: str, lang: str) -> Path:
        return self._folder(lang, pending=True) / f"{name}{self.suffix}{CANDIDATE_SUFFIX}"

    def resources(self) -> list[str]:
        if not self.dir.is_dir():
            return []
        names: set[str] = set()
        for lang_dir in self.dir.iterdir():
            folder = self._folder(lang_dir.name)
            if lang_dir.name.startswith(("_", ".")) or not folder.is_dir():
                continue
            for path in folder.rglob(f"*{self.suffix}"):
                relative = path.relative_to(folder)
                if path.is_file() and not any(p.startswith(("_", ".")) for p in relative.parts):
                    names.add(relative.as_posix()[: -len(self.suffix)])
        return sorted(names)

    def text(self, name: str, lang: str) -> str | None:
        path = self.path(name, lang)
        return path.read_text(encoding="utf-8") if path.is_file() else None

    def candidate(self, name: str, lang: str) -> Candidate | None:
        path = self.pending_path(name, lang)
        if not path.is_file():
            return None
        meta = self._meta(name, lang)
        if meta is None:  # a file put there by hand: reviewable, but tied to no source text
            meta = {"source_lang": "", "source_hash": "", "translated_by": "unknown"}
        return Candidate.from_meta(path.read_text(encoding="utf-8"), meta)

    def put_candidate(self, name: str, lang: str, candidate: Candidate) -> None:
        atomic_write(self.pending_path(name, lang), str(candidate.value))
        self._set_meta(name, lang, candidate.meta())

    def drop_candidate(self, name: str, lang: str) -> None:
        self.pending_path(name, lang).unlink(missing_ok=True)
        self._drop_meta(name, lang)

    def promote(self, name: str, lang: str, value: Any) -> list[str]:
        atomic_write(self.path(name, lang), str(value))
        return []


class PromptsLayer(FilesLayer):
    """Layer 1: `prompts/<lang>/<role>.j2`, the record in `prompts/lang_state.json`."""

    name: ClassVar[str] = "prompts"
    kind: ClassVar[str] = "prompt"

    def __init__(self, root: Path, languages: Iterable[str], default_source: str) -> None:
        super().__init__(root / "prompts", languages, default_source, suffix=".j2")


class ChannelsLayer(FilesLayer):
    """Layer 4: the channels' message templates, `channels/<lang>/<channel>/<name>.j2`
    (Jinja, checked like a prompt: the same constructs, in the same order)."""

    name: ClassVar[str] = "channels"
    kind: ClassVar[str] = "template"

    def __init__(self, root: Path, languages: Iterable[str], default_source: str) -> None:
        super().__init__(root / "channels", languages, default_source, suffix=".j2")


class LexiconLayer(FilesLayer):
    """The words the code reads (`metnos.ground.i18n.lexicon`): `lexicon/<lang>/<name>.toml`. A key
    every other language has too (a table of intents, an executor's templates, a prior) is
    structure and must stay; the rest (phrases, and words used as keys) is translated."""

    name: ClassVar[str] = "lexicon"
    kind: ClassVar[str] = "lexicon"

    def __init__(self, root: Path, languages: Iterable[str], default_source: str) -> None:
        super().__init__(root / "lexicon", languages, default_source, suffix=".toml")

    def problems(self, name: str, source: Any, value: Any) -> list[Problem]:
        return check_lexicon(str(source), str(value), self.texts(name))


class WorkspaceLayer(FilesLayer):
    """The household's starting documents (`i18n/<lang>/workspace/<NAME>.md`, copied into a
    new workspace by `metnos init`); the record in `i18n/workspace.lang_state.json`."""

    name: ClassVar[str] = "workspace"
    kind: ClassVar[str] = "document"

    def __init__(self, root: Path, languages: Iterable[str], default_source: str) -> None:
        super().__init__(root / "i18n", languages, default_source, suffix=".md",
                         sub="workspace", state=root / "i18n" / "workspace.lang_state.json")


class ManifestsLayer(Layer):
    name: ClassVar[str] = "manifests"
    kind: ClassVar[str] = "manifest"

    def __init__(self, executor_dirs: Iterable[Path], languages: Iterable[str],
                 default_source: str) -> None:
        super().__init__(languages, default_source)
        self._folders: dict[str, Path] = {}
        for base in executor_dirs:
            for manifest in sorted(base.glob(f"*/{MANIFEST_FILE}")) if base.is_dir() else []:
                self._folders.setdefault(manifest.parent.name, manifest.parent)
        self._manifests: dict[str, dict[str, Any]] = {}
        self._states: dict[str, dict[str, Any]] = {}

    def folder(self, name: str) -> Path:
        return self._folders[name]

    def resources(self) -> list[str]:
        return sorted(self._folders)

    def manifest(self, name: str) -> dict[str, Any]:
        if name not in self._manifests:
            with (self._folders[name] / MANIFEST_FILE).open("rb") as fh:
                self._manifests[name] = tomllib.load(fh)
        return self._manifests[name]

    def _state(self, name: str) -> dict[str, Any]:
        if name not in self._states:
            data = read_json(self._folders[name] / MANIFEST_STATE)
            for table in ("lang_state", "text", "candidates"):
                data.setdefault(table, {})
            self._states[name] = data
        return self._states[name]

    def text(self, name: str, lang: str) -> dict[str, Any] | None:
        manifest = self.manifest(name)
        description = manifest.get("description", {}).get(lang)
        if isinstance(description, str):
            affinity = manifest.get("affinity", {}).get(lang, [])
            return manifest_value(description, affinity)
        reviewed = self._state(name)["text"].get(lang)
        if isinstance(reviewed, Mapping) and isinstance(reviewed.get("description"), str):
            return manifest_value(reviewed["description"], reviewed.get("affinity", []))
        return None

    def record(self, name: str) -> dict[str, LangEntry]:
        return entries_from_json(self._state(name)["lang_state"])

    def candidate(self, name: str, lang: str) -> Candidate | None:
        meta = self._state(name)["candidates"].get(lang)
        if not isinstance(meta, Mapping) or "value" not in meta:
            return None
        return Candidate.from_meta(meta["value"], meta)

    def save_record(self, name: str, record: Mapping[str, LangEntry]) -> None:
        state = self._state(name)
        state["lang_state"] = entries_to_json(record)
        for lang, entry in state["lang_state"].items():
            entry["needs_review"] = lang in state["candidates"]
        self._write(name)

    def put_candidate(self, name: str, lang: str, candidate: Candidate) -> None:
        state = self._state(name)
        state["candidates"][lang] = {**candidate.meta(), "value": candidate.value,
                                     "needs_review": True}
        if lang in state["lang_state"]:
            state["lang_state"][lang]["needs_review"] = True
        self._write(name)

    def drop_candidate(self, name: str, lang: str) -> None:
        state = self._state(name)
        if state["candidates"].pop(lang, None) is not None:
            if lang in state["lang_state"]:
                state["lang_state"][lang]["needs_review"] = False
            self._write(name)

    def promote(self, name: str, lang: str, value: Any) -> list[str]:
        described = self.manifest(name).get("description", {})
        if lang not in described:
            self._state(name)["text"][lang] = dict(value)
            self._write(name)
            return []
        self._rewrite_manifest(name, lang, value)
        return [f"manifest_resign:{name}"]

    def _rewrite_manifest(self, name: str, lang: str, value: Mapping[str, Any]) -> None:
        """A language the signed manifest has: rewrite its two entries (comments kept)."""
        path = self._folders[name] / MANIFEST_FILE
        document = tomlkit.parse(path.read_text(encoding="utf-8"))
        description = document["description"]
        affinity = document.setdefault("affinity", tomlkit.table())
        description[lang] = tomlkit.string(str(value["description"]), multiline=True)
        affinity[lang] = list(value["affinity"])
        atomic_write(path, tomlkit.dumps(document))
        self._manifests.pop(name, None)

    def _write(self, name: str) -> None:
        state = self._state(name)
        body = {key: state[key] for key in ("lang_state", "text", "candidates") if state[key]}
        body.setdefault("lang_state", {})
        write_json(self._folders[name] / MANIFEST_STATE, body)


def manifest_value(description: str, affinity: Iterable[Any]) -> dict[str, Any]:
    """The compared form of one language of a manifest: spaces collapsed, keywords trimmed."""
    return {"description": " ".join(description.split()),
            "affinity": [" ".join(str(word).split()) for word in affinity]}
