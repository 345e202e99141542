"""`metnos undo ACTION_ID`: ask the running instance to undo an action."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import quote

import typer

from metnos.cli._client import api_call
from metnos.cli._common import exit_with, settings_or_exit
from metnos.cli._lang import msg
from metnos.cli._out import echo, echo_json
from metnos.errors import MetnosError


def undo(
    action_id: Annotated[str, typer.Argument(help=msg("CLI_UNDO_ID_HELP"))],
    as_json: Annotated[bool, typer.Option("--json", help=msg("CLI_JSON_HELP"))] = False,
) -> None:
    """Undo ACTION_ID; exit code 1 when it was refused or only partly done."""
    settings = settings_or_exit()
    try:
        report = api_call(settings, "POST", f"/api/actions/{quote(action_id, safe='')}/undo")
    except MetnosError as exc:
        exit_with(exc)
        return
    if as_json:
        echo_json(report)
    else:
        echo(str(report.get("message", "")))
    if report.get("outcome") != "done":
        raise typer.Exit(1)
