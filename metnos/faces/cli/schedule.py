"""`metnos schedule [list|add|remove]`: the owner's scheduled tasks (SPEC §12).

A client of the running gateway (`/api/schedules`): a task added here is in the database and
in Prefect (deployment `owner-task/scheduled`, one schedule per task) at once, visible in the
Prefect UI with its next run. `when` is a cron expression or the everyday form
("every Monday at 8", "ogni lunedì alle 8"); `what` is a message Metnos runs as a turn from
the owner then, its reply delivered to the preferred channel.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from metnos.faces.cli._common import call_or_exit, rows_to_show, run_alone, settings_or_exit
from metnos.faces.cli._lang import cli_lang, msg
from metnos.faces.cli._out import echo, echo_json
from metnos.faces.cli._table import local_time, print_table

app = typer.Typer(help=msg("CLI_SCHEDULE_HELP"), invoke_without_command=True)
_JSON = typer.Option(False, "--json", help=msg("CLI_JSON_HELP"))
_ALL = Annotated[bool, typer.Option("--all", help=msg("CLI_SCHEDULE_ALL_HELP"))]


def _whose(user_id: str) -> str:
    return msg("MSG_SCHEDULE_WHO_OWNER") if user_id == "owner" else user_id


@app.command("list", help=msg("CLI_SCHEDULE_LIST_HELP"))
def list_(as_json: bool = _JSON, every: _ALL = False) -> None:
    data = call_or_exit("GET", "/api/schedules", params={"all": "true"} if every else None)
    rows: list[dict[str, Any]] = data.get("schedules", [])
    if not rows_to_show(rows, as_json, "MSG_SCHEDULE_NONE", whole=data):
        return
    settings = settings_or_exit()
    headers = [msg(k) for k in ("CLI_COL_ID", "CLI_COL_SCHEDULE_WHEN", "CLI_COL_SCHEDULE_CRON",
                                "CLI_COL_SCHEDULE_TEXT", "CLI_COL_SCHEDULE_NEXT")]
    table = [[r["id"], r["when"], f"{r['cron']} ({r['timezone']})", r["text"],
              local_time(r.get("next_run"), settings)] for r in rows]
    if every:  # whose each task is: the owner's, or a paired member's
        headers.insert(1, msg("CLI_COL_SCHEDULE_WHO"))
        for row, r in zip(table, rows, strict=True):
            row.insert(1, _whose(str(r.get("user_id", ""))))
    print_table(headers, table)


run_alone(app, list_)


@app.command(help=msg("CLI_SCHEDULE_ADD_HELP"))
def add(when: str = typer.Argument(..., help=msg("CLI_SCHEDULE_WHEN_HELP")),
        what: str = typer.Argument(..., help=msg("CLI_SCHEDULE_WHAT_HELP")),
        channel: str | None = typer.Option(None, "--channel",
                                           help=msg("CLI_SCHEDULE_CHANNEL_HELP")),
        as_json: bool = _JSON) -> None:
    body: dict[str, Any] = {"when": when, "text": what, "lang": cli_lang()}
    if channel:
        body["channel"] = channel
    data = call_or_exit("POST", "/api/schedules", body=body)
    if as_json:
        echo_json(data)
        return
    row = data["schedule"]
    echo(msg("MSG_SCHEDULE_ADDED", id=row["id"], when=row["when"], cron=row["cron"],
             timezone=row["timezone"]))
    if not data.get("in_prefect"):
        echo(msg("MSG_SCHEDULE_NOT_IN_PREFECT"))


@app.command(help=msg("CLI_SCHEDULE_REMOVE_HELP"))
def remove(task_id: str = typer.Argument(..., help=msg("CLI_SCHEDULE_ID_HELP")),
           as_json: bool = _JSON) -> None:
    data = call_or_exit("DELETE", f"/api/schedules/{task_id}")
    if as_json:
        echo_json(data)
        return
    echo(msg("MSG_SCHEDULE_REMOVED", id=data["removed"]))
