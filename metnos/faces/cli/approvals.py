"""`metnos approvals list|approve|deny`: the owner decides from the terminal (SPEC §4).

Imports what it prints with when a command runs (the card's value helpers), not at start:
`metnos --help` loads every command's module.

A client of the running gateway (`POST /api/approvals/{id}`), so the decision goes through the
same checks, audit line and flow resume as any other surface.
"""

from __future__ import annotations

import json
import time
from typing import Any

import typer

from metnos.faces.cli._client import api_call
from metnos.faces.cli._common import call_or_exit, rows_to_show, settings_or_exit
from metnos.faces.cli._lang import msg
from metnos.faces.cli._out import echo, echo_json, echo_line
from metnos.faces.cli._table import NONE, local_time, print_table, word
from metnos.ground import i18n
from metnos.ground.errors import MetnosError
from metnos.ground.escape import terminal_line
from metnos.ground.settings import Settings

app = typer.Typer(help=msg("CLI_APPROVALS_HELP"), no_args_is_help=True)
_JSON = typer.Option(False, "--json", help=msg("CLI_JSON_HELP"))
_ID = typer.Argument(..., help=msg("CLI_APPROVALS_ID_HELP"))
_REASON = typer.Option("", "--reason", help=msg("CLI_APPROVALS_REASON_HELP"))
_FULL = typer.Option(False, "--full", help=msg("CLI_APPROVALS_FULL_HELP"))
SHOWN_CHARS = 80  # of one value in the table's one-line action; `--full` shows all
INLINE_CHARS = 300  # a longer value of `metnos chat`'s card comes whole, below its length
TURN_WAIT_S = 60.0  # how long approve/deny wait for the resumed turn's reply


@app.command("list", help=msg("CLI_APPROVALS_LIST_HELP"))
def list_(show_all: bool = typer.Option(False, "--all", help=msg("CLI_APPROVALS_ALL_HELP")),
          full: bool = _FULL, as_json: bool = _JSON) -> None:
    settings = settings_or_exit()
    data = call_or_exit("GET", "/api/approvals",
                        params={"status": "all" if show_all else "pending"})
    rows: list[dict[str, Any]] = data.get("approvals", [])
    if not rows_to_show(rows, as_json, "MSG_APPROVALS_NONE"):
        return
    headers = [msg(k) for k in ("CLI_COL_ID", "CLI_COL_STATUS", "CLI_COL_ACTION",
                                "CLI_COL_WHO", "CLI_COL_SOURCES", "CLI_COL_ASKED",
                                "CLI_COL_UNTIL", "CLI_COL_DECIDED")]
    print_table(headers, [_row(row, settings) for row in rows])
    if full:  # every byte of every argument, each with its size
        for row in rows:
            echo(full_view(row))


@app.command("show", help=msg("CLI_APPROVALS_SHOW_HELP"))
def show(approval_id: str = _ID) -> None:
    """One approval with every byte of its arguments (what `approve` lets run)."""
    data = call_or_exit("GET", "/api/approvals", params={"status": "all"})
    found = [r for r in data.get("approvals", []) if r.get("approval_id") == approval_id]
    if not found:
        echo_line(msg("ERR_APPROVAL_NOT_FOUND", approval_id=approval_id), err=True)
        raise typer.Exit(1)
    echo(full_view(found[0]))


def full_view(row: dict[str, Any]) -> str:
    """An approval's whole action: who asked, the outside sources, then each argument
    with its length and every byte of it (made safe for the terminal, never cut)."""
    from metnos.mechanisms.approvals.card import raw_value, value_size

    lines = [f"── {row['approval_id']} · {terminal_line(str(row.get('executor', '')))}",
             msg("MSG_APPROVALS_ASKER", who=terminal_line(str(row.get("asker") or NONE))),
             msg("MSG_APPROVALS_SOURCES", sources=_sources(row))]
    for name, value in sorted((row.get("args") or {}).items()):
        text = raw_value(value)
        chars, count = value_size(text)
        lines.append(msg("MSG_APPROVALS_ARG_SIZE", name=terminal_line(name), chars=chars,
                         lines=count))
        lines.extend(value_rows(text))
    return "\n".join(lines)


