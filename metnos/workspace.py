"""The six markdown files of the workspace (SPEC §7.9) that shape every system prompt.

Read on every turn, so the owner edits them without a restart; each file and the whole block
are capped, so a huge MEMORY.md cannot crowd the tools out of the model's context.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from metnos.policy.untrusted import wrap_untrusted

FILES = ("IDENTITY.md", "SOUL.md", "USER.md", "TELOS.md", "RULES.md", "MEMORY.md")
PER_FILE_CHARS = 4000
TOTAL_CHARS = 12000


def prompt_context(workspace: Path, *, per_file: int = PER_FILE_CHARS,
                   total: int = TOTAL_CHARS, untrusted: Mapping[str, str] | None = None) -> str:
    """The files in their fixed order as `### NAME` sections; missing ones are skipped.
    A file in `untrusted` (name → its source label: a tainted turn wrote it, the owner has
    not confirmed it, `metnos.identity`) is given as data, inside the untrusted-data envelope."""
    parts: list[str] = []
    budget = total
    for name in FILES:
        text = _read(workspace / name, min(per_file, budget))
        if not text:
            continue
        if untrusted and name in untrusted:
            text = wrap_untrusted(text, source=untrusted[name])
        section = f"### {name}\n{text}"
        parts.append(section)
        budget -= len(section)
        if budget <= 0:
            break
    return "\n\n".join(parts)


def _read(path: Path, limit: int) -> str:
    if limit <= 0 or path.is_symlink() or not path.is_file():
        return ""
    try:
        with path.open(encoding="utf-8", errors="replace") as fh:
            text = fh.read(limit + 1).strip()
    except OSError:
        return ""
    return text if len(text) <= limit else text[:limit].rstrip() + " […]"
