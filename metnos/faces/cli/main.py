"""The `metnos` command: `init` and `serve` here, every other command loaded when it runs
(`_lazy.py`)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import typer

from metnos.faces.cli import _lazy
from metnos.faces.cli._common import exit_with
from metnos.faces.cli._lang import cli_lang, msg, unspoken_language, unspoken_vars
from metnos.faces.cli._out import echo, echo_json
from metnos.ground import i18n
from metnos.ground.errors import MetnosError
from metnos.ground.i18n import FALLBACK_LANG
from metnos.ground.settings import get_settings

if TYPE_CHECKING:
    from metnos.faces.home import InitReport
    from metnos.ground.settings import Settings


class _Metnos(_lazy.LazyGroup):
    entries = {
        **{name: _lazy.group(name) for name in (
            "executors", "audit", "approvals", "pair", "devices", "proposals", "evolution", "synt",
            "mnestoma", "tutor", "mail", "schedule", "workspace", "trash")},
        "chat": _lazy.command("chat", "CLI_CHAT_HELP"),
        "undo": _lazy.command("undo", "CLI_UNDO_CHANGE_HELP"),
        "login": _lazy.command("login", "CLI_LOGIN_HELP"),
        "ui": _lazy.command("ui", "CLI_UI_HELP"),
        "doctor": _lazy.command("doctor", "CLI_DOCTOR_HELP"),
        "status": _lazy.command("status", "CLI_STATUS_HELP"),
    }


app = typer.Typer(cls=_Metnos, help=msg("CLI_MAIN_HELP"), no_args_is_help=True,
                  pretty_exceptions_enable=False)


@app.callback()
def _language_check(ctx: typer.Context) -> None:
    """A process language Metnos has no words for is said, never passed over: `serve`
    refuses to start (below); every other command says it goes on in English."""
    lang = unspoken_language()
    if lang is not None and ctx.invoked_subcommand != "serve":
        echo(i18n.get("MSG_LANG_NOT_SPOKEN", FALLBACK_LANG, **unspoken_vars(lang)), err=True)


@app.command(help=msg("CLI_INIT_HELP"))
def init(
    if_needed: bool = typer.Option(False, "--if-needed", help=msg("CLI_INIT_IF_NEEDED_HELP")),
    as_json: bool = typer.Option(False, "--json", help=msg("CLI_JSON_HELP")),
) -> None:
    from metnos.faces.home import initialise

    try:
        settings = get_settings()
        report = initialise(settings)  # idempotent: also completes a set-up cut short
        _read_the_guide(settings, report)
        if if_needed and not report.changed:
            echo(msg("MSG_INIT_ALREADY", home=str(settings.home)))
            return
    except MetnosError as exc:
        exit_with(exc)
    if as_json:
        echo_json({"home": str(report.home), "created": report.created})
    elif report.changed:
        echo(msg("MSG_INIT_DONE", home=str(report.home), count=len(report.created)))
        for item in report.created:
            echo(f"  + {item}")
    else:
        echo(msg("MSG_INIT_UNCHANGED", home=str(report.home)))


def _read_the_guide(settings: Settings, report: InitReport) -> None:
    """The Tutor's catalog, compiled now when missing or out of date, so that a fresh home
    answers questions about Metnos on its first turn (about half a minute, once)."""
    from metnos.features.tutor.upkeep import due, refresh

    if not settings.tutor.enabled or not due(settings.home):
        return
    echo(msg("MSG_INIT_TUTOR_READING"), err=True)
    try:
        if refresh(settings.home).report is not None:
            report.created.append("tutor/catalog.sqlite")
    except MetnosError as exc:  # the home is usable: `metnos serve` reads the guide at start
        echo(msg("MSG_INIT_TUTOR_LATER", reason=i18n.message(exc, cli_lang())), err=True)


@app.command(help=msg("CLI_SERVE_HELP"))
def serve() -> None:
    from metnos.faces.serve.supervisor import Supervisor
    from metnos.ground import keys

    try:
        settings = get_settings()
        if (lang := unspoken_language()) is not None:
            exit_with(MetnosError("ERR_LANG_NOT_SPOKEN", **unspoken_vars(lang)), FALLBACK_LANG)
        if not keys.is_initialised(settings):
            raise MetnosError("ERR_HOME_NOT_INITIALISED", home=str(settings.home))
        supervisor = Supervisor(settings, say=lambda line: echo(line, err=True))
        supervisor.handle_signals()  # before start-up: a Ctrl-C there must stop what started
        try:
            urls = supervisor.start()
            for line in supervisor.model_check_at_start(urls, cli_lang()):
                echo(line, err=True)
            echo(msg("MSG_SERVE_READY", gateway=urls["gateway"],
                          prefect_ui=urls["prefect_ui"],
                          token=str(settings.owner_token_path)))
            if not supervisor.sandbox_ok(urls["gateway"]):
                echo(msg("MSG_SERVE_SANDBOX_DEGRADED"), err=True)
            code = supervisor.wait()
        finally:
            if supervisor.owns_home:  # not when another `metnos serve` runs this home
                echo(msg("MSG_SERVE_STOPPING"))
            supervisor.stop()
    except MetnosError as exc:
        exit_with(exc)
    sys.exit(code)


if __name__ == "__main__":
    app()
