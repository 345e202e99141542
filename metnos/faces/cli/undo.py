"""`metnos undo [HANDLE]`: ask the running instance to undo a change.

HANDLE is the short handle a reply or `metnos undo --list` shows (any unique start of the
action's id, as git takes), or the whole id. Without one, the newest change that can still be
undone is named and, after a yes (or with `--yes`), undone. `--list` shows the recent changes
that can still be undone, with their handles, in plain words.
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import quote

import typer

from metnos.faces.cli._common import JsonFlag, call_or_exit
from metnos.faces.cli._lang import msg
from metnos.faces.cli._out import echo, echo_json, echo_line


def undo(
    action_id: Annotated[str | None, typer.Argument(help=msg("CLI_UNDO_HANDLE_ARG_HELP"))] = None,
    as_list: Annotated[bool, typer.Option("--list", help=msg("CLI_UNDO_LIST_HELP"))] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help=msg("CLI_UNDO_YES_HELP"))] = False,
    as_json: JsonFlag = False,
) -> None:
    """Undo a change; exit code 1 when it was refused or only partly done."""
    if as_list:
        _list(as_json)
        return
    if action_id is None:
        newest = call_or_exit("GET", "/api/actions/undoable", params={"limit": 1})
        recent = newest.get("actions", [])
        if not recent:
            echo(msg("MSG_UNDO_LIST_EMPTY"))
            raise typer.Exit(1)
        last = recent[0]
        echo_line(msg("MSG_UNDO_LAST_IS", handle=last["handle"], text=last["text"],
                      when=last["when"]))
        if not yes and not typer.confirm(msg("MSG_UNDO_CONFIRM"), default=False):
            echo(msg("MSG_UNDO_NOT_DONE"))
            return
        action_id = str(last["action_id"])
    report = call_or_exit("POST", f"/api/actions/{quote(action_id, safe='')}/undo")
    if as_json:
        echo_json(report)
    else:
        echo(str(report.get("message", "")))
    if report.get("outcome") != "done":
        raise typer.Exit(1)


def _list(as_json: bool) -> None:
    data = call_or_exit("GET", "/api/actions/undoable", params={"limit": 20})
    if as_json:
        echo_json(data)
        return
    actions = data.get("actions", [])
    if not actions:
        echo(msg("MSG_UNDO_LIST_EMPTY"))
        return
    for item in actions:
        echo_line(msg("MSG_UNDO_LIST_ROW", handle=item["handle"], when=item["when"],
                      text=item["text"]))
    echo(msg("MSG_UNDO_LIST_HINT", handle=actions[0]["handle"]))
