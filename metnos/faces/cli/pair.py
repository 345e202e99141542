"""`metnos pair list|approve CODE|revoke CHANNEL SENDER_ID|drop CHANNEL SENDER_ID|drop --all`:
DM pairing, through the gateway.

The CLI never touches the pairing tables itself: the running instance applies the rules
(lock-out, expiry, the audit line) and the CLI is one more client with the owner token.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from metnos.faces.cli._common import (
    JsonFlag,
    call_or_exit,
    rows_to_show,
    settings_or_exit,
    show_answer,
)
from metnos.faces.cli._lang import msg
from metnos.faces.cli._table import local_time, print_table

app = typer.Typer(help=msg("CLI_PAIR_HELP"), no_args_is_help=True)


def _call(method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    return call_or_exit(method, path, body=body, timeout_s=30.0)


@app.command("list", help=msg("CLI_PAIR_LIST_HELP"))
def list_cmd(as_json: JsonFlag = False) -> None:
    data = _call("GET", "/api/pairing")
    if not rows_to_show(data["pending"] + data["paired"], as_json, "MSG_PAIRING_NOTHING",
                        whole=data):
        return
    settings = settings_or_exit()
    if data["pending"]:
        print_table([msg(k) for k in ("CLI_COL_CHANNEL", "CLI_COL_SENDER", "CLI_COL_ASKED",
                                      "CLI_COL_EXPIRES")],
                    [[row["channel"], row["sender_id"], local_time(row["created_at"], settings),
                      local_time(row["expires_at"], settings)] for row in data["pending"]],
                    title=msg("MSG_PAIRING_PENDING_TITLE"))
    if data["paired"]:
        print_table([msg(k) for k in ("CLI_COL_CHANNEL", "CLI_COL_SENDER", "CLI_COL_ROLE",
                                      "CLI_COL_USER", "CLI_COL_APPROVED")],
                    [[row["channel"], row["sender_id"], row["role"], row["user_id"],
                      local_time(row["approved_at"], settings)] for row in data["paired"]],
                    title=msg("MSG_PAIRING_PAIRED_TITLE"))


Person = Annotated[str | None, typer.Option("--person", help=msg("CLI_PAIR_PERSON_HELP"))]


@app.command("approve", help=msg("CLI_PAIR_APPROVE_HELP"))
def approve_cmd(
    code: Annotated[str, typer.Argument(help=msg("CLI_PAIR_CODE_HELP"))],
    person: Person = None,
    as_json: JsonFlag = False,
) -> None:
    body: dict[str, Any] = {"code": code, **({"person": person} if person else {})}
    show_answer(_call("POST", "/api/pairing/approve", body), as_json)


@app.command("revoke", help=msg("CLI_PAIR_REVOKE_HELP"))
def revoke_cmd(
    channel: Annotated[str, typer.Argument(help=msg("CLI_PAIR_CHANNEL_HELP"))],
    sender_id: Annotated[str, typer.Argument(help=msg("CLI_PAIR_SENDER_HELP"))],
    as_json: JsonFlag = False,
) -> None:
    show_answer(_call("POST", "/api/pairing/revoke", {"channel": channel, "sender_id": sender_id}),
                as_json)


@app.command("drop", help=msg("CLI_PAIR_DROP_HELP"))
def drop_cmd(
    channel: Annotated[str | None, typer.Argument(help=msg("CLI_PAIR_CHANNEL_HELP"))] = None,
    sender_id: Annotated[str | None, typer.Argument(help=msg("CLI_PAIR_SENDER_HELP"))] = None,
    every: Annotated[bool, typer.Option("--all", help=msg("CLI_PAIR_DROP_ALL_HELP"))] = False,
    as_json: JsonFlag = False,
) -> None:
    body: dict[str, Any] = ({"all": True} if every
                            else {"channel": channel, "sender_id": sender_id})
    show_answer(_call("POST", "/api/pairing/drop", body), as_json)
