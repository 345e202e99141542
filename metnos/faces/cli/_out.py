"""Everything the CLI writes to a terminal goes through here (issue 25): outside text (the
model's words, file names, tool names and their arguments, audit reasons, notices) is made
inert by `metnos.ground.escape` before it reaches stdout or stderr, so it cannot hide, move, erase,
recolour or reorder what the CLI shows, set a window title or write the clipboard.

- `echo` for text of any number of lines (`escape.terminal`: newlines and tabs kept),
  `echo_line` for what must stay one row (`escape.terminal_line`: ⏎ and ⇥ shown);
- `echo_json` for `--json` (the same JSON value, control and bidi characters as `\\u`);
- `write` for pieces without a newline (the streamed model text, a question);
- `status` for the rewritten status line and `reset` for the SGR reset written before an
  approval card and its question: the only sequences of the CLI's own.

Tables go through `metnos.faces.cli._table.print_table`, which escapes every cell the same way.
tests/test_architecture.py checks that no module of `metnos.faces.cli` writes any other way.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

from metnos.ground.escape import terminal, terminal_json, terminal_line

RESET = "\033[0m"  # SGR reset: default colours, visible text
ERASE_LINE = "\r\033[K"  # back to the start of the line, erase it


def echo(text: object = "", *, err: bool = False) -> None:
    """`text` and a newline; every line of it kept, nothing in it acting on the terminal."""
    _safe_write(terminal(str(text)) + "\n", err=err)


def echo_line(text: object, *, err: bool = False) -> None:
    """`text` on one row (a newline in it shows as ⏎) and a newline."""
    _safe_write(terminal_line(str(text)) + "\n", err=err)


def echo_json(data: Any, *, err: bool = False, **dumps: Any) -> None:
    """`data` as JSON (UTF-8 kept), one value, then a newline."""
    _safe_write(terminal_json(data, **dumps) + "\n", err=err)


def write(text: str, *, err: bool = False) -> str:
    """`text` with no newline added, flushed at once; what was written (`text` escaped)."""
    shown = terminal(text)
    if shown:
        _safe_write(shown, err=err)
    return shown


def status(text: str) -> None:
    """The status line on a terminal's stderr, rewritten in place (empty: erased)."""
    _safe_write(terminal_line(text), err=True, own=ERASE_LINE)


def reset(*, err: bool = False) -> None:
    """The terminal back to plain, visible text (only when the stream is a terminal)."""
    if _stream(err).isatty():
        _safe_write("", err=err, own=RESET)


def _safe_write(escaped: str, *, err: bool, own: str = "") -> None:
    """The one place the CLI writes: `escaped` is outside text already made inert by
    `metnos.ground.escape`; `own` is one of this module's constant sequences, written before it."""
    stream = _stream(err)
    stream.write(own + escaped)
    stream.flush()


def _stream(err: bool) -> TextIO:
    return sys.stderr if err else sys.stdout
