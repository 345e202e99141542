"""`metnos evolution history|undo|quarantine|release|archive|restore`: the evolutionary moves
from the terminal, through the running gateway (`/api/evolution`), so every move and refusal
goes through the same checks and audit line as any other surface."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import typer

from metnos.faces.cli._common import call_or_exit, rows_to_show, settings_or_exit, show_answer
from metnos.faces.cli._lang import msg
from metnos.faces.cli._table import NONE, local_time, print_table

app = typer.Typer(help=msg("CLI_EVOLUTION_HELP"), no_args_is_help=True)
_JSON = typer.Option(False, "--json", help=msg("CLI_JSON_HELP"))
_NAME = typer.Argument(..., help=msg("CLI_EVOLUTION_NAME_HELP"))
_WHY = typer.Option(..., "--why", help=msg("CLI_EVOLUTION_WHY_HELP"))


@app.command(help=msg("CLI_EVOLUTION_HISTORY_HELP"))
def history(limit: int = typer.Option(50, "--limit", min=1, max=1000,
                                      help=msg("CLI_EVOLUTION_LIMIT_HELP")),
            as_json: bool = _JSON) -> None:
    settings = settings_or_exit()
    data = call_or_exit("GET", "/api/evolution/moves", params={"limit": limit})
    rows: list[dict[str, Any]] = data.get("moves", [])
    if not rows_to_show(rows, as_json, "MSG_EVOLUTION_NONE"):
        return
    headers = [msg(k) for k in ("CLI_COL_ID", "CLI_EVOLUTION_COL_WHEN", "CLI_EVOLUTION_COL_MOVE",
                                "CLI_EVOLUTION_COL_TARGET", "CLI_EVOLUTION_COL_WHY",
                                "CLI_EVOLUTION_COL_UNDONE")]
    print_table(headers, [[row["id"], local_time(row.get("created_at"), settings),
                           row["kind_text"], row["target"], row["motivation"],
                           row.get("undone_by") or NONE] for row in rows])


@app.command(help=msg("CLI_EVOLUTION_UNDO_HELP"))
def undo(move_id: str = typer.Argument(..., help=msg("CLI_EVOLUTION_ID_HELP")),
         as_json: bool = _JSON) -> None:
    path = f"/api/evolution/moves/{quote(move_id, safe='')}/undo"
    show_answer(call_or_exit("POST", path), as_json)


def _owner_move(move: str) -> Callable[[str, str, bool], None]:
    """The command of one owner move on an executor: `metnos evolution MOVE NAME --why ...`."""
    def command(name: str = _NAME, why: str = _WHY, as_json: bool = _JSON) -> None:
        path = f"/api/evolution/executors/{quote(name, safe='')}/{move}"
        show_answer(call_or_exit("POST", path, body={"why": why}), as_json)
    return command


for _move, _help in (("quarantine", "CLI_EVOLUTION_QUARANTINE_HELP"),
                     ("release", "CLI_EVOLUTION_RELEASE_HELP"),
                     ("archive", "CLI_EVOLUTION_ARCHIVE_HELP"),
                     ("restore", "CLI_EVOLUTION_RESTORE_HELP")):
    app.command(_move, help=msg(_help))(_owner_move(_move))

