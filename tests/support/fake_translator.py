"""A stand-in for a translating model, behind the scripted LLM server (the LLM edge).

`fake_translation(body)` answers a request made with the `translator` prompt: it marks every
prose line or value with the target language (`[fr] ...`), keeps Jinja constructs, `{name}`
placeholders, whitespace and JSON shapes, as a good translator would. Other requests get None
(the scripted server then answers from its queue).
"""

from __future__ import annotations

import json
import re
from typing import Any

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
    if not line.strip() or any(ch in line for ch in "{}<>`"):
        return line
    body = line.rstrip("\n")
    return _mark(body, target) + line[len(body):]
