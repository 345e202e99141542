"""The deployment runner: scheduled flows (SPEC §12).

`metnos serve` runs it inside the gateway process (`serve_schedules`, started by
`python -m flows.gateway --schedules` once the gateway is up, stopped after its drain): a
process of its own held ~145 MiB for a loop that polls Prefect every few seconds, and the
gateway already holds Prefect and every flow (issue 29). On its own, for a test or to look at
it:

    python -m deployments.serve

Each scheduled run starts a process (4–6 s, measured): right for nightly work, never for a
chat turn (a reminder arrives a few seconds after its time). Every schedule is in the
instance's time zone (`[general] timezone`, `METNOS_TIMEZONE`; the machine's by default).

Before serving: runs missed while nothing served them are reported once (the latest of each
deployment runs late, the earlier ones are skipped: `flows/_schedules_start.py`), and the
owner's scheduled tasks (`metnos schedule`) become the schedules of `owner-task/scheduled`.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from typing import Any

from prefect import serve
from prefect.runner import Runner
from prefect.schedules import Cron, Interval

from flows._schedules_start import missed, reconcile, tables
from flows.ager import ager
from flows.audit_check import audit_check
from flows.introvert import introvert
from flows.owner_task import owner_task
from flows.reminder import reminder
from flows.synt import synt
from flows.traces import traces
from flows.translation_sweep import translation_sweep
from flows.tutor import tutor_catalog
from metnos.features.schedules.models import ScheduledTask
from metnos.features.schedules.owner import slug, wanted_schedules
from metnos.ground.db.engine import database_url, make_engine
from metnos.ground.settings import Settings, get_settings

log = logging.getLogger(__name__)

LIMIT = 4  # scheduled runs at a time
RETRY_S = 30.0  # a runner that could not start (Prefect unreachable) tries again after this


def built_in(settings: Settings) -> list[Any]:
    """The built-in deployments, in the instance's time zone."""
    tz = settings.timezone
    found = [
        audit_check.to_deployment(
            name="nightly", schedules=[Cron("15 3 * * *", timezone=tz)],
            description="Verify the audit chain and its signed checkpoint every night."),
        translation_sweep.to_deployment(
            name="nightly", schedules=[Cron("40 2 * * *", timezone=tz)],
            description="Write translation candidates for stale and missing texts (tier wise)."),
        synt.to_deployment(
            name="check", schedules=[Interval(1800, timezone=tz)],
            description="Due proto-mnests: a composition or a generation proposal (no model "
            "call); accepted generations write candidates, unsigned until the owner signs."),
        traces.to_deployment(
            name="weekly", schedules=[Cron("30 3 * * *", timezone=tz)],
            description="Detect the mnestoma's traces when [evolution] traces_every_days "
            "passed (checked daily, one query; weekly by default)."),
        introvert.to_deployment(
            name="nightly", schedules=[Cron("50 3 * * *", timezone=tz)],
            description="Propose fusing, generalising or specialising executors inside "
            "one trace, as one batch (proposals only)."),
        # no schedule of its own: the gateway schedules one run per reminder, at its time
        reminder.to_deployment(
            name="at", description="At a reminder's time, make its message due (the gateway "
            "delivers it to the chat it was set from)."),
        # time is use: the check is one query, a cycle runs only after ager_every invocations
        ager.to_deployment(
            name="check", schedules=[Interval(300, timezone=tz)],
            description="Every 5 minutes, one query: an ager cycle when [evolution] ager_every "
            "invocations passed since the last one (a sleeping system does not age)."),
        # the check parses the docs (no model) and compiles only what changed
        tutor_catalog.to_deployment(
            name="check", schedules=[Interval(600, timezone=tz)],
            description="Every 10 minutes: compile the Tutor's catalog again when the docs "
            "or the executor manifests changed (unchanged sections keep their vectors)."),
    ]
    digest = _mail_digest()
    if digest is not None:
        found.append(digest.to_deployment(
            name="morning", schedules=[Cron(settings.mail.digest_cron, timezone=tz)],
            description="Check the mailbox; when something is new, classify it and send a "
                        "digest of what deserves attention (silent when nothing does)."))
    return found


