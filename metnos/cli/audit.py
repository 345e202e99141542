"""`metnos audit verify|tail`: check the hash chain, read the last records."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from metnos import i18n
from metnos.audit import audit_log_path, read_tail, verify_instance
from metnos.cli._common import settings_or_exit

app = typer.Typer(help=i18n.get("CLI_AUDIT_HELP"), no_args_is_help=True)

JsonFlag = Annotated[bool, typer.Option("--json", help=i18n.get("CLI_AUDIT_JSON_HELP"))]


@app.command("verify", help=i18n.get("CLI_AUDIT_VERIFY_HELP"))
def verify_cmd(as_json: JsonFlag = False) -> None:
    report = verify_instance(settings_or_exit())
    if as_json:
        payload = {**report.to_dict(), "message": report.message()}
        typer.echo(json.dumps(payload, ensure_ascii=False))
    else:
        typer.echo(report.message(), err=not report.ok)
    if not report.ok:
        raise typer.Exit(1)


@app.command("tail", help=i18n.get("CLI_AUDIT_TAIL_HELP"))
def tail_cmd(
    n: Annotated[int, typer.Option("-n", "--lines", min=1, help=i18n.get("CLI_AUDIT_N_HELP"))] = 20,
    as_json: JsonFlag = False,
) -> None:
    records = read_tail(audit_log_path(settings_or_exit()), n)
    for record in records:
        typer.echo(json.dumps(record, ensure_ascii=False) if as_json else _line(record))


def _line(record: dict[str, object]) -> str:
    parts = [
        f"{record.get('seq', '?'):>6}",
        str(record.get("ts", "")),
        f"{record.get('decision', '')!s:<5}",
        str(record.get("action", "")),
    ]
    parts += [str(record[k]) for k in ("reason", "outcome", "sender", "channel") if record.get(k)]
    return "  ".join(parts)
