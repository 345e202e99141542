"""Outside text made safe for the surface it lands on: one module, every surface.

Text from the model, files, file names, list items, web pages, mail, tool names and their
arguments is data. Whatever it contains, it must not act on the surface that shows it:

- a **terminal** (`terminal`, `terminal_line`): C0 and C1 control characters (ESC and with it
  every CSI/OSC sequence: hidden text, clear screen, erase line, window titles, OSC 52
  clipboard writes; carriage return, backspace, bell, DEL) are removed, escape sequences whole
  so no parameter bytes are left behind; bidi embeddings, overrides and isolates
  (U+202A–202E, U+2066–2069) are removed, so text cannot be shown in another order than it
  runs; U+2028/U+2029 become newlines. `terminal_line` also shows a newline and a tab as `⏎`
  and `⇥`, for a table cell or a log row that must stay one row; `terminal_json` is JSON
  whose strings carry those characters only as `\\u` escapes (`--json` on a terminal).
- **markdown** (`markdown_text`, `markdown_code`, `markdown_block`): free text has every ASCII
  punctuation character backslash-escaped (CommonMark allows it for all of them), so no link,
  image, autolink, raw HTML, entity, emphasis, heading, list or table can come from data;
  values shown as code go into a code span or a fenced block whose fence is longer than any
  run of backticks inside, where nothing is interpreted.
- **HTML** (the web chat, Telegram's HTML parse mode): Jinja's autoescaping and
  `html.escape` stay the escaping there; `html_text` is that same escaping for code that
  builds HTML by hand.

The web and Telegram keep their own escaping; this module is what the CLI, Rich tables, the
Prefect UI's markdown (pause descriptions, artifacts) and run names use.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any

__all__ = [
    "html_text",
    "markdown_block",
    "markdown_code",
    "markdown_text",
    "terminal",
    "terminal_json",
    "terminal_line",
]

# ESC-introduced sequences, removed whole: CSI (ESC [ ... final), OSC/DCS/SOS/PM/APC strings
# (ESC ] ... BEL or ST), and two-byte escapes (ESC plus one character). A string without its
# terminator loses only its introducer: the text after it stays visible (a terminal would
# have swallowed it), and what is left of the sequence is inert text.
_ESCAPE_SEQUENCE = re.compile(
    r"\x1b\[[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]?"
    r"|\x1b[\]PX^_][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)"
    r"|\x1b[\x20-\x7e]?"
    # the same introduced by the 8-bit C1 forms (CSI U+009B, OSC U+009D, DCS U+0090, ...)
    r"|\x9b[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]?"
    r"|[\x90\x98\x9d\x9e\x9f][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)"
)
# what is left: C0 but tab and newline, DEL, C1
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# bidi embeddings, overrides and isolates: text shown in another order than it runs
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")
_LINE_SEPARATORS = re.compile("[\u2028\u2029\u0085]")
# in JSON for a terminal: what `terminal` would remove, as \u escapes (JSON escapes C0 itself)
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
_MD_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")
_BACKTICKS = re.compile(r"`+")


def terminal(text: str) -> str:
    """`text` as a terminal may show it: no control sequence, no reordering; newlines and
    tabs kept."""
    text = _LINE_SEPARATORS.sub("\n", text.replace("\r\n", "\n"))
    text = _ESCAPE_SEQUENCE.sub("", text)
    return _BIDI.sub("", _CONTROL.sub("", text))


def terminal_line(text: str) -> str:
    """`terminal(text)` on one line: a newline shows as `⏎`, a tab as `⇥`."""
    return terminal(text).replace("\n", "⏎").replace("\t", "⇥")


def terminal_json(data: Any, **dumps: Any) -> str:
    """`json.dumps(data, ensure_ascii=False, **dumps)` for a terminal: the same JSON value,
    with every control, C1, bidi and line-separator character written as a `\\u` escape."""
    text = json.dumps(data, ensure_ascii=False, **dumps)
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def markdown_text(text: str) -> str:
    """`text` as literal markdown prose: every ASCII punctuation character escaped, newlines
    kept as hard line breaks so a line cannot open a block of its own, each line trimmed (no
    indented code block) and the blank lines around the text dropped (no break outside it)."""
    clean = _plain(text).strip()
    lines = [_MD_PUNCTUATION.sub(r"\\\1", line) for line in clean.split("\n")]
    return "\\\n".join(line.strip() for line in lines)


def markdown_code(text: str) -> str:
    """`text` in an inline code span (one line: newlines show as `⏎`), nothing interpreted."""
    clean = _plain(text).replace("\n", "⏎").replace("\t", " ")
    fence = "`" * (_longest_backticks(clean) + 1)
    pad = " " if clean.startswith("`") or clean.endswith("`") or not clean.strip() else ""
    return f"{fence}{pad}{clean}{pad}{fence}"


def markdown_block(text: str) -> str:
    """`text` in a fenced code block (every line kept), nothing interpreted."""
    clean = _plain(text)
    fence = "`" * max(3, _longest_backticks(clean) + 1)
    return f"{fence}text\n{clean}\n{fence}"


def html_text(text: str) -> str:
    """`text` escaped for HTML content or a quoted attribute."""
    return html.escape(_BIDI.sub("", text), quote=True)


def _plain(text: str) -> str:
    """Terminal-safe and without the characters markdown would read as more than text."""
    return terminal(text).replace("\x00", "")


def _longest_backticks(text: str) -> int:
    return max((len(run) for run in _BACKTICKS.findall(text)), default=0)
