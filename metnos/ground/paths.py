"""Where the shipped resources live: `metnos/resources/`, package data of the installed wheel
(an editable checkout's source tree, so `metnos-prompts` writes into the repository).

It holds `executors/` (the signed built-ins and `BUILTIN.lock`), `prompts/`, `i18n/`,
`lexicon/`, `planner/`, `channels/` and `docs/` (the repository's `docs/`, linked in).
`Settings.resources_root` names another folder of the same shape when `resources_dir` is set.
"""

from __future__ import annotations

from pathlib import Path

_RESOURCES = Path(__file__).resolve().parent.parent / "resources"


def resources_path(*parts: str) -> Path:
    """The shipped tree, or a path inside it."""
    return _RESOURCES.joinpath(*parts)
