"""`metnos workspace [status|confirm FILE]`: the identity files read as outside data.

An identity file that a tainted turn wrote (`metnos.mechanisms.identity`) reaches every later prompt
as data, and taints the turns that read it, until the owner confirms its text here: the whole
text is shown first (made safe for the terminal), then confirmed for exactly those bytes.
A local command of the owner at the host: it reads the database and writes the audit log.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from metnos.faces.cli._common import run_alone, settings_or_exit
from metnos.faces.cli._lang import msg
from metnos.faces.cli._out import echo, echo_json, echo_line
from metnos.mechanisms.workspace import FILES

app = typer.Typer(help=msg("CLI_WORKSPACE_HELP"), invoke_without_command=True)
_JSON = typer.Option(False, "--json", help=msg("CLI_JSON_HELP"))


@app.command("status", help=msg("CLI_WORKSPACE_STATUS_HELP"))
def status(as_json: bool = _JSON) -> None:
    from metnos.ground.db.engine import database_url, make_engine
    from metnos.mechanisms import identity

    settings = settings_or_exit()
    engine = make_engine(database_url(settings))
    try:
        found = identity.untrusted_files(engine, settings.workspace)
    finally:
        engine.dispose()
    if as_json:
        echo_json(found)
        return
    if not found:
        echo(msg("MSG_WORKSPACE_ALL_OWN"))
    for name, sources in found.items():
        echo_line(msg("MSG_WORKSPACE_UNTRUSTED_ROW", file=name,
                      sources=identity.read_label(sources)))


run_alone(app, status)


@app.command("confirm", help=msg("CLI_WORKSPACE_CONFIRM_HELP"))
def confirm(
    name: Annotated[str, typer.Argument(help=msg("CLI_WORKSPACE_FILE_HELP"))],
    yes: Annotated[bool, typer.Option("--yes", help=msg("CLI_WORKSPACE_YES_HELP"))] = False,
) -> None:
    from metnos.ground.db.engine import database_url, make_engine
    from metnos.mechanisms import identity
    from metnos.mechanisms.audit import open_audit_log

    settings = settings_or_exit()
    if name not in FILES:
        echo_line(msg("ERR_WORKSPACE_FILE_UNKNOWN", file=name, files=", ".join(FILES)), err=True)
        raise typer.Exit(1)
    engine = make_engine(database_url(settings))
    try:
        sources = identity.untrusted_files(engine, settings.workspace).get(name)
        if sources is None:
            echo(msg("MSG_WORKSPACE_ALREADY_OWN", file=name))
            return
        path: Path = settings.workspace / name
        sha = identity.file_hash(path)
        text = path.read_bytes()[:identity.MAX_BYTES].decode("utf-8", errors="replace")
        echo_line(msg("MSG_WORKSPACE_SHOW", file=name, chars=len(text),
                      sources=identity.read_label(sources)))
        echo("-" * 60)
        echo(text)  # every byte the prompt may read, made safe for a terminal
        echo("-" * 60)
        if not yes and not typer.confirm(msg("MSG_WORKSPACE_CONFIRM_ASK"), default=False):
            echo(msg("MSG_WORKSPACE_NOT_CONFIRMED", file=name))
            raise typer.Exit(1)
        if sha is None or not identity.confirm(engine, settings.workspace, name, sha):
            echo(msg("ERR_WORKSPACE_CHANGED", file=name), err=True)
            raise typer.Exit(1)
    finally:
        engine.dispose()
    with open_audit_log(settings) as audit:
        audit.append(action=f"identity:{name}", decision="info", reason=identity.CONFIRMED,
                     outcome="confirmed", sender="owner", channel="cli", args={"sha256": sha})
    echo(msg("MSG_WORKSPACE_CONFIRMED", file=name))
