"""The deployment runner of `metnos serve`: scheduled flows (SPEC §12).

    python -m deployments.serve

Each scheduled run starts a process (4–6 s, measured): right for nightly work, never for a
chat turn (a reminder arrives a few seconds after its time). Later issues add the mail digest
here.
"""

from __future__ import annotations

from prefect import serve
from prefect.schedules import Cron, Interval

from flows.ager import ager
from flows.audit_check import audit_check
from flows.introvert import introvert
from flows.reminder import reminder
from flows.synt import synt
from flows.traces import traces
from flows.translation_sweep import translation_sweep
from flows.tutor import tutor_catalog

TIMEZONE = "Europe/Rome"


def main() -> None:
    serve(
        audit_check.to_deployment(  # type: ignore[arg-type]  # sync context: not a coroutine
            name="nightly", schedules=[Cron("15 3 * * *", timezone=TIMEZONE)],
            description="Verify the audit chain and its signed checkpoint every night."),
        translation_sweep.to_deployment(  # type: ignore[arg-type]
            name="nightly", schedules=[Cron("40 2 * * *", timezone=TIMEZONE)],
            description="Write translation candidates for stale and missing texts (tier wise)."),
        synt.to_deployment(  # type: ignore[arg-type]
            name="check", schedules=[Interval(1800)],
            description="Due proto-mnests: a composition or a generation proposal (no model "
            "call); accepted generations write candidates, unsigned until the owner signs."),
        traces.to_deployment(  # type: ignore[arg-type]
            name="weekly", schedules=[Cron("30 3 * * *", timezone=TIMEZONE)],
            description="Detect the mnestoma's traces when [evolution] traces_every_days "
            "passed (checked daily, one query; weekly by default)."),
        introvert.to_deployment(  # type: ignore[arg-type]
            name="nightly", schedules=[Cron("50 3 * * *", timezone=TIMEZONE)],
            description="Propose fusing, generalising or specialising executors inside "
            "one trace, as one batch (proposals only)."),
        # no schedule of its own: the gateway schedules one run per reminder, at its time
        reminder.to_deployment(  # type: ignore[arg-type]
            name="at", description="At a reminder's time, make its message due (the gateway "
            "delivers it to the chat it was set from)."),
        # time is use: the check is one query, a cycle runs only after ager_every invocations
        ager.to_deployment(  # type: ignore[arg-type]
            name="check", schedules=[Interval(300)],
            description="Every 5 minutes, one query: an ager cycle when [evolution] ager_every "
            "invocations passed since the last one (a sleeping system does not age)."),
        # the check parses the docs (no model) and compiles only what changed
        tutor_catalog.to_deployment(  # type: ignore[arg-type]
            name="check", schedules=[Interval(600)],
            description="Every 10 minutes: compile the Tutor's catalog again when the docs "
            "or the executor manifests changed (unchanged sections keep their vectors)."),
        limit=4,
    )


if __name__ == "__main__":
    main()