def _mail_digest() -> Any | None:
    """The mail digest flow (flows/mail_digest.py), None while that module is not there."""
    try:
        return importlib.import_module("flows.mail_digest").mail_digest
    except ModuleNotFoundError as exc:
        if exc.name != "flows.mail_digest":
            raise
        log.warning("serve.no_mail_digest: flows/mail_digest.py is missing")
        return None


def owner_tasks(settings: Settings, tasks: list[ScheduledTask]) -> Any:
    """`owner-task/scheduled`: one schedule per active task, in the task's zone."""
    name = settings.schedules.deployment.split("/", 1)[1]
    return owner_task.to_deployment(
        name=name, schedules=[Cron(t.cron, timezone=t.timezone, slug=slug(t.id),
                                   parameters={"task_id": t.id}) for t in tasks],
        description="The owner's scheduled tasks (`metnos schedule list`): each fires a turn "
                    "from the owner, its reply delivered to the chat it was set from.")


async def prepare(settings: Settings, names: list[str]) -> list[ScheduledTask]:
    engine = make_engine(database_url(settings))
    try:
        tables(engine)
        plan = await missed(engine, settings, names)
        if plan.run_late or plan.skip:
            log.warning("serve.missed_runs late=%d skipped=%d", len(plan.run_late),
                        len(plan.skip))
        return await reconcile(engine, settings)
    finally:
        engine.dispose()


def _tasks_only(settings: Settings) -> list[ScheduledTask]:
    engine = make_engine(database_url(settings))
    try:
        return wanted_schedules(engine)
    except Exception:  # no database either: the deployment is served with no task
        log.exception("serve.owner_tasks_unreadable")
        return []
    finally:
        engine.dispose()


async def served(settings: Settings) -> list[Any]:
    """Every deployment to serve: the built-in ones and the owner's scheduled tasks, after the
    runs missed while nothing served them are reported (`prepare`)."""
    # built in a thread: Prefect's `to_deployment` is its coroutine on an event loop
    deployments = await asyncio.to_thread(built_in, settings)
    names = [f"{d.flow_name}/{d.name}" for d in deployments] + [settings.schedules.deployment]
    try:
        tasks = await prepare(settings, names)
    except Exception:  # the schedules are served anyway: a report is not worth no schedules
        log.exception("serve.prepare_failed: missed runs not checked, owner tasks from the "
                      "database only")
        tasks = await asyncio.to_thread(_tasks_only, settings)
    return [*deployments, await asyncio.to_thread(owner_tasks, settings, tasks)]


async def serve_schedules(settings: Settings) -> None:
    """Serve the deployments until cancelled, then stop the runner (its runs in flight are
    cancelled, as a runner stopped with SIGTERM does); a runner that fails is started again
    after `RETRY_S`. Not paused on shutdown: pausing deletes the scheduled runs, and a run
    missed while nothing serves them would leave no trace; kept, it turns Late and is
    reported at the next start."""
    while True:
        try:
            await _serve_once(settings)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("serve.runner_failed retry_s=%s", RETRY_S)
        await asyncio.sleep(RETRY_S)


async def _serve_once(settings: Settings) -> None:
    runner = Runner(limit=LIMIT, pause_on_shutdown=False)
    deployments = await served(settings)
    for deployment in deployments:
        await runner.aadd_deployment(deployment)
    log.info("serve.schedules_served deployments=%d", len(deployments))
    started = asyncio.ensure_future(runner.start(webserver=False))
    try:
        await asyncio.shield(started)
    except asyncio.CancelledError:
        if runner.started and not runner.stopping:
            await runner.astop()
        await asyncio.gather(started, return_exceptions=True)
        raise


def main() -> None:
    logging.basicConfig(level=logging.INFO)
    settings = get_settings()
    serve(*asyncio.run(served(settings)), limit=LIMIT, pause_on_shutdown=False)


if __name__ == "__main__":
    main()
