"""What the schedule tests share: the gateway composed as `flows/gateway.py` composes it (turns
as Prefect flows, reminders, the owner's scheduled tasks) on a real loopback port, and reads of
the session's Prefect server."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack, asynccontextmanager, contextmanager
from datetime import UTC, datetime
from typing import Any

import httpx
from prefect import get_client
from prefect.client.schemas.filters import (
    DeploymentFilter,
    DeploymentFilterId,
    FlowRunFilter,
    FlowRunFilterExpectedStartTime,
    FlowRunFilterState,
    FlowRunFilterStateType,
)
from prefect.client.schemas.objects import StateType

from flows.owner_task import sync
from flows.reminder import scheduler
from flows.turn import resume_approval, run_turn
from metnos.faces.gateway.app import create_app
from metnos.faces.gateway.outbox_delivery import with_reminders
from metnos.faces.gateway.scheduled import with_schedules
from metnos.faces.wiring import Edges
from tests.reminders.test_delivery import deployment_runner, wait_deployment
from tests.support.home import Home, served_app


@contextmanager
def composed_gateway(home: Home) -> Iterator[str]:
    app = with_schedules(with_reminders(create_app(
        home.settings, runner=run_turn, resumer=resume_approval,
        edges=Edges(scheduler=scheduler(home.settings), sync=sync(home.settings)))))
    with served_app(app, home.settings.gateway.port) as base:
        yield base


@asynccontextmanager
async def composed_api(home: Home, *, deployed: bool = False) -> AsyncIterator[httpx.AsyncClient]:
    """The owner's HTTP client of `composed_gateway`; `deployed`: with the owner-task
    deployment served (`deployment_runner`) and ready first."""
    with ExitStack() as stack:
        if deployed:
            stack.enter_context(deployment_runner(home))
        base = stack.enter_context(composed_gateway(home))
        if deployed:
            await wait_deployment("owner-task/scheduled", timeout_s=120)
        async with httpx.AsyncClient(base_url=base, headers=home.auth(), timeout=60) as api:
            yield api


async def next_runs(deployment: str, timeout_s: float = 60) -> list[Any]:
    """The future scheduled runs of `deployment`, soonest first (waits for the scheduler)."""
    deadline = time.monotonic() + timeout_s
    async with get_client() as client:
        found = await client.read_deployment_by_name(deployment)
        while True:
            runs = await client.read_flow_runs(
                deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=[found.id])),
                flow_run_filter=FlowRunFilter(
                    state=FlowRunFilterState(type=FlowRunFilterStateType(
                        any_=[StateType.SCHEDULED])),
                    expected_start_time=FlowRunFilterExpectedStartTime(
                        after_=datetime.now(UTC))),
                sort="EXPECTED_START_TIME_ASC")  # type: ignore[arg-type]
            if runs or time.monotonic() > deadline:
                return list(runs)
            await asyncio.sleep(1)
