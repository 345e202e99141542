"""Layer 2 of the languages (SPEC §9.2, §9.4): `manifest.lang_state.json` of an executor.

Per language: `version_hash` (SHA-256 of that language's normalised description + affinity),
`source_hash` (the source language's version_hash at the last alignment; null for the source
itself), `source_lang`, `translated_by`, `reviewed_at`, `needs_review`. Comparing hashes is
deterministic code; the nightly translation sweep (a later issue) acts on the result.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from pathlib import Path
from typing import Any

from metnos.executors.manifest import LANG_STATE_FILE, Manifest

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
    description = " ".join(manifest.description[lang].split())
    affinity = "\n".join(" ".join(word.split()) for word in manifest.affinity.get(lang, ()))
    text = unicodedata.normalize("NFC", f"{description}\n--\n{affinity}")
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


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
    """Languages whose text changed, or whose source changed since they were aligned."""
    stale = []
    for lang in manifest.languages():
        entry = state.get(lang)
        if entry is None or entry.get("version_hash") != lang_version_hash(manifest, lang):
            stale.append(lang)
            continue
        source = entry.get("source_lang")
        if source is not None and entry.get("source_hash") != lang_version_hash(manifest, source):
            stale.append(lang)
    return stale