def argument_lines(name: str, value: Any, lang: str | None = None) -> list[str]:
    """One argument of a card: short on one line; a long one with its length, then every
    byte of it (`metnos chat`'s inline card, never cut)."""
    from metnos.mechanisms.approvals.card import raw_value, value_size

    shown = json.dumps(value, ensure_ascii=False)
    if len(shown) <= INLINE_CHARS:
        return [f"    {terminal_line(name)} = {terminal_line(shown)}"]
    text = raw_value(value)
    chars, count = value_size(text)
    size = i18n.get("MSG_APPROVALS_ARG_SIZE", lang, name=terminal_line(name), chars=chars,
                    lines=count)
    return [f"    {size}", *value_rows(text)]


GUTTER = "    │ "  # every row of a whole value: it cannot pass for a line of the card


def value_rows(text: str) -> list[str]:
    """Every byte of a value, one terminal row per line, each behind the gutter."""
    return [GUTTER + terminal_line(line) for line in text.split("\n")]


def _sources(row: dict[str, Any]) -> str:
    return terminal_line(", ".join(str(s) for s in row.get("sources") or [])) or NONE


def _row(row: dict[str, Any], settings: Settings) -> list[str]:
    """A pending approval shows until when it can be decided; a decided, used or expired
    one does not (it can no longer be), but when it was decided."""
    pending = row["status"] == "pending"
    return [row["approval_id"], word("approval", row["status"]), _action(row),
            terminal_line(str(row.get("asker") or NONE)), _sources(row),
            local_time(row.get("created_at"), settings),
            local_time(row.get("expires_at"), settings) if pending else NONE,
            local_time(row.get("decided_at"), settings)]


@app.command(help=msg("CLI_APPROVALS_APPROVE_HELP"))
def approve(approval_id: str = _ID, reason: str = _REASON, as_json: bool = _JSON) -> None:
    _decide(approval_id, "approve", reason, as_json)


@app.command(help=msg("CLI_APPROVALS_DENY_HELP"))
def deny(approval_id: str = _ID, reason: str = _REASON, as_json: bool = _JSON) -> None:
    _decide(approval_id, "deny", reason, as_json)


def _decide(approval_id: str, decision: str, reason: str, as_json: bool) -> None:
    data = call_or_exit("POST", f"/api/approvals/{approval_id}",
                        body={"decision": decision, "reason": reason or None})
    row = data["approval"]
    turn = _turn_when_done(settings_or_exit(), row["turn_id"], row["approval_id"])
    if as_json:
        echo_json({**data, "turn": turn})
        return
    echo(msg("MSG_APPROVALS_DONE", approval_id=row["approval_id"],
             status=word("approval", row["status"])))
    if turn is not None and turn.get("reply"):
        echo(turn["reply"])
        for item in turn.get("activity") or []:  # what ran, beside the model's words
            if isinstance(item, dict) and item.get("text"):
                echo_line(item["text"])
    else:
        echo(msg("MSG_APPROVALS_STILL_RUNNING", turn_id=row["turn_id"]))


def _turn_when_done(settings: Settings, turn_id: str,
                    approval_id: str) -> dict[str, Any] | None:
    """The resumed turn once it has its final reply (None if it takes longer than the wait)."""
    deadline = time.monotonic() + TURN_WAIT_S
    while time.monotonic() < deadline:
        try:
            turn = api_call(settings, "GET", f"/api/turns/{turn_id}")
        except MetnosError:
            return None
        status = turn.get("status")
        if status in ("completed", "failed") and turn.get("finished_at"):
            return turn
        if status == "awaiting_approval" and any(  # a later step of the turn now asks
                a["status"] == "pending" and a["approval_id"] != approval_id
                for a in turn.get("approvals", [])):
            return turn
        time.sleep(0.2)
    return None


def _action(row: dict[str, Any]) -> str:
    """One line; a long value is cut here and says so (`--full` shows every byte)."""
    args = ", ".join(f"{k}={_shown(v)}" for k, v in sorted(row.get("args", {}).items()))
    return terminal_line(f"{row['executor']}({args})")


def _shown(value: Any) -> str:
    from metnos.mechanisms.approvals.card import raw_value, value_size

    text = json.dumps(value, ensure_ascii=False)
    if len(text) <= SHOWN_CHARS:
        return text
    chars, count = value_size(raw_value(value))
    return text[:SHOWN_CHARS] + "… " + msg("MSG_APPROVALS_CUT", chars=chars, lines=count)
