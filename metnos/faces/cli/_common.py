"""What every command shares: settings that fail as a message, not a traceback."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, NoReturn, ParamSpec, TypeVar

import typer

from metnos.faces.cli._lang import cli_lang, msg
from metnos.faces.cli._out import echo, echo_json
from metnos.ground import i18n
from metnos.ground.errors import MetnosError
from metnos.ground.settings import Settings, get_settings

P = ParamSpec("P")
T = TypeVar("T")

JsonFlag = Annotated[bool, typer.Option("--json", help=msg("CLI_JSON_HELP"))]


def settings_or_exit(lang: str | None = None) -> Settings:
    """The instance settings; a bad metnos.toml or variable ends the command with its reason."""
    try:
        return get_settings()
    except MetnosError as exc:
        exit_with(exc, lang)


def exit_with(exc: MetnosError, lang: str | None = None) -> NoReturn:
    echo(i18n.message(exc, lang or cli_lang()), err=True)
    raise typer.Exit(1) from exc


def or_exit(call: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """`call(*args, **kwargs)`; a MetnosError ends the command with its reason."""
    try:
        return call(*args, **kwargs)
    except MetnosError as exc:
        exit_with(exc)


def call_or_exit(method: str, path: str, **kwargs: Any) -> dict[str, Any]:
    """One call to the running gateway, in the CLI's language; a refusal or an unreachable
    gateway ends the command with its reason."""
    from metnos.faces.cli._client import api_call

    return or_exit(api_call, settings_or_exit(), method, path, **kwargs)


def show_answer(data: Any, as_json: bool, text: str | None = None) -> None:
    """`data` as JSON with `--json`, else `text` (by default the message the gateway said)."""
    if as_json:
        echo_json(data)
    else:
        echo(str(data["message"]) if text is None else text)


def rows_to_show(rows: list[dict[str, Any]], as_json: bool, none_key: str,
                 whole: Any = None) -> bool:
    """Whether `rows` still want a table: with `--json` they (or `whole`) are printed as they
    are, and no rows are said with `none_key`."""
    if as_json:
        echo_json(rows if whole is None else whole)
        return False
    if not rows:
        echo(msg(none_key))
        return False
    return True


def run_alone(app: typer.Typer, command: Callable[[bool], None]) -> None:
    """`metnos GROUP` without a subcommand runs `command` (its `--json` passed on)."""

    @app.callback()
    def main(ctx: typer.Context, as_json: JsonFlag = False) -> None:
        if ctx.invoked_subcommand is None:
            command(as_json)
