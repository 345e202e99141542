"""`metnos trash` and `metnos trash purge`: what is kept so changes can be undone (SPEC §5).

`metnos trash` lists the changes whose copies are kept (oldest first) and how much they take;
`metnos trash purge` clears them all, those older than `--older-than` days, or one by its
handle. A change cleared can no longer be undone; each clearing leaves an audit line. The
retention policy (`[trash] max_age_days`, `max_bytes`) does the same by itself.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from metnos.faces.cli._common import call_or_exit, run_alone, settings_or_exit, show_answer
from metnos.faces.cli._lang import cli_lang, msg
from metnos.faces.cli._out import echo, echo_json
from metnos.faces.cli._table import local_time, print_table
from metnos.turns.trash import size_words

app = typer.Typer(help=msg("CLI_TRASH_HELP"), invoke_without_command=True)
_JSON = typer.Option(False, "--json", help=msg("CLI_JSON_HELP"))


@app.command("list", help=msg("CLI_TRASH_LIST_HELP"))
def list_(as_json: bool = _JSON) -> None:
    data = call_or_exit("GET", "/api/trash")
    if as_json:
        echo_json(data)
        return
    lang = cli_lang()
    items: list[dict[str, Any]] = data.get("items", [])
    if items:
        settings = settings_or_exit()
        headers = [msg(k) for k in ("CLI_COL_TRASH_HANDLE", "CLI_COL_TRASH_WHEN",
                                    "CLI_COL_TRASH_SIZE")]
        print_table(headers, [[i["handle"], local_time(i["created_at"], settings),
                               size_words(int(i["size"]), lang)] for i in items])
    echo(msg("MSG_TRASH_TOTAL", count=len(items), size=size_words(int(data["total_bytes"]), lang),
             days=f"{data['max_age_days']:g}", limit=size_words(int(data["max_bytes"]), lang)))


@app.command(help=msg("CLI_TRASH_PURGE_HELP"))
def purge(
    handle: Annotated[str | None, typer.Argument(help=msg("CLI_TRASH_HANDLE_HELP"))] = None,
    older_than: Annotated[float | None, typer.Option(
        "--older-than", min=0, max=36500, help=msg("CLI_TRASH_OLDER_HELP"))] = None,
    as_json: bool = _JSON,
) -> None:
    body: dict[str, Any] = {"handle": handle, "older_than_days": older_than}
    data = call_or_exit("POST", "/api/trash/purge", body=body)
    show_answer(data, as_json, str(data.get("message", "")))


run_alone(app, list_)
