"""Arguments from a hassil match: closed slot values as they are, wildcard text taken from the
user's original words (unquoted, a number for a numeric input, a list for an array input)."""

from __future__ import annotations

from typing import Any

from hassil import RecognizeResult

from metnos.mechanisms.llm import household
from metnos.mechanisms.llm.tools import ToolSpec

QUOTES = {'"': '"', "'": "'", "“": "”", "‘": "’", "«": "»", "„": "“"}


def fill(result: RecognizeResult, original: str, tool: ToolSpec, lang: str) -> dict[str, Any]:
    """The step's arguments: `original` is the user's text (same length as the matched one)."""
    props = tool.parameters.get("properties", {}) if isinstance(tool.parameters, dict) else {}
    args: dict[str, Any] = {}
    for name, entity in result.entities.items():
        if not entity.is_wildcard:
            args[name] = entity.value
            continue
        span = entity.text_span
        raw = original[span[0] : span[1]] if span else str(entity.value)
        schema = props.get(name, {})
        if isinstance(schema, dict) and schema.get("type") == "array":
            # items closed by the sentence's own words ("X and Y to the list") are a list;
            # free text running to its end ("remind me to X and Y") is one item
            whole = span is not None and not original[span[1]:].strip(" ?!.…")
            value = unquote(raw)
            args[name] = [value] if whole and value else household.items_of(value, lang)
        else:
            args[name] = coerce(unquote(raw), schema)
    return args


def unquote(text: str) -> str:
    text = text.strip()
    while len(text) >= 2 and QUOTES.get(text[0]) == text[-1]:
        text = text[1:-1].strip()
    return text


def coerce(text: str, schema: dict[str, Any]) -> Any:
    """Wildcards capture text; an integer/number parameter gets a number when it parses."""
    kind = schema.get("type") if isinstance(schema, dict) else None
    try:
        if kind == "integer":
            return int(text)
        if kind == "number":
            return float(text.replace(",", "."))
    except ValueError:
        return text
    return text


def path_like(text: str) -> bool:
    """Quoted, or with a `.` or `/`, or one word: several bare words name no file."""
    text = text.strip()
    quoted = len(text) >= 2 and QUOTES.get(text[0]) == text[-1]
    return quoted or "/" in text or "." in text or len(text.split()) == 1
