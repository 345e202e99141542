"""A run missed while the runner was stopped is reported once at the next start, never
silently skipped: two past-due runs of an owner's task (as Prefect leaves them when nothing
served them), the runner starts, one notice names the task (the latest runs late, the earlier
one skipped and cancelled); that late run fails (no gateway runs its turn), is retried and
reported; a second start says nothing more."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta

import pytest
from prefect import get_client
from prefect.states import Scheduled
from sqlmodel import select

from metnos.faces.registry import create_tables
from metnos.features.reminders.outbox import Outbox
from metnos.features.schedules import owner
from metnos.features.schedules.models import ScheduleNotice
from metnos.ground.db.engine import database_url, make_engine
from metnos.ground.db.engine import session as db_session
from tests.reminders.test_delivery import deployment_runner, wait_deployment
from tests.support.home import MakeHome

FAST = {"METNOS_SCHEDULES_MISSED_GRACE_S": "3600", "METNOS_SCHEDULES_RUN_TIMEOUT_S": "3"}


def schedule_notices(engine: object) -> list[Outbox]:
    with db_session(engine) as db:  # type: ignore[arg-type]
        return list(db.exec(select(Outbox).where(Outbox.kind == "schedule")
                            .order_by(Outbox.created_at)))  # type: ignore[arg-type]


async def wait_for(check: object, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(1)


@pytest.mark.timeout(600)
async def test_a_missed_run_is_reported_once_then_a_failed_one_after_its_retries(
        make_home: MakeHome, prefect_api: str) -> None:
    home = make_home(lang="it", METNOS_TIMEZONE="Europe/Lisbon", **FAST)
    engine = make_engine(database_url(home.settings))
    create_tables(engine)
    task = owner.new_task(engine, home.settings, when="ogni lunedì alle 8",
                          text="dimmi cosa c'è nella lista della spesa", user_id="owner",
                          lang="it", channel="cli", address="schedule-cli")
    with deployment_runner(home):  # the deployment exists; then the instance stops
        await wait_deployment("owner-task/scheduled", timeout_s=120)
    now = datetime.now(UTC)
    async with get_client() as client:
        deployment = await client.read_deployment_by_name("owner-task/scheduled")
        older, latest = [await client.create_flow_run_from_deployment(
            deployment.id, parameters={"task_id": task.id},
            state=Scheduled(scheduled_time=now - timedelta(hours=h))) for h in (3, 2)]
    assert schedule_notices(engine) == []
    with deployment_runner(home):
        await wait_for(lambda: len(schedule_notices(engine)) >= 1, 120)
        [missed] = schedule_notices(engine)
        assert missed.channel == "cli" and missed.due_at is not None
        assert missed.text.startswith("Mentre Metnos era fermo, queste esecuzioni programmate")
        assert "la tua attività “dimmi cosa c'è nella lista della spesa” (ogni lunedì alle 8)" \
            in missed.text
        assert "parte adesso, in ritardo, una volta sola; 1 esecuzioni precedenti sono " \
            "saltate" in missed.text
        async with get_client() as client:
            skipped = await client.read_flow_run(older.id)
            assert skipped.state is not None and skipped.state.type.value == "CANCELLED"
        # the late one runs; no gateway takes its turn: it fails, is retried, is reported
        await wait_for(lambda: len(schedule_notices(engine)) >= 2, 240)  # a 30 s retry
        failed = schedule_notices(engine)[1]
        assert failed.text.startswith("L'esecuzione programmata di la tua attività"), failed.text
        assert "dopo 2 tentativi" in failed.text
        async with get_client() as client:
            ran = await client.read_flow_run(latest.id)
            assert ran.state is not None and ran.state.type.value == "FAILED"
            assert ran.run_count == 2
    with db_session(engine) as db:
        # this test's runs (the worker's Prefect server also holds runs other tests left)
        ours = {str(older.id), str(latest.id)}
        kinds = sorted((n.flow_run_id, n.kind) for n in db.exec(select(ScheduleNotice))
                       if n.flow_run_id in ours)
    assert kinds == sorted([(str(older.id), "missed"), (str(latest.id), "missed"),
                            (str(latest.id), "failed")])
    with deployment_runner(home):  # a second start: nothing new to report
        await wait_deployment("owner-task/scheduled", timeout_s=60)
        await asyncio.sleep(8)
    assert len(schedule_notices(engine)) == 2
    engine.dispose()
