"""`metnos chat`: the CLI channel, a client of the running instance's gateway (SPEC §11)."""

from __future__ import annotations

import json
from typing import Any

import typer

from metnos import i18n
from metnos.cli._client import TIMEOUT_S, api_call
from metnos.cli._common import exit_with, settings_or_exit
from metnos.errors import MetnosError
from metnos.settings import Settings


def send(settings: Settings, text: str, session_id: str | None,
         lang: str | None) -> dict[str, Any]:
    """POST one message to the gateway; raises MetnosError with a message for the user."""
    body = {"text": text, "session_id": session_id, "lang": lang}
    return api_call(settings, "POST", "/api/turns", body=body, timeout_s=TIMEOUT_S)


def chat(
    message: str = typer.Argument(None, help=i18n.get("CLI_CHAT_MESSAGE_HELP")),
    session: str = typer.Option(None, "--session", help=i18n.get("CLI_CHAT_SESSION_HELP")),
    lang: str = typer.Option(None, "--lang", help=i18n.get("CLI_CHAT_LANG_HELP")),
    as_json: bool = typer.Option(False, "--json", help=i18n.get("CLI_JSON_HELP")),
) -> None:
    settings = settings_or_exit(lang)
    if message is not None:
        try:
            _one(settings, message, session, lang, as_json)
        except MetnosError as exc:
            exit_with(exc, lang)
        return
    typer.echo(i18n.get("MSG_CHAT_WELCOME"))
    while True:
        try:
            line = input("> ").strip()
        except (EOFError, KeyboardInterrupt):
            typer.echo("")
            return
        if line in {"/quit", "/exit", "/esci"}:
            return
        if not line:
            continue
        try:
            session = _one(settings, line, session, lang, as_json)
        except MetnosError as exc:  # say it and keep the conversation going
            typer.echo(exc.message(lang), err=True)


def _one(settings: Settings, text: str, session: str | None, lang: str | None,
         as_json: bool) -> str | None:
    data = send(settings, text, session, lang)
    if as_json:
        typer.echo(json.dumps(data, ensure_ascii=False))
    elif data.get("reply"):
        typer.echo(data["reply"])
    else:
        typer.echo(i18n.get("MSG_CHAT_STILL_RUNNING", lang, turn_id=data.get("turn_id", "")))
    session_id: str | None = data.get("session_id")
    return session_id
