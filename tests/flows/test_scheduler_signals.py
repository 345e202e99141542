"""The scheduler's signals read from the test session's real Prefect server, through the same
API the deployment runner calls: a deployment nobody polls is a stopped scheduler, a poll
makes it running, a crashed run in the window degrades it, and a closed port is a failed
server. The flow is this module's own (its name unique), so other tests' deployments and
runs are not counted."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta
from functools import partial

from asgi_lifespan import LifespanManager
from prefect import flow
from prefect.client.orchestration import PrefectClient
from prefect.states import Crashed

from flows._scheduler_signals import client, empty, read_signals, reader
from flows.gateway import app
from metnos.features.tutor.probes import (
    SchedulerSignals,
    runner_alive,
    scheduler_services,
    scheduler_state,
)
from metnos.features.tutor.signals import Snapshot
from tests.support.home import MakeHome
from tests.support.pg import free_port

NAME = f"signals-check-{uuid.uuid4().hex[:8]}"


@flow(name=NAME, persist_result=False)
def idle() -> None:
    """Never run: only its deployment and its runs' states matter here."""


def _state(sig: SchedulerSignals) -> tuple[object, str, str | None]:
    reading = scheduler_state(sig, sig.observed_at or datetime.now(UTC))
    return reading.facts["state"], reading.status, reading.cause


async def _read(prefect: PrefectClient) -> SchedulerSignals:
    return await read_signals(prefect, flow_names=[NAME])


async def test_stopped_running_degraded_and_failed(prefect_api: str) -> None:
    deployment = await idle.to_deployment(name="check")  # type: ignore[misc]
    deployment_id = await deployment.apply()
    async with client(prefect_api) as prefect:
        # served (the deployment exists) but no runner ever polled it: stopped
        sig = await _read(prefect)
        assert sig.server_reachable is True and sig.deployments == 1
        assert sig.runner_heartbeat is None and runner_alive(sig) is False
        assert _state(sig) == ("stopped", "ok", "runner_heartbeat_missing")

        # the runner's poll: the server records last_polled in a background task
        await prefect.get_scheduled_flow_runs_for_deployments([deployment_id])
        for _ in range(40):
            sig = await _read(prefect)
            if sig.runner_heartbeat is not None:
                break
            await asyncio.sleep(0.25)
        assert sig.runner_heartbeat is not None and runner_alive(sig) is True
        assert sig.observed_at is not None
        assert 0 <= (sig.observed_at - sig.runner_heartbeat).total_seconds() < 30
        assert _state(sig) == ("running", "ok", None)
        assert sig.runs["crashed"] == 0 and sig.heartbeat_timeout_s >= 60

        # one crashed run of the deployment in the window: degraded, the cause named
        run = await prefect.create_flow_run_from_deployment(deployment_id)
        await prefect.set_flow_run_state(run.id, Crashed(message="test"), force=True)
        sig = await _read(prefect)
        assert sig.runs["crashed"] == 1 and sig.runs["completed"] == 0
        assert _state(sig) == ("degraded", "ok", "runs_crashed")

    # nothing listens on the port: the server is unreachable, within the health bound
    started = asyncio.get_running_loop().time()
    async with client(f"http://127.0.0.1:{free_port()}/api") as prefect:
        sig = await _read(prefect)
    assert asyncio.get_running_loop().time() - started < 10
    assert sig.server_reachable is False and runner_alive(sig) is None
    assert _state(sig) == ("failed", "ok", "server_unreachable")


async def test_the_refresher_keeps_the_snapshot_and_it_ages_when_stopped(
        prefect_api: str) -> None:
    snapshot = Snapshot(empty())
    assert snapshot().observed_at is None  # before the first refresh: nothing observed
    task = asyncio.get_running_loop().create_task(
        snapshot.refresh(partial(reader, prefect_api, [NAME]), interval_s=0.2))
    try:
        for _ in range(100):
            if snapshot().observed_at is not None:
                break
            await asyncio.sleep(0.1)
        first = snapshot().observed_at
        assert first is not None and snapshot().server_reachable is True
        for _ in range(100):
            again = snapshot().observed_at
            if again is not None and again > first:
                break
            await asyncio.sleep(0.1)
        assert again is not None and again > first  # refreshed in the background
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    held = snapshot().observed_at
    await asyncio.sleep(0.5)
    assert snapshot().observed_at == held  # stopped: the snapshot no longer moves


async def test_the_served_gateway_refreshes_the_signals_for_its_lifespan(
        make_home: MakeHome, prefect_api: str) -> None:
    """The composition root's app reads the real server in the background; its services
    probe sees the Prefect server up; once the app stops, so does the refresher."""
    make_home(lang="en")
    gateway = app()
    snapshot: Snapshot = gateway.state.gateway.edges.signals
    async with LifespanManager(gateway, startup_timeout=60, shutdown_timeout=60):
        for _ in range(100):
            if snapshot().observed_at is not None:
                break
            await asyncio.sleep(0.1)
        sig = snapshot()
        assert sig.server_reachable is True and sig.observed_at is not None
        assert scheduler_services(sig, datetime.now(UTC))["prefect_server"] is True
    held = snapshot().observed_at
    await asyncio.sleep(0.3)
    assert snapshot().observed_at == held


def test_services_from_signals_only_while_they_are_fresh() -> None:
    now = datetime.now(UTC)
    alive = SchedulerSignals(True, now, 60.0, {}, now, deployments=3)
    assert scheduler_services(alive, now) == {"prefect_server": True,
                                              "deployment_runner": True}
    aged = SchedulerSignals(True, now, 60.0, {}, now - timedelta(minutes=5), deployments=3)
    assert scheduler_services(aged, now) == {"prefect_server": None,
                                             "deployment_runner": None}
    silent = SchedulerSignals(True, now - timedelta(minutes=5), 60.0, {}, now, deployments=3)
    assert scheduler_services(silent, now)["deployment_runner"] is False
    down = SchedulerSignals(False, None, 60.0, {}, now)
    assert scheduler_services(down, now) == {"prefect_server": False,
                                             "deployment_runner": None}
    assert scheduler_services(None, now) == {"prefect_server": None,
                                             "deployment_runner": None}
