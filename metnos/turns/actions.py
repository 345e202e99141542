"""The changes a reply lists, as the surfaces offer them for undo (web chat, Telegram).

A reply's activity items carry `action_id` and `undo: true` for a change that can be undone.
Where a surface shows an Undo button, the item's text no longer needs to tell the terminal
command (`metnos undo <id>`): `without_undo_hint` drops that sentence, whatever the language,
by finding the command itself.
"""

from __future__ import annotations

import re
from typing import Any

from metnos.ground.reversibility import valid_action_id

_SENTENCE_END = re.compile(r"(?:[.!?;]\s+|\n)")
HANDLE_CHARS = 8  # a change's short handle: the first characters of its action id


def undoable(activity: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """The items of `activity` that an Undo button can undo."""
    return [a for a in activity or [] if isinstance(a, dict) and a.get("undo")
            and valid_action_id(a.get("action_id"))]


def without_undo_hint(text: str, action_id: str | None) -> str:
    """`text` without the sentence that names `metnos undo <action_id>`."""
    if not action_id:
        return text
    command = f"metnos undo {action_id}"
    at = text.find(command)
    if at < 0:
        return text
    ends = [m.end() for m in _SENTENCE_END.finditer(text, 0, at)]
    start = ends[-1] if ends else 0
    rest = text[at + len(command):].lstrip(" .")
    head = text[:start].rstrip()
    return f"{head} {rest}".strip() if rest else head or text


def item_text(item: dict[str, Any]) -> str:
    """The text a surface with an Undo button shows for `item`."""
    text = str(item.get("text") or item.get("executor") or "")
    if item.get("undo"):
        return without_undo_hint(text, item.get("action_id"))
    return text


def prose_without_hints(text: str, activity: list[dict[str, Any]] | None) -> str:
    """A reply's prose without the `metnos undo` commands of the changes its Undo buttons
    stand for (the embedded planner's replies name them)."""
    for item in undoable(activity):
        text = without_undo_hint(text, item["action_id"])
    return text


def short_handles(text: str, activity: list[dict[str, Any]] | None) -> str:
    """`text` with each `metnos undo <action id>` of its changes shortened to the handle
    (`metnos undo` takes any unique start of an id)."""
    for item in undoable(activity):
        action_id = item["action_id"]
        text = text.replace(f"metnos undo {action_id}",
                            f"metnos undo {action_id[:HANDLE_CHARS]}")
    return text
