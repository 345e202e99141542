"""`metnos synt list|review NAME|sign NAME|reject NAME`: the tools Metnos wrote itself.

A client of the running gateway (`/api/synt/candidates`): the gateway holds the signing key
and reloads its registry, so a signed candidate is callable from the next turn.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import typer

from metnos.faces.cli._common import call_or_exit, rows_to_show, show_answer
from metnos.faces.cli._lang import msg
from metnos.faces.cli._out import echo, echo_json
from metnos.faces.cli._table import print_table

app = typer.Typer(help=msg("CLI_SYNT_HELP"), no_args_is_help=True)
_JSON = typer.Option(False, "--json", help=msg("CLI_JSON_HELP"))
_NAME = typer.Argument(..., help=msg("CLI_SYNT_NAME_HELP"))


@app.command("list", help=msg("CLI_SYNT_LIST_HELP"))
def list_(as_json: bool = _JSON) -> None:
    data = call_or_exit("GET", "/api/synt/candidates")
    rows: list[dict[str, Any]] = data.get("candidates", [])
    if not rows_to_show(rows, as_json, "MSG_SYNT_NONE"):
        return
    headers = [msg(k) for k in ("SYNT_COL_NAME", "SYNT_COL_CAPABILITY", "SYNT_COL_TESTS",
                                "SYNT_COL_COST")]
    print_table(headers, [[r["name"], r["capability"], f"{r['passed']}/"
                           f"{(r['passed'] or 0) + (r['failed'] or 0)}",
                           str(r.get("cost_usd"))] for r in rows])


@app.command(help=msg("CLI_SYNT_REVIEW_HELP"))
def review(name: str = _NAME, as_json: bool = _JSON) -> None:
    data = call_or_exit("GET", f"/api/synt/candidates/{quote(name, safe='')}")
    if as_json:
        echo_json(data)
        return
    for key, body in (("SYNT_LABEL_MANIFEST", data["manifest"]),
                      ("SYNT_LABEL_PROFILE", json.dumps(data.get("profile"), indent=1)),
                      ("SYNT_LABEL_CODE", data["code"]),
                      ("SYNT_LABEL_TESTS", json.dumps(data.get("tests"), indent=1,
                                                      ensure_ascii=False))):
        echo(f"== {msg(key)} ==\n{body}\n")
    echo(f"{msg('SYNT_COL_COST')}: {data.get('cost_usd')}")


@app.command(help=msg("CLI_SYNT_SIGN_HELP"))
def sign(name: str = _NAME, as_json: bool = _JSON) -> None:
    data = call_or_exit("POST", f"/api/synt/candidates/{quote(name, safe='')}/sign")
    show_answer(data, as_json, msg("MSG_SYNT_SIGNED", name=name))


@app.command(help=msg("CLI_SYNT_REJECT_HELP"))
def reject(name: str = _NAME, as_json: bool = _JSON) -> None:
    data = call_or_exit("POST", f"/api/synt/candidates/{quote(name, safe='')}/reject")
    show_answer(data, as_json, msg("MSG_SYNT_REJECTED", name=name, path=data.get("path", "")))

