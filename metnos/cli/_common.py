"""What every command shares: settings that fail as a message, not a traceback."""

from __future__ import annotations

import typer

from metnos.cli._out import echo
from metnos.errors import MetnosError
from metnos.settings import Settings, get_settings


def settings_or_exit(lang: str | None = None) -> Settings:
    """The instance settings; a bad metnos.toml or variable ends the command with its reason."""
    try:
        return get_settings()
    except MetnosError as exc:
        exit_with(exc, lang)
        raise  # unreachable: exit_with raises


def exit_with(exc: MetnosError, lang: str | None = None) -> None:
    from metnos.cli._lang import cli_lang

    echo(exc.message(lang or cli_lang()), err=True)
    raise typer.Exit(1) from exc
