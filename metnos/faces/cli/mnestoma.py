"""`metnos mnestoma show`: the hand-offs between executors, the heaviest first, and a PNG of
the graph, both from the running gateway (`GET /api/mnestoma`, `GET /api/mnestoma.png`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from metnos.faces.cli._client import _target, api_call, fetch
from metnos.faces.cli._common import JsonFlag, exit_with, settings_or_exit
from metnos.faces.cli._lang import cli_lang, msg
from metnos.faces.cli._out import echo, echo_json
from metnos.faces.cli._table import print_table
from metnos.ground.errors import MetnosError
from metnos.ground.settings import Settings

app = typer.Typer(help=msg("CLI_MNESTOMA_HELP"), no_args_is_help=True)


@app.callback(help=msg("CLI_MNESTOMA_HELP"))
def group() -> None:
    """A group even with one command (more come: `metnos mnestoma show` stays stable)."""


@app.command("show", help=msg("CLI_MNESTOMA_SHOW_HELP"))
def show(
    png: Annotated[Path | None, typer.Option("--png", help=msg("CLI_MNESTOMA_PNG_HELP"))] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=5000,
                                       help=msg("CLI_MNESTOMA_LIMIT_HELP"))] = 50,
    as_json: JsonFlag = False,
) -> None:
    settings = settings_or_exit()
    target = png or settings.home / "mnestoma.png"
    try:
        view = api_call(settings, "GET", "/api/mnestoma", params={"limit": limit})
        target.write_bytes(fetch_png(settings))
    except MetnosError as exc:
        exit_with(exc)
    if as_json:
        echo_json({**view, "png": str(target)})
        return
    mnests: list[dict[str, Any]] = view.get("mnests", [])
    if mnests:
        headers = [msg(k) for k in ("CLI_COL_FROM", "CLI_COL_TO", "CLI_COL_WEIGHT",
                                    "CLI_COL_LAST_USE")]
        print_table(headers, [[m["src"], m["dst"], f"{m['weight']:g}", str(m["clock"])]
                              for m in mnests])
    else:
        echo(msg("MSG_MNESTOMA_EMPTY"))
    echo(msg("MSG_MNESTOMA_CLOCK", clock=view.get("clock", 0),
             count=view.get("mnest_count", 0)))
    echo(msg("MSG_MNESTOMA_PICTURE", path=str(target)))


def fetch_png(settings: Settings) -> bytes:
    """The picture's bytes, in the CLI's language; MetnosError when the gateway says no."""
    url, headers = _target(settings, "/api/mnestoma.png", None)
    answer = fetch("GET", url, headers=headers, params={"lang": cli_lang()})
    if answer.status != 200 or not answer.body.startswith(b"\x89PNG"):
        raise MetnosError("ERR_CHAT_REFUSED", status=answer.status,
                          detail=answer.text[:200] if answer.status != 200 else "not a PNG")
    return answer.body
