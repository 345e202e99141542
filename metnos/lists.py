"""Named lists (shopping, to-do, notes...) on the host side: where a list's file lives.

The `lists` executor keeps each list as `lists/<slug>.md` in the workspace. The host derives
that path from the list's name before the step runs (the `list_name` host check), so the
before-record and `metnos undo` cover exactly that file, as for fs_write. (The embedded
planner splits "milk, eggs and bread" into items: `metnos.llm.household.items_of`.)
"""

from __future__ import annotations

import re
import unicodedata

LISTS_DIR = "lists"
MAX_SLUG = 60
_NOT_WORD = re.compile(r"[\W_]+")


def list_slug(name: str) -> str:
    """`Lista della Spesa` → `lista-della-spesa`, `Città` → `citta` ('' when nothing is left)."""
    bare = "".join(c for c in unicodedata.normalize("NFKD", name) if not unicodedata.combining(c))
    return _NOT_WORD.sub("-", bare.casefold()).strip("-")[:MAX_SLUG].strip("-")


def list_path(name: str) -> str | None:
    """The workspace-relative file of the list `name`, or None for a name with no letters."""
    slug = list_slug(name)
    return f"{LISTS_DIR}/{slug}.md" if slug else None
