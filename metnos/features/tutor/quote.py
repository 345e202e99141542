"""What an extractive answer may quote from a section: whole sentences of its prose (issue 27).

A section's text is markdown. Its fenced code blocks, tables and headings are never quoted as
prose (a code block's lines are not sentences, and its sample output carries ids and raw
timestamps); a paragraph's lines are joined, then cut where a sentence ends: `.`, `!` or `?`
followed by a sentence's start (a piece that starts in lower case continues the sentence before
it: "e.g. the", "i.e. a"). A list item is a unit of its own, quoted as an item. A unit showing a
raw timestamp is left out: a family member reads dates in words, and the docs' timestamps are
samples. A last unit that does not end as a sentence or an item does was cut where a long
section was split into chunks: it is left out too. The command a section names (`metnos …`,
inline or in a code block) is found apart, so an answer can carry it when none of its quoted
sentences does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from metnos.features.tutor.sections import FENCE, paragraphs

_END = re.compile(r"(?<=[.!?])\s+")
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_TIMESTAMP = re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{1,2}:\d{2}(?::\d{2})?\S*)?")
_INLINE_COMMAND = re.compile(r"`((?:\.venv/bin/)?metnos(?:-[a-z]+)?\s+[a-z][^`\n]*)`")
_SHELL_LINE = re.compile(r"^\s*(?:\$\s+)?(?:\.venv/bin/)?(metnos(?:-[a-z]+)?\s+[a-z][^#\n]*)")
# a link to another page of the docs by its file ("[languages](languages.md)", "(#undo)"):
# it leads nowhere in a chat, so its words are quoted without it (the sources line links)
_RELATIVE_LINK = re.compile(r"\[([^\]\n]+)\]\((?!https?://|/)[^)\s]*\)")
_CLOSED = (".", "!", "?", ":", ";", ",", ")", "…")


@dataclass(frozen=True)
class Unit:
    text: str
    item: bool = False  # a list item: quoted on its own line, as an item


def units(text: str) -> list[Unit]:
    """The quotable sentences and list items of a section's text, in order."""
    out: list[Unit] = []
    for para in paragraphs(text):
        first = para.lstrip()
        if FENCE.match(first) or first.startswith(("|", "#", "<!--")):
            continue
        for block, item in _items(para):
            for sentence in ([block] if item else _split(block)):
                if sentence and not _TIMESTAMP.search(sentence):
                    out.append(Unit(_RELATIVE_LINK.sub(r"\1", sentence), item))
    if out and not out[-1].text.rstrip("*_`\"'»”").endswith(_CLOSED):
        out.pop()  # cut where a long section was split: the rest is in the next chunk
    return out


def _items(para: str) -> list[tuple[str, bool]]:
    """A paragraph as prose, or as its list items (an item's wrapped lines joined)."""
    lines = para.splitlines()
    if not _ITEM.match(lines[0]):
        return [(" ".join(line.strip() for line in lines), False)]
    items: list[list[str]] = []
    for line in lines:
        if _ITEM.match(line) or not items:
            items.append([_ITEM.sub("", line, count=1).strip()])
        else:
            items[-1].append(line.strip())
    return [(" ".join(parts), True) for parts in items]


def _split(prose: str) -> list[str]:
    out: list[str] = []
    for piece in _END.split(prose.strip()):
        head = piece.lstrip("*_\"'«“(")[:1]
        if head and not (head.isupper() or head.isdigit() or head in "`["):
            if out:  # "e.g. the …": the same sentence
                out[-1] = f"{out[-1]} {piece}"
            continue  # else the tail of a sentence cut off before this chunk: not quoted
        out.append(piece)
    return [s.strip() for s in out if s.strip()]


def command(text: str) -> str | None:
    """The first `metnos` command the section names: inline code or a code block's line."""
    found: list[tuple[int, str]] = []
    match = _INLINE_COMMAND.search(text)
    if match:
        found.append((match.start(), match.group(1)))
    offset, fenced = 0, False
    for line in text.splitlines(keepends=True):
        if FENCE.match(line):
            fenced = not fenced
        elif fenced:
            shell = _SHELL_LINE.match(line)
            if shell:
                found.append((offset, shell.group(1).strip()))
                break
        offset += len(line)
    if not found:
        return None
    cmd = min(found)[1].removeprefix(".venv/bin/")
    return cmd if not _TIMESTAMP.search(cmd) else None
