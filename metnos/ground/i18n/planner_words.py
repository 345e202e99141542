"""The embedded planner's reviewed words of an executor in a language its signed manifest lacks:
`planner/<lang>/<executor>.json` in the resources folder, read by the executor registry. The
translation workbench writes them (`metnos.features.languages.layer_planner`)."""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

from metnos.ground.i18n.lexicon import resources_root

PLANNER_DIR = "planner"


def planner_text(name: str, lang: str) -> dict[str, Any] | None:
    """The reviewed planner words of executor `name` in a language its manifest lacks
    (`planner/<lang>/<name>.json`), None when there are none; cached on the file's mtime."""
    path = resources_root() / PLANNER_DIR / lang / f"{name}.json"
    try:
        stamp = os.stat(path).st_mtime_ns
    except OSError:
        return None
    return _cached(str(path), stamp)


@lru_cache(maxsize=256)
def _cached(path: str, stamp: int) -> dict[str, Any] | None:
    try:
        return read_words(Path(path))
    except ValueError:
        return None


def read_words(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a JSON object")
    return data
