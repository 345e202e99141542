"""`metnos executors`: list, sign (the owner's approval) and verify executors.

The registry (manifests, signatures, the embedded planner's sentences) is loaded when a
command runs, not at import: `metnos --help` loads every command's module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from metnos.faces.cli._common import settings_or_exit
from metnos.faces.cli._lang import cli_lang, msg
from metnos.faces.cli._out import echo, echo_json
from metnos.faces.cli._table import print_table, word
from metnos.ground import i18n
from metnos.ground.errors import ExecutorNotFound, MetnosError

if TYPE_CHECKING:
    from metnos.mechanisms.executors.registry import ExecutorSpec, Refusal

app = typer.Typer(help=msg("CLI_EXECUTORS_HELP"), no_args_is_help=True)

JsonOpt = Annotated[bool, typer.Option("--json", help=msg("CLI_EXECUTORS_JSON_HELP"))]


@app.command("list", help=msg("CLI_EXECUTORS_LIST_HELP"))
def list_executors(as_json: JsonOpt = False) -> None:
    rows = _rows(None)
    if as_json:
        echo_json(rows, indent=2)
        return
    if not rows:
        echo(msg("MSG_EXECUTORS_NONE"))
        return
    headers = [msg(k) for k in ("CLI_COL_NAME", "CLI_COL_VERSION", "CLI_COL_RISK",
                                "CLI_COL_STATUS", "CLI_COL_REASON")]
    print_table(headers, [[row["name"], row["version"] or "?", word("risk", row["risk"]) or "?",
                           word("executor", "admitted" if row["admitted"] else "refused"),
                           row["reason"] or ""] for row in rows])


@app.command("sign", help=msg("CLI_EXECUTORS_SIGN_HELP"))
def sign(
    name: Annotated[str, typer.Argument(help=msg("CLI_EXECUTORS_NAME_HELP"))],
    downgrade: Annotated[bool, typer.Option(
        "--downgrade", help=msg("CLI_EXECUTORS_DOWNGRADE_HELP"))] = False,
    as_json: JsonOpt = False,
) -> None:
    from metnos.mechanisms.executors.owner import sign_as_owner
    from metnos.mechanisms.executors.registry import signatures_dir
    from metnos.mechanisms.executors.signing import signature_path

    settings = settings_or_exit()
    try:
        spec = _find(name)
        sig = signature_path(signatures_dir(settings), spec.name)
        facts = sign_as_owner(spec.folder, settings, downgrade=downgrade)
    except MetnosError as exc:
        _fail(i18n.message(exc, cli_lang()))
    if as_json:
        echo_json(
            {
                "name": facts.name,
                "version": facts.version,
                "code_sha256": facts.code_sha256,
                "signature": str(sig),
            }
        )
        return
    echo(
        msg(
            "MSG_EXECUTORS_SIGNED",
            name=facts.name,
            version=facts.version,
            code=facts.code_sha256[:16],
            path=str(sig),
        )
    )


@app.command("verify", help=msg("CLI_EXECUTORS_VERIFY_HELP"))
def verify(
    name: Annotated[str | None, typer.Argument(help=msg("CLI_EXECUTORS_NAME_HELP"))] = None,
    as_json: JsonOpt = False,
) -> None:
    rows = _rows(name)
    if name is not None and not rows:
        _fail(i18n.message(ExecutorNotFound(executor=name), cli_lang()))
    failed = [row["name"] for row in rows if not row["admitted"]]
    if as_json:
        echo_json(rows, indent=2)
    else:
        for row in rows:
            if row["admitted"]:
                echo(
                    msg("MSG_EXECUTORS_VERIFY_OK", name=row["name"], version=row["version"])
                )
            else:
                echo(f"{row['name']}: {row['reason']}", err=True)
    if failed:
        if not as_json:
            echo(msg("MSG_EXECUTORS_VERIFY_FAILED", names=", ".join(failed)), err=True)
        raise typer.Exit(1)


def _rows(only: str | None) -> list[dict[str, Any]]:
    """One row per executor found (admitted first by name, then the refused ones)."""
    from metnos.mechanisms.executors.registry import (
        admit_with_settings,
        discover_all,
        executor_dirs,
    )

    settings = settings_or_exit()
    specs, problems = discover_all(executor_dirs(settings))
    if only is not None:
        specs = [s for s in specs if s.name == only]
        problems = [p for p in problems if p.name == only]
    registry = admit_with_settings(specs, settings, problems)
    by_name = {spec.name: spec for spec in specs}
    rows = [_row(spec, None) for spec in registry]
    rows += [_row(by_name.get(refusal.name), refusal) for refusal in registry.refused]
    return rows


def _row(spec: ExecutorSpec | None, refusal: Refusal | None) -> dict[str, Any]:
    name = spec.name if spec else refusal.name if refusal else "?"
    reason = msg(refusal.key, **refusal.vars) if refusal else None
    duplicate = refusal is not None and refusal.key == "ERR_EXECUTOR_DUPLICATE"
    manifest = spec.manifest if spec and not duplicate else None
    return {
        "name": name,
        "version": manifest.version if manifest else None,
        "risk": manifest.risk if manifest else None,
        "admitted": refusal is None,
        "folder": str(spec.folder) if spec and not duplicate else None,
        "reason_key": refusal.key if refusal else None,
        "reason": reason,
    }


def _find(name: str) -> ExecutorSpec:
    from metnos.mechanisms.executors.registry import discover_all, executor_dirs

    specs, problems = discover_all(executor_dirs(settings_or_exit()))
    for spec in specs:
        if spec.name == name:
            return spec
    for problem in problems:
        if problem.name == name and problem.key != "ERR_EXECUTOR_DUPLICATE":
            raise MetnosError(problem.key, **problem.vars)
    raise ExecutorNotFound(executor=name)


def _fail(message: str) -> NoReturn:
    echo(message, err=True)
    raise typer.Exit(1)
