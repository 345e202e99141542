"""Where the shipped resources live: the repository root (or the installed tree)."""

from __future__ import annotations

from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent


def repo_root() -> Path:
    """The directory holding `executors/`, `prompts/` and `i18n/` (an editable install's repo)."""
    return _ROOT


def repo_path(*parts: str) -> Path:
    return _ROOT.joinpath(*parts)
