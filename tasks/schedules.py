"""Prefect tasks of the owner's scheduled tasks: thin wrappers over `metnos.features.schedules`."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime

from prefect import task
from prefect.cache_policies import NO_CACHE

from metnos.features.schedules import notices, store
from metnos.ground.db.engine import in_session
from metnos.ground.errors import MetnosError
from tasks.evolution import with_engine


# a new due row per attempt: a retried run is a new firing
@task(name="make-due", cache_policy=NO_CACHE, persist_result=False, retries=3,
      retry_delay_seconds=[1, 5, 20])
async def make_due_task(task_id: str, flow_run_id: str, attempt: int) -> str | None:
    """The firing's run id (the gateway turns it into a turn); None: the task was removed."""
    return await asyncio.to_thread(with_engine, lambda engine, _: in_session(
        engine, store.make_due, task_id, flow_run_id, attempt))


@task(name="wait-for-turn", cache_policy=NO_CACHE, persist_result=False)
async def wait_end_task(run_id: str) -> str:
    """Wait until the gateway ran the turn: its status. Raises MetnosError when it failed or
    took longer than `[schedules] run_timeout_s` (the flow is then retried)."""
    deadline = None
    while True:
        found = await asyncio.to_thread(with_engine, lambda engine, settings: (
            in_session(engine, store.run, run_id), settings.schedules.run_timeout_s))
        run, timeout = found
        deadline = deadline or time.monotonic() + timeout
        if run is not None and run.status == "done":
            return run.status
        if run is not None and run.status == "failed":
            raise MetnosError(run.error or "ERR_SCHEDULE_RUN_FAILED")
        if time.monotonic() > deadline:
            raise MetnosError("ERR_SCHEDULE_RUN_TIMEOUT")
        await asyncio.sleep(1.0)


def report_failed(flow_run_id: str, deployment: str, attempts: int,
                  task_id: str | None) -> None:
    """The owner is told of a run that failed after its retries (blocking, once)."""
    with_engine(lambda engine, settings: notices.report_failed(
        engine, settings, flow_run_id=flow_run_id, deployment=deployment, attempts=attempts,
        task_id=task_id, due_at=datetime.now(UTC)))
