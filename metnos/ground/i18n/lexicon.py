"""Per-language word data the code reads (layer 5 of the languages, beside the messages).

Reading a reminder's time, a schedule's cadence, a household sentence or a proposal's words
needs words of the language, not only messages: `lexicon/<lang>/<name>.toml` in the resources
folder (`Settings.resources_root`, beside `prompts/`, `i18n/` and `channels/`). A language
added with `metnos-prompts add-language` gets its lexicon through the sweep and
`metnos-prompts lexicon mark-synced`, like any other layer: no file of the code changes.

`lexicon_file(name, lang)` is where the code looks; `lexicon_key(name, lang)` is the key
its readers cache on (the file and its modification time), so a reviewed translation is
read on the next use without a restart, and two instances with different resources folders
in one process never share a cache entry.
"""

from __future__ import annotations

import os
from pathlib import Path

from metnos.ground.paths import resources_path

LEXICON_DIR = "lexicon"


def resources_root() -> Path:
    """The configured resources folder; the shipped tree when the settings cannot be read."""
    try:
        from metnos.ground.settings import get_settings

        return get_settings().resources_root
    except Exception:  # broken settings: still read the shipped words
        return resources_path()


def lexicon_file(name: str, lang: str, root: Path | None = None) -> Path:
    return (root or resources_root()) / LEXICON_DIR / lang / f"{name}.toml"


def lexicon_key(name: str, lang: str, root: Path | None = None) -> tuple[str, int] | None:
    """(path, mtime_ns) of the language's file, None when it has none."""
    path = lexicon_file(name, lang, root)
    try:
        return str(path), os.stat(path).st_mtime_ns
    except OSError:
        return None
