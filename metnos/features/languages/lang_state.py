"""Layer 2 of the languages (SPEC §9.2, §9.4): `manifest.lang_state.json` of an executor.

Per language: `version_hash` (SHA-256 of that language's normalised description + affinity),
`source_hash` (the source language's version_hash at the last alignment; null for the source
itself), `source_lang`, `translated_by`, `reviewed_at`, `needs_review`. The latest-wins rules
live in `metnos.features.languages.state`; the sweep and `metnos-prompts` work on the file through
`metnos.features.languages.layers.ManifestsLayer`. These helpers serve the manifest tooling and its
tests.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from metnos.features.languages.layers import manifest_value
from metnos.features.languages.state import LangEntry, assess
from metnos.ground.i18n.textnorm import value_hash
from metnos.mechanisms.executors.manifest import LANG_STATE_FILE, Manifest

FIELDS = (
    "version_hash",
    "source_hash",
    "source_lang",
    "translated_by",
    "reviewed_at",
    "needs_review",
)


def lang_version_hash(manifest: Manifest, lang: str) -> str:
    """SHA-256 of one language's normalised description + affinity (SPEC §9.4 version_hash)."""
    return value_hash(manifest_value(manifest.description[lang], manifest.affinity.get(lang, ())))


def lang_state_document(
    manifest: Manifest, source_lang: str, translated_by: str | None
) -> dict[str, Any]:
    """A fresh `manifest.lang_state.json` body: `source_lang` is the source, the rest aligned."""
    source_hash = lang_version_hash(manifest, source_lang)
    state: dict[str, dict[str, Any]] = {}
    for lang in manifest.languages():
        is_source = lang == source_lang
        state[lang] = {
            "version_hash": lang_version_hash(manifest, lang),
            "source_hash": None if is_source else source_hash,
            "source_lang": None if is_source else source_lang,
            "translated_by": None if is_source else translated_by,
            "reviewed_at": None,
            "needs_review": False,
        }
    return {"lang_state": state}


def read_lang_state(folder: Path) -> dict[str, dict[str, Any]]:
    """The per-language entries of `folder`'s lang state ({} when the file is missing)."""
    path = folder / LANG_STATE_FILE
    if not path.exists():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    state: dict[str, dict[str, Any]] = data.get("lang_state", {})
    return state


def stale_languages(manifest: Manifest, state: dict[str, dict[str, Any]]) -> list[str]:
    """Languages that are not in sync: stale, edited out of turn, or never recorded."""
    record = {lang: LangEntry.from_json(e) for lang, e in state.items() if e.get("version_hash")}
    current: dict[str, str | None] = {lang: lang_version_hash(manifest, lang)
                                      for lang in manifest.languages()}
    now = assess(record, current, list(current), "en")
    return sorted(lang for lang, s in now.status.items() if s not in ("source", "synced"))
