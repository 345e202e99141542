"""`metnos proposals [list|accept|dismiss|silent|telos]`: what Metnos proposed on its own.

A client of the running gateway (`/api/proposals`), so an answer goes through the same checks
and audit line as the web chat's card and Telegram's buttons. `metnos proposals` alone lists
the proposals waiting for an answer; `silent` prints the register of proposals not made, with
their alignment, score and reason, so a person can see whether the aims weighed as meant.
"""

from __future__ import annotations

from typing import Any

import typer

from metnos.faces.cli._common import call_or_exit, rows_to_show, settings_or_exit
from metnos.faces.cli._lang import msg
from metnos.faces.cli._out import echo, echo_json
from metnos.faces.cli._table import NONE, local_time, print_table, word

app = typer.Typer(help=msg("CLI_PROPOSALS_HELP"), invoke_without_command=True)
_JSON = typer.Option(False, "--json", help=msg("CLI_JSON_HELP"))
_ID = typer.Argument(..., help=msg("CLI_PROPOSALS_ID_HELP"))



@app.callback()
def main(ctx: typer.Context, show_all: bool = typer.Option(
        False, "--all", help=msg("CLI_PROPOSALS_ALL_HELP")), as_json: bool = _JSON) -> None:
    if ctx.invoked_subcommand is None:
        list_(show_all, as_json)


@app.command("list", help=msg("CLI_PROPOSALS_LIST_HELP"))
def list_(show_all: bool = typer.Option(False, "--all", help=msg("CLI_PROPOSALS_ALL_HELP")),
          as_json: bool = _JSON) -> None:
    data = call_or_exit("GET", "/api/proposals",
                        params={"status": "all" if show_all else "delivered"})
    rows: list[dict[str, Any]] = data.get("proposals", [])
    if not rows_to_show(rows, as_json, "MSG_PROPOSALS_NONE"):
        return
    settings = settings_or_exit()
    headers = [msg(k) for k in ("CLI_COL_ID", "CLI_COL_PROPOSAL", "CLI_COL_STATUS",
                                "CLI_COL_ASKED", "CLI_COL_SCORE")]
    print_table(headers, [[r["id"], r["text"], word("proposal", r["status"]),
                           local_time(r.get("delivered_at") or r.get("created_at"), settings),
                           _number(r.get("score"))] for r in rows])


@app.command(help=msg("CLI_PROPOSALS_ACCEPT_HELP"))
def accept(proposal_id: str = _ID, as_json: bool = _JSON) -> None:
    _answer(proposal_id, "accept", as_json)


@app.command(help=msg("CLI_PROPOSALS_DISMISS_HELP"))
def dismiss(proposal_id: str = _ID, as_json: bool = _JSON) -> None:
    _answer(proposal_id, "dismiss", as_json)


def _answer(proposal_id: str, answer: str, as_json: bool) -> None:
    data = call_or_exit("POST", f"/api/proposals/{proposal_id}/{answer}")
    row = data["proposal"]
    if as_json:
        echo_json(row)
        return
    echo(msg("MSG_PROPOSALS_DONE", id=row["id"], status=word("proposal", row["status"])))


@app.command(help=msg("CLI_PROPOSALS_SILENT_HELP"))
def silent(as_json: bool = _JSON) -> None:
    rows: list[dict[str, Any]] = call_or_exit("GET", "/api/proposals/silent").get("proposals", [])
    if not rows_to_show(rows, as_json, "MSG_PROPOSALS_SILENT_NONE"):
        return
    settings = settings_or_exit()
    headers = [msg(k) for k in ("CLI_COL_ID", "CLI_COL_PROPOSAL", "CLI_COL_ALIGNMENT",
                                "CLI_COL_SCORE", "CLI_COL_JUDGE", "CLI_COL_REASON",
                                "CLI_COL_TIME")]
    print_table(headers, [[r["id"], r["text"], _number(r.get("alignment")),
                           _number(r.get("score")), word("proposal_judge", r.get("judge")) or NONE,
                           r.get("reason_text") or NONE,
                           local_time(r.get("decided_at") or r.get("created_at"), settings)]
                          for r in rows])


@app.command(help=msg("CLI_PROPOSALS_TELOS_HELP"))
def telos(as_json: bool = _JSON) -> None:
    data = call_or_exit("GET", "/api/proposals/telos")
    if as_json:
        echo_json(data)
        return
    if data.get("warning"):
        echo(str(data["warning"]))
    print_table([msg("CLI_COL_SEQ"), msg("CLI_COL_AIM"), msg("CLI_COL_AIM_WEIGHT")],
                [[str(a["n"]), a["text"], _number(a["weight"])] for a in data.get("aims", [])])


def _number(value: Any) -> str:
    return NONE if value is None else f"{float(value):.2f}"
