"""`metnos evolution history|undo|quarantine|release|archive|restore`: the evolutionary moves
from the terminal, through the running gateway (`/api/evolution`), so every move and refusal
goes through the same checks and audit line as any other surface."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import typer

from metnos.cli._client import api_call
from metnos.cli._common import exit_with, settings_or_exit
from metnos.cli._lang import msg
from metnos.cli._out import echo, echo_json
from metnos.cli._table import NONE, local_time, print_table
from metnos.errors import MetnosError

app = typer.Typer(help=msg("CLI_EVOLUTION_HELP"), no_args_is_help=True)
_JSON = typer.Option(False, "--json", help=msg("CLI_JSON_HELP"))
_NAME = typer.Argument(..., help=msg("CLI_EVOLUTION_NAME_HELP"))
_WHY = typer.Option(..., "--why", help=msg("CLI_EVOLUTION_WHY_HELP"))


@app.command(help=msg("CLI_EVOLUTION_HISTORY_HELP"))
def history(limit: int = typer.Option(50, "--limit", min=1, max=1000,
                                      help=msg("CLI_EVOLUTION_LIMIT_HELP")),
            as_json: bool = _JSON) -> None:
    settings = settings_or_exit()
    data = _call("GET", "/api/evolution/moves", params={"limit": limit})
    rows: list[dict[str, Any]] = data.get("moves", [])
    if as_json:
        echo_json(rows)
        return
    if not rows:
        echo(msg("MSG_EVOLUTION_NONE"))
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
    _show(_call("POST", f"/api/evolution/moves/{quote(move_id, safe='')}/undo"), as_json)


@app.command(help=msg("CLI_EVOLUTION_QUARANTINE_HELP"))
def quarantine(name: str = _NAME, why: str = _WHY, as_json: bool = _JSON) -> None:
    _owner_move(name, "quarantine", why, as_json)


@app.command(help=msg("CLI_EVOLUTION_RELEASE_HELP"))
def release(name: str = _NAME, why: str = _WHY, as_json: bool = _JSON) -> None:
    _owner_move(name, "release", why, as_json)


@app.command(help=msg("CLI_EVOLUTION_ARCHIVE_HELP"))
def archive(name: str = _NAME, why: str = _WHY, as_json: bool = _JSON) -> None:
    _owner_move(name, "archive", why, as_json)


@app.command(help=msg("CLI_EVOLUTION_RESTORE_HELP"))
def restore(name: str = _NAME, why: str = _WHY, as_json: bool = _JSON) -> None:
    _owner_move(name, "restore", why, as_json)


def _owner_move(name: str, move: str, why: str, as_json: bool) -> None:
    path = f"/api/evolution/executors/{quote(name, safe='')}/{move}"
    _show(_call("POST", path, body={"why": why}), as_json)


def _call(method: str, path: str, **kwargs: Any) -> dict[str, Any]:
    try:
        return api_call(settings_or_exit(), method, path, **kwargs)
    except MetnosError as exc:
        exit_with(exc)
        raise typer.Exit(1) from exc  # exit_with exits; this keeps the types honest


def _show(data: dict[str, Any], as_json: bool) -> None:
    if as_json:
        echo_json(data)
    else:
        echo(str(data["message"]))
