"""The scheduler's signals for the Tutor's `scheduler` and `services` probes, read from Prefect.

`metnos/` never imports Prefect: it reads a `Callable[[], SchedulerSignals]`. Here that
callable is a `Snapshot`, kept current by a refresher task of the gateway's lifespan
(`with_scheduler_signals`), so that a turn never waits for Prefect. Each refresh reads, with
short time bounds: the API's `/health`; the newest `last_polled` of the deployments (the
runner of `deployments/serve.py` calls `POST /deployments/get_scheduled_flow_runs` every
`PREFECT_RUNNER_POLL_FREQUENCY` seconds, and the server then marks those deployments ready and
sets their `last_polled`, prefect/server/api/deployments.py); and the counts of the
deployments' flow runs by state over `WINDOW`. A refresher that stops leaves its snapshot to
age: its `observed_at` is the observation's time, so the Tutor says it is stale.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi import FastAPI
from prefect.client.orchestration import PrefectClient
from prefect.client.schemas.filters import (
    FlowFilter,
    FlowFilterName,
    FlowRunFilter,
    FlowRunFilterDeploymentId,
    FlowRunFilterExpectedStartTime,
    FlowRunFilterState,
    FlowRunFilterStateName,
    FlowRunFilterStateType,
)
from prefect.client.schemas.objects import StateType
from prefect.settings import get_current_settings

from metnos.tutor.probes import SchedulerSignals

log = logging.getLogger(__name__)

HEALTH_TIMEOUT_S = 2.0  # the health endpoint answers in milliseconds when the server is up
READ_TIMEOUT_S = 5.0  # the deployments and the counts together
REFRESH_S = 15.0  # half the scheduler probe's 30 s ttl: one slow refresh does not make it stale
WINDOW = timedelta(hours=24)  # the nightly flows run once a day: last night's crash counts
DEPLOYMENTS_READ = 200  # more than deployments/serve.py serves, by far
# runs counted per state: a state type, or a state name where the type is shared ("Late"
# runs are SCHEDULED runs past their time, marked by the server's late-runs service)
COUNTED: dict[str, FlowRunFilterState] = {
    "completed": FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.COMPLETED])),
    "failed": FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.FAILED])),
    "crashed": FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.CRASHED])),
    "running": FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.RUNNING])),
    "late": FlowRunFilterState(name=FlowRunFilterStateName(any_=["Late"])),
    "scheduled": FlowRunFilterState(name=FlowRunFilterStateName(any_=["Scheduled"])),
}


def heartbeat_timeout_s() -> float:
    """How old the newest `last_polled` may be while the runner is alive. The runner polls
    every `poll_frequency` seconds (10 by default) and the server records the poll in a
    background task a moment later; six missed polls, and never under the server's own
    60 s (`deployment_last_polled_timeout_seconds`, after which it marks a deployment
    not ready), keep a loaded machine from reading a slow poll as a dead runner."""
    return float(max(60, 6 * get_current_settings().runner.poll_frequency))


def client(api_url: str | None = None) -> PrefectClient:
    """A client of the configured API (or of `api_url`), its own: the refresher's requests
    never share a turn's client nor its retries' time."""
    api = get_current_settings().api
    return PrefectClient(api_url or str(api.url), api_key=api.key.get_secret_value()
                         if api.key else None, auth_string=api.auth_string.get_secret_value()
                         if api.auth_string else None,
                         httpx_settings={"timeout": READ_TIMEOUT_S})


async def read_signals(prefect: PrefectClient, *, flow_names: Sequence[str] | None = None,
                       now: datetime | None = None) -> SchedulerSignals:
    """One reading, within `HEALTH_TIMEOUT_S + READ_TIMEOUT_S`. `flow_names` restricts it
    to those flows' deployments (default: every deployment of the server, which is this
    instance's own). A signal that could not be read is None, never a guess."""
    now = now or datetime.now(UTC)
    timeout = heartbeat_timeout_s()
    try:
        failed = await asyncio.wait_for(prefect.api_healthcheck(), HEALTH_TIMEOUT_S)
    except TimeoutError:
        failed = TimeoutError()
    if failed is not None:
        return SchedulerSignals(server_reachable=False, heartbeat_timeout_s=timeout,
                                observed_at=now)
    flows = FlowFilter(name=FlowFilterName(any_=list(flow_names))) if flow_names else None
    try:
        deployments, runs = await asyncio.wait_for(_reads(prefect, flows, now), READ_TIMEOUT_S)
    except Exception as exc:  # reachable, yet the reads failed: those signals are unknown
        log.warning("scheduler_signals.read_failed %s", type(exc).__name__)
        return SchedulerSignals(server_reachable=True, heartbeat_timeout_s=timeout,
                                observed_at=now)
    polled = [d.last_polled for d in deployments if d.last_polled is not None]
    # observed when the last read answered: a poll recorded during the reads is not "future"
    return SchedulerSignals(server_reachable=True, runner_heartbeat=max(polled, default=None),
                            heartbeat_timeout_s=timeout, runs=runs,
                            observed_at=datetime.now(UTC), deployments=len(deployments))


async def _reads(prefect: PrefectClient, flows: FlowFilter | None,
                 now: datetime) -> tuple[list[Any], dict[str, int]]:
    """The deployments, and their runs expected to start within `WINDOW` up to now, one
    count per state (turn flows run in the gateway, not from a deployment: not counted).
    One request at a time (about 30 ms each): concurrent first requests of one client
    fetch its CSRF token at once, and all but one then hold a dead token."""
    deployments = await prefect.read_deployments(flow_filter=flows, limit=DEPLOYMENTS_READ)
    when = FlowRunFilterExpectedStartTime(after_=now - WINDOW, before_=now)
    deployed = FlowRunFilterDeploymentId(is_null_=False)
    runs: dict[str, int] = {}
    for name, state in COUNTED.items():
        runs[name] = await prefect.count_flow_runs(flow_filter=flows, flow_run_filter=(
            FlowRunFilter(expected_start_time=when, deployment_id=deployed, state=state)))
    return deployments, runs


class Snapshot:
    """The latest signals (an empty reading before the first refresh: unavailable)."""

    def __init__(self) -> None:
        self.signals = SchedulerSignals(heartbeat_timeout_s=heartbeat_timeout_s())

    def __call__(self) -> SchedulerSignals:
        return self.signals

    async def refresh(self, *, interval_s: float = REFRESH_S, api_url: str | None = None,
                      flow_names: Sequence[str] | None = None) -> None:
        """Read the signals every `interval_s` until cancelled; a failed reading keeps the
        previous snapshot, which ages."""
        async with client(api_url) as prefect:
            while True:
                try:
                    self.signals = await read_signals(prefect, flow_names=flow_names)
                except Exception:  # the snapshot ages; the next round tries again
                    log.exception("scheduler_signals.refresh_failed")
                await asyncio.sleep(interval_s)


def with_scheduler_signals(app: FastAPI, snapshot: Snapshot) -> FastAPI:
    """`app` with `snapshot` refreshed for the life of its lifespan."""
    inner = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[Any]:
        task = asyncio.get_running_loop().create_task(snapshot.refresh(),
                                                      name="scheduler-signals")
        try:
            async with inner(app) as state:
                yield state
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    app.router.lifespan_context = lifespan
    app.state.scheduler_signals = snapshot
    return app
