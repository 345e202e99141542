"""`metnos tutor compile`, `verify`, `feedback-check` and `gaps`: the Tutor's signed catalog of
the docs, and what people said of its answers.

All work on this machine's `METNOS_HOME` directly (no running instance needed): compile
builds a new catalog and swaps it in atomically; verify checks the one in place;
feedback-check drops the remembered 👍 whose section is gone or changed (the database must be
reachable); gaps lists the reported gaps grouped, never a question's text.
"""

from __future__ import annotations

import typer

from metnos.faces.cli._common import JsonFlag, exit_with, or_exit, settings_or_exit
from metnos.faces.cli._lang import msg
from metnos.faces.cli._out import echo, echo_json
from metnos.ground.errors import MetnosError

app = typer.Typer(help=msg("CLI_TUTOR_HELP"), no_args_is_help=True)


@app.command("compile", help=msg("CLI_TUTOR_COMPILE_HELP"))
def compile_(as_json: JsonFlag = False) -> None:
    from metnos.features.tutor.compile import compile_catalog

    report = or_exit(compile_catalog, settings_or_exit().home)
    if as_json:
        echo_json({"sections": report.sections, "reused": report.reused,
                   "computed": report.computed, "version": report.version,
                   "seconds": round(report.seconds, 3)})
        return
    echo(msg("MSG_TUTOR_COMPILED", version=report.version[:12], sections=report.sections,
             reused=report.reused, computed=report.computed,
             seconds=f"{report.seconds:.1f}"))


@app.command("verify", help=msg("CLI_TUTOR_VERIFY_HELP"))
def verify(as_json: JsonFlag = False) -> None:
    from metnos.features.tutor.catalog import open_catalog

    catalog = or_exit(open_catalog, settings_or_exit().home)
    if as_json:
        echo_json({"version": catalog.version, "sections": len(catalog.sections),
                   "model": catalog.model.name, "model_version": catalog.model.version,
                   "semantic": catalog.semantic})
        return
    echo(msg("MSG_TUTOR_VERIFIED", version=catalog.version[:12],
             sections=len(catalog.sections), model=catalog.model.name,
             model_version=catalog.model.version))


@app.command("feedback-check", help=msg("CLI_TUTOR_FEEDBACK_CHECK_HELP"))
def feedback_check(as_json: JsonFlag = False) -> None:
    from metnos.features.tutor.catalog import open_catalog
    from metnos.features.tutor.feedback_report import check_instance

    settings = settings_or_exit()
    try:
        open_catalog(settings.home)  # refused or missing: said, and nothing is dropped
        report = check_instance(settings)
    except MetnosError as exc:
        exit_with(exc)
    assert report is not None
    if as_json:
        echo_json(report.to_dict())
        return
    echo(msg("MSG_TUTOR_FEEDBACK_CHECKED", version=report.version[:12], kept=report.kept,
             dropped=report.dropped, expired=report.expired))


@app.command("gaps", help=msg("CLI_TUTOR_GAPS_HELP"))
def gaps(as_json: JsonFlag = False) -> None:
    from metnos.features.tutor.feedback_report import gap_groups
    from metnos.ground.db.engine import database_url, in_session, make_engine

    settings = settings_or_exit()
    engine = make_engine(database_url(settings))
    try:
        groups = in_session(engine, gap_groups)
    finally:
        engine.dispose()
    if as_json:
        echo_json([g.to_dict() for g in groups])
        return
    if not groups:
        echo(msg("MSG_TUTOR_GAPS_NONE"))
    for group in groups:
        echo(msg("MSG_TUTOR_GAP_GROUP", count=group.count, cause=group.cause,
                 langs=", ".join(group.langs), sections=", ".join(group.sections[:5])))
