"""`metnos mail add|show|remove`: the IMAP account Metnos watches.

`add` asks for what is missing from its options (the password with getpass, never echoed, or
one line of standard input with `--password-stdin`), tries the login once through the
sandboxed `imap_status` (unless `--no-check`), and only then saves: `[mail]` of metnos.toml
and `secrets/mail.password` (0600). Nothing here prints, logs or audits the password.
"""

from __future__ import annotations

import asyncio
import getpass
import sys
from typing import Annotated

import typer

from metnos.faces.cli._common import JsonFlag, exit_with, or_exit, settings_or_exit
from metnos.faces.cli._lang import cli_lang, msg
from metnos.faces.cli._out import echo, echo_json
from metnos.features.mail.account import (
    Account,
    MailNotConfigured,
    load_account,
    password_path,
    remove_account,
    save_account,
)
from metnos.ground import i18n
from metnos.ground.errors import ConfigError, MetnosError
from metnos.ground.settings.mail import MailSettings

app = typer.Typer(help=msg("CLI_MAIL_HELP"), no_args_is_help=True)
DEFAULT_PORTS = {"tls": 993, "starttls": 143, "plain": 143}


@app.command(help=msg("CLI_MAIL_ADD_HELP"))
def add(
    host: Annotated[str | None, typer.Option("--host", help=msg("CLI_MAIL_HOST_HELP"))] = None,
    port: Annotated[int | None, typer.Option("--port", help=msg("CLI_MAIL_PORT_HELP"))] = None,
    security: Annotated[str | None, typer.Option(
        "--security", help=msg("CLI_MAIL_SECURITY_HELP"))] = None,
    username: Annotated[str | None, typer.Option(
        "--username", help=msg("CLI_MAIL_USERNAME_HELP"))] = None,
    password_stdin: Annotated[bool, typer.Option(
        "--password-stdin", help=msg("CLI_MAIL_PASSWORD_STDIN_HELP"))] = False,
    no_check: Annotated[bool, typer.Option("--no-check", help=msg("CLI_MAIL_NO_CHECK_HELP"))]
    = False,
) -> None:
    settings = settings_or_exit()
    host = host or typer.prompt(msg("MSG_MAIL_PROMPT_HOST"))
    security = security or typer.prompt(msg("MSG_MAIL_PROMPT_SECURITY"), default="tls")
    port = port or typer.prompt(msg("MSG_MAIL_PROMPT_PORT"),
                                default=DEFAULT_PORTS.get(security, 993), type=int)
    username = username or typer.prompt(msg("MSG_MAIL_PROMPT_USERNAME"))
    if password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = getpass.getpass(msg("MSG_MAIL_PROMPT_PASSWORD") + ": ")
    try:
        MailSettings(host=host, port=port, security=security, username=username)
        if not password:
            raise ConfigError("ERR_MAIL_ACCOUNT_INVALID", detail="password: empty")
    except ValueError as exc:
        detail = exc.vars.get("detail", "") if isinstance(exc, MetnosError) else _first(exc)
        exit_with(ConfigError("ERR_MAIL_ACCOUNT_INVALID", detail=detail))
    account = Account(host, port, security, username, password,
                      timeout_s=settings.mail.timeout_s)
    if not no_check:
        echo(msg("MSG_MAIL_CHECKING", host=host))
        from metnos.features.mail.check import check_login

        result = asyncio.run(check_login(settings, account))
        if not result.ok:
            key = result.error_key or "ERR_SANDBOX_FAILED"
            echo(i18n.get(key, cli_lang(), **result.error_vars), err=True)
            echo(msg("MSG_MAIL_NOT_SAVED"), err=True)
            raise typer.Exit(1)
        folders = (result.result or {}).get("folders") or []
        echo(msg("MSG_MAIL_CHECK_OK", unseen=(result.result or {}).get("unseen", 0),
                 folders=len(folders)))
    or_exit(save_account, settings.home, host=host, port=port, security=security,
            username=username, password=password)
    echo(msg("MSG_MAIL_ADDED", username=username, host=host, port=port,
             security=security, secret=str(password_path(settings.home))))


def _first(exc: ValueError) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        found = errors()
        if found:
            return f"{'.'.join(str(p) for p in found[0]['loc']) or 'mail'}: {found[0]['msg']}"
    return type(exc).__name__


@app.command(help=msg("CLI_MAIL_SHOW_HELP"))
def show(as_json: JsonFlag = False,
         ) -> None:
    settings = settings_or_exit()
    mail = settings.mail
    if not mail.host or not mail.username:
        if as_json:
            echo_json({"configured": False})
        else:
            echo(msg("MSG_MAIL_NONE"))
        return
    try:
        load_account(settings)
        has_password = True
    except MailNotConfigured:
        has_password = False
    shown = {"host": mail.host, "port": mail.port, "security": mail.security,
             "username": mail.username}
    if as_json:
        echo_json({"configured": has_password, **shown,
                   "password": "saved" if has_password else "missing"})
        return
    state = msg("MSG_MAIL_PASSWORD_SET" if has_password else "MSG_MAIL_PASSWORD_MISSING")
    echo(msg("MSG_MAIL_SHOW", password_state=state, **shown))


@app.command(help=msg("CLI_MAIL_REMOVE_HELP"))
def remove() -> None:
    found = or_exit(remove_account, settings_or_exit().home)
    echo(msg("MSG_MAIL_REMOVED" if found else "MSG_MAIL_NONE"))
