"""What every command shares: settings that fail as a message, not a traceback."""

from __future__ import annotations

from typing import Any

import typer

from metnos import i18n
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

    echo(i18n.message(exc, lang or cli_lang()), err=True)
    raise typer.Exit(1) from exc


def call_or_exit(method: str, path: str, **kwargs: Any) -> dict[str, Any]:
    """One call to the running gateway, in the CLI's language; a refusal or an unreachable
    gateway ends the command with its reason."""
    from metnos.cli._client import api_call
    from metnos.cli._lang import cli_lang

    settings = settings_or_exit()
    try:
        return api_call(settings, method, path, lang=cli_lang(), **kwargs)
    except MetnosError as exc:
        exit_with(exc)
        raise typer.Exit(1) from exc  # exit_with exits; this keeps the types honest
