"""A stand-in for a translating model, behind the scripted LLM server (the LLM edge).

`fake_translation(body)` answers a request made with the `translator` prompt: it marks every
prose line or value with the target language (`[fr] ...`), keeps Jinja constructs, HTML tags,
markdown markers, `{name}` placeholders, whitespace and JSON shapes, as a good translator
would. Word data (a TOML payload, the `lexicon` kind) is answered from the reviewed
translations kept in `tests/support/translations/<lang>/lexicon/` when there is one for that
file, else with the same words under a line naming the language. Other requests get None (the
scripted server then answers from its queue).
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

from metnos.paths import repo_root

_CODES = re.compile(r"\(`([A-Za-z]{2,3}(?:-[A-Za-z0-9]+)*)`\)")
_EDGES = re.compile(r"^(\s*)(.*?)(\s*)$", re.DOTALL)


def target_of(body: dict[str, Any]) -> str | None:
    """The target language of a translator request (the second `(code)` of its prompt)."""
    system = next((str(m.get("content")) for m in body.get("messages", [])
                   if m.get("role") == "system"), "")
    codes = _CODES.findall(system)
    return codes[1] if len(codes) >= 2 else None


def fake_translation(body: dict[str, Any]) -> str | None:
    target = target_of(body)
    if target is None:
        return None
    user = next(str(m.get("content")) for m in body["messages"] if m.get("role") == "user")
    try:
        data = json.loads(user)
    except ValueError:
        if _toml(user) is not None:
            return _lexicon(user, target)
        return "".join(_line(line, target) for line in user.splitlines(keepends=True))
    if "description" in data and "affinity" in data:
        return json.dumps({"description": _mark(data["description"], target),
                           "affinity": [f"{word}-{target}" for word in data["affinity"]]},
                          ensure_ascii=False)
    return json.dumps({key: ({form: _mark(text, target) for form, text in value.items()}
                             if isinstance(value, dict) else _mark(value, target))
                       for key, value in data.items()}, ensure_ascii=False)


def _mark(text: str, target: str) -> str:
    match = _EDGES.match(text)
    assert match is not None
    lead, core, trail = match.groups()
    return f"{lead}[{target}] {core}{trail}" if core else text


def _line(line: str, target: str) -> str:
    """One line of a template or document: its first stretch of prose outside any Jinja
    construct, HTML tag, code span or markdown marker gets the mark."""
    body = line.rstrip("\n")
    for piece in _PIECES.finditer(body):
        if piece.group("prose") and _LETTER.search(piece.group("prose")):
            lead = len(piece.group("prose")) - len(piece.group("prose").lstrip())
            at = piece.start() + lead
            return f"{body[:at]}[{target}] {body[at:]}" + line[len(body):]
    return line


_PIECES = re.compile(r"(?P<skip>\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}|<[^>]*>|`[^`]*`|\{[^{}]*\}"
                     r"|^\s*(?:#{1,6}\s|[-*•]\s|\d+[.)]\s))|(?P<prose>[^{<`]+|[{<`])")
_LETTER = re.compile(r"[^\W\d_]")
_MEMORY = Path(__file__).with_name("translations")


def _toml(text: str) -> dict[str, Any] | None:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None
    return data if data else None


def _lexicon(source: str, target: str) -> str:
    """A lexicon file: the reviewed one when the memory has it, else the same words."""
    for path in sorted(repo_root().glob("lexicon/*/*.toml")):
        if path.read_text(encoding="utf-8") == source:
            kept = _MEMORY / target / "lexicon" / path.name
            if kept.is_file():
                return kept.read_text(encoding="utf-8")
    return f"# [{target}] (the same words as the source)\n{source}"
