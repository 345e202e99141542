"""`metnos devices list|approve CODE [--person P]|add NAME --address A [--person P]|token ID|
revoke ID`: the family's devices on the overlay, through the gateway (issue 30). A device's
code is approved like any pairing code; an app's device (no browser for the ceremony) is added
by the owner and gets a token; revoking one refuses it at its next request and closes its
open chats."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from metnos.faces.cli._common import JsonFlag, rows_to_show, settings_or_exit, show_answer
from metnos.faces.cli._lang import msg
from metnos.faces.cli._table import local_time, print_table
from metnos.faces.cli.pair import Person, _call, approve_cmd

app = typer.Typer(help=msg("CLI_DEVICES_HELP"), no_args_is_help=True)
_STATES = {"admitted": "MSG_DEVICE_STATE_ADMITTED", "waiting": "MSG_DEVICE_STATE_WAITING",
           "revoked": "MSG_DEVICE_STATE_REVOKED"}


@app.command("list", help=msg("CLI_DEVICES_LIST_HELP"))
def list_cmd(as_json: JsonFlag = False) -> None:
    data = _call("GET", "/api/devices")
    found = data["devices"]
    if not rows_to_show(found, as_json, "MSG_DEVICES_NOTHING", whole=data):
        return
    settings = settings_or_exit()
    print_table([msg(k) for k in ("CLI_COL_DEVICE", "CLI_COL_LABEL", "CLI_COL_USER",
                                  "CLI_COL_ROLE", "CLI_COL_ADDRESS", "CLI_COL_STATE",
                                  "CLI_COL_SEEN")],
                [[row["device_id"], row["label"], row["user_id"] or "-", row["role"] or "-",
                  row["address"], msg(_STATES.get(row["state"], "MSG_DEVICE_STATE_REVOKED")),
                  local_time(row["last_seen_at"], settings) if row["last_seen_at"] else "-"]
                 for row in found])


@app.command("approve", help=msg("CLI_DEVICES_APPROVE_HELP"))
def approve(
    code: Annotated[str, typer.Argument(help=msg("CLI_PAIR_CODE_HELP"))],
    person: Person = None,
    as_json: JsonFlag = False,
) -> None:
    approve_cmd(code, person, as_json)


@app.command("add", help=msg("CLI_DEVICES_ADD_HELP"))
def add(
    label: Annotated[str, typer.Argument(help=msg("CLI_DEVICE_LABEL_HELP"))],
    address: Annotated[str, typer.Option("--address", help=msg("CLI_DEVICE_ADDRESS_HELP"))],
    person: Person = None,
    as_json: JsonFlag = False,
) -> None:
    body = {"label": label, "address": address, **({"person": person} if person else {})}
    _show_token(_call("POST", "/api/devices", body), as_json)


@app.command("token", help=msg("CLI_DEVICES_TOKEN_HELP"))
def token(
    device_id: Annotated[str, typer.Argument(help=msg("CLI_DEVICE_ID_HELP"))],
    as_json: JsonFlag = False,
) -> None:
    _show_token(_call("GET", f"/api/devices/{device_id}/token"), as_json)


def _show_token(data: dict[str, Any], as_json: bool) -> None:
    show_answer(data, as_json, text=f"{data['message']}\n{data['token']}")


@app.command("revoke", help=msg("CLI_DEVICES_REVOKE_HELP"))
def revoke(
    device_id: Annotated[str, typer.Argument(help=msg("CLI_DEVICE_ID_HELP"))],
    as_json: JsonFlag = False,
) -> None:
    show_answer(_call("POST", f"/api/devices/{device_id}/revoke", {}), as_json)
