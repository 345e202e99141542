"""Normalised text and its hash (SPEC §9.4): reformatting is never an edit.

Before hashing: the autofixes of the checks (a BOM, zero-width spaces, control characters),
NFC, `\\r\\n` and `\\r` → `\\n`, trailing spaces on each line and trailing blank lines dropped.
Structured values (an affinity list, a TOML table of plural forms) hash as canonical JSON of
their normalised strings, so key order and quoting styles do not matter either.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from typing import Any

# U+200B zero-width space, U+2060 word joiner, U+FEFF BOM / zero-width no-break space.
# Joiners U+200C/U+200D stay: emoji sequences and Persian need them.
ZERO_WIDTH = "\u200b\u2060\ufeff"
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f" + ZERO_WIDTH + "]")
_TRAILING_SPACE = re.compile(r"[ \t]+$", re.MULTILINE)


def autofix(text: str) -> str:
    """Remove what no translation should carry: control and zero-width characters; NFC."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return unicodedata.normalize("NFC", _CONTROL.sub("", text))


def normalise(text: str) -> str:
    """The form that is hashed: `autofix`, no trailing spaces, no trailing blank lines."""
    return _TRAILING_SPACE.sub("", autofix(text)).rstrip("\n")


def text_hash(text: str) -> str:
    """SHA-256 (hex) of the normalised text."""
    return hashlib.sha256(normalise(text).encode("utf-8")).hexdigest()


def canonical(value: Any) -> Any:
    """`value` with every string normalised (dict keys too), for hashing structured text."""
    if isinstance(value, str):
        return normalise(value)
    if isinstance(value, dict):
        return {normalise(str(k)): canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [canonical(v) for v in value]
    return value


def value_hash(value: Any) -> str:
    """SHA-256 of a string, or of the canonical JSON of a structured value."""
    if isinstance(value, str):
        return text_hash(value)
    body = json.dumps(canonical(value), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(body.encode("utf-8")).hexdigest()
