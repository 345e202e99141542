"""Every schedule is a Prefect deployment in the instance's time zone, with its next run: the
real runner (`python -m deployments.serve`, as `metnos serve` starts it) against the session's
Prefect server, for an instance set to America/New_York (no Europe/Rome anywhere)."""

from __future__ import annotations

import asyncio
import importlib.util
import time
from zoneinfo import ZoneInfo

import pytest
from prefect import get_client

from metnos.faces.registry import create_tables
from metnos.features.schedules import owner
from metnos.ground.db.engine import database_url, make_engine
from tests.reminders.test_delivery import deployment_runner, wait_deployment
from tests.schedules.support import next_runs
from tests.support.home import MakeHome

ZONE = "America/New_York"
SCHEDULED = ["audit-check/nightly", "translation-sweep/nightly", "synt/check", "traces/weekly",
             "introvert/nightly", "ager/check", "tutor-catalog/check", "owner-task/scheduled"]
if importlib.util.find_spec("flows.mail_digest") is not None:  # helper B's flow, issue 15
    SCHEDULED.append("mail-digest/morning")


async def _zones_once_applied(names: list[str], timeout_s: float) -> dict[str, list[str]]:
    """Each deployment's schedule zones, once every one is in ZONE (or at the deadline)."""
    deadline = time.monotonic() + timeout_s
    async with get_client() as client:
        while True:
            zones = {name: [str(getattr(s.schedule, "timezone", None)) for s in
                            (await client.read_deployment_by_name(name)).schedules]
                     for name in names}
            if all(z and set(z) == {ZONE} for z in zones.values()) or \
                    time.monotonic() > deadline:
                return zones
            await asyncio.sleep(0.5)


@pytest.mark.timeout(300)
async def test_every_schedule_is_visible_with_its_next_run_in_the_instance_zone(
        make_home: MakeHome, prefect_api: str) -> None:
    home = make_home(lang="en", METNOS_TIMEZONE=ZONE)
    engine = make_engine(database_url(home.settings))
    create_tables(engine)
    task = owner.new_task(engine, home.settings, when="every Monday at 8",
                          text="tell me what is on the shopping list", user_id="owner",
                          lang="en", channel="cli", address="schedule-cli")
    engine.dispose()
    with deployment_runner(home):
        for name in [*SCHEDULED, "reminder/at"]:
            await wait_deployment(name, timeout_s=120)
        # the session's Prefect server is shared: an earlier test's runner (another zone)
        # applied these deployments before; this runner applies them again in ZONE
        zones = await _zones_once_applied(SCHEDULED, timeout_s=120)
        for name in SCHEDULED:
            assert zones[name] and set(zones[name]) == {ZONE}, (name, zones[name])
        async with get_client() as client:
            mine = (await client.read_deployment_by_name("owner-task/scheduled")).schedules
        for name in SCHEDULED:
            runs = await next_runs(name)
            assert runs, f"{name} has no next run"
        [schedule] = [s for s in mine if s.slug == f"task-{task.id}"]
        assert schedule.parameters == {"task_id": task.id}
        assert getattr(schedule.schedule, "cron", None) == "0 8 * * 1"
        run = next(r for r in await next_runs("owner-task/scheduled")
                   if r.parameters == {"task_id": task.id})
        local = run.expected_start_time.astimezone(ZoneInfo(ZONE))
        assert (local.weekday(), local.hour, local.minute) == (0, 8, 0), local
        nightly = (await next_runs("translation-sweep/nightly"))[0].expected_start_time
        assert nightly.astimezone(ZoneInfo(ZONE)).strftime("%H:%M") == "02:40"
