"""`metnos chat`: the CLI channel, a client of the running instance's gateway (SPEC §11)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import typer

from metnos import i18n
from metnos.errors import MetnosError
from metnos.settings import Settings, get_settings

TIMEOUT_S = 180.0


def send(settings: Settings, text: str, session_id: str | None,
         lang: str | None) -> dict[str, Any]:
    """POST one message to the gateway; raises MetnosError with a message for the user."""
    url = f"http://{settings.gateway.host}:{settings.gateway.port}/api/turns"
    try:
        token = settings.owner_token()
    except OSError as exc:
        raise MetnosError("ERR_HOME_NOT_INITIALISED", home=str(settings.home)) from exc
    body = {"text": text, "session_id": session_id, "lang": lang}
    try:
        resp = httpx.post(url, json=body, headers={"Authorization": f"Bearer {token}"},
                          timeout=TIMEOUT_S)
    except httpx.ConnectError as exc:
        raise MetnosError("ERR_CHAT_NOT_RUNNING", url=url) from exc
    except httpx.TimeoutException as exc:
        raise MetnosError("ERR_CHAT_TIMEOUT", url=url) from exc
    data: dict[str, Any] = resp.json()
    if resp.status_code >= 400:
        error = data.get("error", {})
        raise MetnosError("ERR_CHAT_REFUSED", status=resp.status_code,
                          detail=error.get("message", resp.text[:200]))
    return data


def chat(
    message: str = typer.Argument(None, help=i18n.get("CLI_CHAT_MESSAGE_HELP")),
    session: str = typer.Option(None, "--session", help=i18n.get("CLI_CHAT_SESSION_HELP")),
    lang: str = typer.Option(None, "--lang", help=i18n.get("CLI_CHAT_LANG_HELP")),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    try:
        settings = get_settings()
    except MetnosError as exc:
        typer.echo(exc.message(lang), err=True)
        raise typer.Exit(1) from exc
    if message is not None:
        _one(settings, message, session, lang, as_json)
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
        if line:
            session = _one(settings, line, session, lang, as_json)


def _one(settings: Settings, text: str, session: str | None, lang: str | None,
         as_json: bool) -> str | None:
    try:
        data = send(settings, text, session, lang)
    except MetnosError as exc:
        typer.echo(exc.message(lang), err=True)
        raise typer.Exit(1) from exc
    if as_json:
        typer.echo(json.dumps(data, ensure_ascii=False))
    elif data.get("reply"):
        typer.echo(data["reply"])
    else:
        typer.echo(i18n.get("MSG_CHAT_STILL_RUNNING", lang, turn_id=data.get("turn_id", "")))
    session_id: str | None = data.get("session_id")
    return session_id
