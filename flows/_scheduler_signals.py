"""The scheduler's signals for the Tutor's `scheduler` and `services` probes, read from Prefect.

`metnos/` never imports Prefect: its `metnos.features.tutor.signals.Snapshot`, refreshed for the
gateway's lifespan, reads through `reader` here. A reading takes, with short time bounds: the
API's `/health`; the newest `last_polled` of the deployments (the runner of
`deployments/serve.py` polls `POST /deployments/get_scheduled_flow_runs`, and the server then
sets their `last_polled`: prefect/server/api/deployments.py); the runs counted by state.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime

from prefect.client.orchestration import PrefectClient
from prefect.settings import get_current_settings

from flows._scheduler_reads import READ_TIMEOUT_S, client, flows_named, reads
from metnos.features.tutor.probes import SchedulerSignals
from metnos.features.tutor.signals import Reader

log = logging.getLogger(__name__)

HEALTH_TIMEOUT_S = 2.0  # the health endpoint answers in milliseconds when the server is up
__all__ = ["client", "empty", "heartbeat_timeout_s", "read_signals", "reader"]


def heartbeat_timeout_s() -> float:
    """How old the newest `last_polled` may be while the runner is alive. The runner polls
    every `poll_frequency` seconds (10 by default) and the server records the poll in a
    background task a moment later; six missed polls, and never under the server's own
    60 s (`deployment_last_polled_timeout_seconds`, after which it marks a deployment
    not ready), keep a loaded machine from reading a slow poll as a dead runner."""
    return float(max(60, 6 * get_current_settings().runner.poll_frequency))


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
    flows = flows_named(list(flow_names) if flow_names else None)
    try:
        deployments, runs = await asyncio.wait_for(reads(prefect, flows, now), READ_TIMEOUT_S)
    except Exception as exc:  # reachable, yet the reads failed: those signals are unknown
        log.warning("scheduler_signals.read_failed %s", type(exc).__name__)
        return SchedulerSignals(server_reachable=True, heartbeat_timeout_s=timeout,
                                observed_at=now)
    polled = [d.last_polled for d in deployments if d.last_polled is not None]
    # observed when the last read answered: a poll recorded during the reads is not "future"
    return SchedulerSignals(server_reachable=True, runner_heartbeat=max(polled, default=None),
                            heartbeat_timeout_s=timeout, runs=runs,
                            observed_at=datetime.now(UTC), deployments=len(deployments))


@asynccontextmanager
async def reader(api_url: str | None = None,
                 flow_names: Sequence[str] | None = None) -> AsyncIterator[Reader]:
    """How `metnos.features.tutor.signals.Snapshot` reads: one client for the refresher's life."""
    async with client(api_url) as prefect:
        yield lambda: read_signals(prefect, flow_names=flow_names)


def empty() -> SchedulerSignals:
    """The signals before the first reading: nothing observed, the runner's timeout known."""
    return SchedulerSignals(heartbeat_timeout_s=heartbeat_timeout_s())
