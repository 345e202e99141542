"""What the CLI's lists share (issue 12): aligned tables with headers (rich, which typer
brings), words instead of keys, and times in the household's time zone.

`print_table` renders the table as plain text (no colours or markup) and writes it through
`metnos.faces.cli._out` to the current stdout (so `CliRunner` and pipes get it), never cutting a
cell: a long one wraps inside its column. Each cell is outside text, shown inert on its row
(issue 25).
"""

from __future__ import annotations

import io
import os
import re
import shutil
import string
import sys
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from metnos.faces.cli import _out as out
from metnos.faces.cli._lang import cli_lang
from metnos.ground import i18n
from metnos.ground.escape import terminal_line
from metnos.ground.i18n.words import status
from metnos.ground.settings import Settings

if TYPE_CHECKING:  # rich loads when a table is printed, not with every command
    from rich.text import Text

NONE = "—"
WIDTH = 200  # when stdout is no terminal and COLUMNS is not set
_KEY_RE = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$")


def print_table(headers: Sequence[str], rows: Iterable[Sequence[str]],
                title: str | None = None) -> None:
    """Every header, cell and the title are outside text for the terminal: each is made one
    inert row (`escape.terminal_line`) and given to rich as plain `Text` (no markup, no
    emoji codes, no highlighting), so a cell cannot break, erase or forge a row."""
    from rich import box
    from rich.console import Console
    from rich.table import Column, Table

    table = Table(*(Column(header=_cell(h)) for h in headers), box=box.SIMPLE_HEAD,
                  title=_cell(title) if title is not None else None, title_justify="left",
                  show_edge=False, pad_edge=False, highlight=False)
    for row in rows:
        table.add_row(*(_cell(cell) for cell in row))
    width = shutil.get_terminal_size((WIDTH, 24)).columns if sys.stdout.isatty() \
        else _columns()
    console = Console(file=io.StringIO(), width=width, color_system=None, highlight=False,
                      markup=False, emoji=False, soft_wrap=False)
    # rendered as plain text (styles dropped), then written by `_out` like everything else
    out.write("".join(segment.text for segment in console.render(table)))


def _cell(value: object) -> Text:
    from rich.text import Text

    return Text(terminal_line(str(value)))


def _columns() -> int:
    """A pipe's width: COLUMNS when set, else WIDTH."""
    value = os.environ.get("COLUMNS", "")
    return int(value) if value.isdigit() and int(value) > 20 else WIDTH


def local_time(value: str | None, settings: Settings, seconds: bool = False) -> str:
    """An ISO timestamp in the instance's time zone (`2026-12-01 09:31`); — for none."""
    if not value:
        return NONE
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return value
    local = moment.astimezone(settings.tz) if moment.tzinfo is not None else moment
    return local.strftime("%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M")


def word(kind: str, value: str | None) -> str:
    """The status word of `value` (`approval`, `used`) in the CLI's language."""
    return status(kind, value, cli_lang())


def words(value: str | None, lang: str | None = None, **known: str) -> str:
    """`value` as a person reads it: an i18n key becomes its message (placeholders the
    caller cannot fill show as …), anything else stays as it is."""
    if not value or not _KEY_RE.match(value):
        return value or ""
    lang = lang or cli_lang()
    template = i18n.lookup(value, lang) or i18n.lookup(value, i18n.FALLBACK_LANG)
    if template is None:
        return value
    text = template.get("other", "") if isinstance(template, dict) else template
    try:
        names = {name for _, name, _, _ in string.Formatter().parse(text) if name}
    except ValueError:
        names = set()
    filled = {name: known.get(name, "…") for name in names}
    if "action" in names and "action" not in known and "executor" in known:
        del filled["action"]  # i18n says what the step does from its executor
        filled["executor"] = known["executor"]
    return i18n.get(value, lang, **filled)
