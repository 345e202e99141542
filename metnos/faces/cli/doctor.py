"""`metnos doctor`: one look at this instance, each problem with its fix (issue 26).

A line per check (✓ healthy, ✗ a problem with its fix below it, · not applicable or not
checked, with why), then one summary line. `--json` gives the findings. Exit code 0 when no
check found a problem, 1 otherwise. Works whether `metnos serve` runs or not.
"""

from __future__ import annotations

import typer

from metnos.faces.cli._common import JsonFlag, settings_or_exit
from metnos.faces.cli._lang import cli_lang, msg
from metnos.faces.cli._out import echo_json, echo_line

MARKS = {True: "✓", False: "✗", None: "·"}


def doctor(as_json: JsonFlag = False) -> None:
    from metnos.faces.doctor import diagnose

    settings = settings_or_exit()
    lang = cli_lang()
    findings = diagnose(settings, lang)
    problems = [f for f in findings if f.ok is False]
    unchecked = [f for f in findings if f.ok is None]
    if as_json:
        echo_json({"ok": not problems, "home": str(settings.home), "lang": lang,
                   "findings": [f.to_dict() for f in findings]})
    else:
        echo_line(msg("MSG_DOCTOR_TITLE", home=str(settings.home)))
        for finding in findings:
            echo_line(f"  {MARKS[finding.ok]} {finding.line}")
            if finding.fix:
                echo_line(f"      → {finding.fix}")
        if problems:
            echo_line(msg("MSG_DOCTOR_PROBLEMS", count=len(problems)))
        elif unchecked:
            echo_line(msg("MSG_DOCTOR_WELL_NOTES", count=len(unchecked)))
        else:
            echo_line(msg("MSG_DOCTOR_WELL"))
    if problems:
        raise typer.Exit(1)
