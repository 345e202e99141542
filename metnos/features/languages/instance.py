"""The languages of one instance: its i18n database and its multilingual audit log.

`open_instance_store` opens `METNOS_HOME/i18n.sqlite` and seeds it from the resources'
`i18n/` files and the executors' texts (SPEC §9.3), as the gateway and `metnos init` do at
start-up. `multilang_audit` appends one line to `METNOS_HOME/multilang/audit.jsonl` (seed §4).
"""

from __future__ import annotations

import json
import os
from typing import Any

from metnos.features.languages.layers import ManifestsLayer
from metnos.features.languages.resources import known_languages, now_iso
from metnos.ground.i18n.store import MessageStore, read_catalogs, seed_executor_texts
from metnos.ground.settings import Settings
from metnos.mechanisms.executors.registry import executor_dirs

AUDIT_FILE = "audit.jsonl"


def open_instance_store(settings: Settings,
                        manifests: ManifestsLayer | None = None) -> MessageStore:
    """The instance's i18n database, seeded from the files and the executors' texts
    (`manifests`: the caller's layer, when it has one already)."""
    store = MessageStore(settings.i18n_db_path)
    root = settings.resources_root
    store.seed(read_catalogs(root / "i18n"))
    if manifests is None:
        manifests = ManifestsLayer(executor_dirs(settings), known_languages(root),
                                   settings.i18n.source_lang)
    seed_executor_texts(store, _executor_texts(manifests))
    return store


def _executor_texts(layer: ManifestsLayer) -> list[tuple[str, str, str, list[str]]]:
    items = []
    for name in layer.resources():
        for lang in layer.languages:
            value = layer.text(name, lang)
            if value is not None:
                items.append((name, lang, value["description"], list(value["affinity"])))
    return items


def multilang_audit(settings: Settings, action: str, **fields: Any) -> None:
    """One line in `METNOS_HOME/multilang/audit.jsonl` (fsync'd)."""
    folder = settings.home / "multilang"
    folder.mkdir(parents=True, exist_ok=True)
    line = json.dumps({"ts": now_iso(), "action": action, **fields}, ensure_ascii=False)
    fd = os.open(folder / AUDIT_FILE, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, (line + "\n").encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
