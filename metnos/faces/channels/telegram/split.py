"""Split a Telegram HTML message into pieces within the Bot API's 4096-character limit.

Breaks go, in order of preference, after a paragraph, after a line, after a space, and only
as a last resort anywhere else; never inside a tag (`<b>`) or an entity (`&amp;`). A tag open
at a break is closed at the end of the piece and opened again at the start of the next, so
every piece is valid HTML on its own. Lengths are counted in UTF-16 code units, the way
Telegram counts them, on the HTML itself (an upper bound of the visible text).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

LIMIT = 4096
_ATOM = re.compile(r"<[^<>]*>|&#?\w+;|\n\n|[^<&]|[<&]", re.S)
_TAG_NAME = re.compile(r"</?\s*([a-zA-Z][\w-]*)")
_PRIORITY = {"\n\n": 3, "\n": 2, " ": 1}


@dataclass
class _Break:
    index: int  # atoms before the break
    stack: tuple[str, ...]  # tags open at the break (their full opening text)


def units(text: str) -> int:
    """The length of `text` as Telegram counts it (UTF-16 code units)."""
    return len(text.encode("utf-16-le")) // 2


def split_html(html: str, limit: int = LIMIT) -> list[str]:
    """`html` as pieces of at most `limit` UTF-16 units each (blank pieces dropped)."""
    if units(html) <= limit:
        return [html] if html.strip() else []
    atoms = _ATOM.findall(html)
    pieces: list[str] = []
    start = 0
    stack: tuple[str, ...] = ()
    while start < len(atoms):
        end, next_stack = _piece_end(atoms, start, stack, limit)
        body = "".join(stack) + "".join(atoms[start:end]) + _closing(next_stack)
        if body.strip():
            pieces.append(body.strip("\n "))
        start, stack = end, next_stack
    return pieces


def _piece_end(atoms: list[str], start: int, stack: tuple[str, ...],
               limit: int) -> tuple[int, tuple[str, ...]]:
    """Where the piece starting at `start` ends, and the tags open there."""
    size = sum(units(t) for t in stack)
    best: dict[int, _Break] = {}
    open_now = list(stack)
    for index in range(start, len(atoms)):
        atom = atoms[index]
        after = _track(open_now, atom)
        if size + units(atom) + units(_closing(tuple(after))) > limit:
            if index == start:  # a single atom longer than the limit: it goes alone
                return index + 1, tuple(after)
            chosen = best[max(best)] if best else _Break(index, tuple(open_now))
            return chosen.index, chosen.stack
        size += units(atom)
        open_now = after
        priority = _PRIORITY.get(atom, 0)
        best[priority] = _Break(index + 1, tuple(open_now))
    return len(atoms), tuple(open_now)


def _track(open_tags: list[str], atom: str) -> list[str]:
    """The open tags after `atom` (a new list)."""
    if not atom.startswith("<") or len(atom) < 3:
        return open_tags
    match = _TAG_NAME.match(atom)
    if match is None:
        return open_tags
    name = match.group(1).lower()
    if atom.startswith("</"):
        for i in range(len(open_tags) - 1, -1, -1):
            if _name(open_tags[i]) == name:
                return open_tags[:i] + open_tags[i + 1:]
        return open_tags
    if atom.endswith("/>"):
        return open_tags
    return [*open_tags, atom]


def _name(tag: str) -> str:
    match = _TAG_NAME.match(tag)
    return match.group(1).lower() if match else ""


def _closing(stack: tuple[str, ...]) -> str:
    return "".join(f"</{_name(tag)}>" for tag in reversed(stack))
