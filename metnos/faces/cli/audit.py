"""`metnos audit verify|tail`: check the hash chain, read the last records."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from metnos.faces.cli._common import settings_or_exit
from metnos.faces.cli._lang import cli_lang, msg
from metnos.faces.cli._out import echo, echo_json
from metnos.faces.cli._table import local_time, print_table, word, words
from metnos.ground.settings import Settings

app = typer.Typer(help=msg("CLI_AUDIT_HELP"), no_args_is_help=True)

JsonFlag = Annotated[bool, typer.Option("--json", help=msg("CLI_AUDIT_JSON_HELP"))]


@app.command("verify", help=msg("CLI_AUDIT_VERIFY_HELP"))
def verify_cmd(as_json: JsonFlag = False) -> None:
    from metnos.mechanisms.audit import verify_instance

    report = verify_instance(settings_or_exit())
    if as_json:
        payload = {**report.to_dict(), "message": report.message(cli_lang())}
        echo_json(payload)
    else:
        echo(report.message(cli_lang()), err=not report.ok)
    if not report.ok:
        raise typer.Exit(1)


@app.command("tail", help=msg("CLI_AUDIT_TAIL_HELP"))
def tail_cmd(
    n: Annotated[int, typer.Option("-n", "--lines", min=1, help=msg("CLI_AUDIT_N_HELP"))] = 20,
    as_json: JsonFlag = False,
) -> None:
    from metnos.mechanisms.audit import audit_log_path, read_tail

    settings = settings_or_exit()
    records = read_tail(audit_log_path(settings), n)
    if as_json:
        for record in records:
            echo_json(record)
        return
    if not records:
        echo(msg("MSG_AUDIT_EMPTY"))
        return
    headers = [msg(k) for k in ("CLI_COL_SEQ", "CLI_COL_TIME", "CLI_COL_DECISION", "CLI_COL_ACTION",
                                "CLI_COL_WHAT", "CLI_COL_OUTCOME", "CLI_COL_WHO")]
    print_table(headers, [_row(record, settings) for record in records])


def _row(record: dict[str, Any], settings: Settings) -> list[str]:
    """One record as a person reads it: local time, words for the decision and the outcome,
    the reason's message instead of its key."""
    action = str(record.get("action") or "")
    who = "@".join(str(record[k]) for k in ("sender", "channel") if record.get(k))
    return [str(record.get("seq", "?")), local_time(record.get("ts"), settings, seconds=True),
            word("decision", record.get("decision")), action,
            words(record.get("reason"), executor=action),
            word("outcome", record.get("outcome")), who]
