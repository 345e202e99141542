"""The owner's scheduled tasks in Prefect: the `owner-task` flow (deployment
`owner-task/scheduled`, served by deployments/serve.py with one schedule per active task,
slug `task-<id>`, parameters `{"task_id": id}`) and the calls the gateway makes to add and
drop those schedules (`sync`).

A firing makes a due row; the gateway (which owns the runtime: sessions, memory, approvals)
turns it into a turn from the owner and delivers the reply; this run waits for that end and
fails when the turn failed, so Prefect retries it; after the last retry the owner is told.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from prefect import flow, get_client
from prefect.client.schemas.filters import (
    DeploymentFilter,
    DeploymentFilterId,
    FlowRunFilter,
    FlowRunFilterState,
    FlowRunFilterStateType,
)
from prefect.client.schemas.objects import State, StateType
from prefect.client.schemas.schedules import SCHEDULE_TYPES, CronSchedule
from prefect.context import get_run_context
from prefect.states import Completed

from metnos.features.schedules.models import ScheduledTask
from metnos.features.schedules.owner import Sync, slug
from metnos.ground.settings import Settings
from tasks.schedules import make_due_task, report_failed, wait_end_task


def _failed(flow: Any, flow_run: Any, state: State) -> None:
    report_failed(str(flow_run.id), "owner-task/scheduled", flow_run.run_count,
                  (flow_run.parameters or {}).get("task_id"))


# retried once (a gateway restarting, a model that timed out), then reported (`_failed`)
@flow(name="owner-task", persist_result=False, log_prints=False, retries=1,
      retry_delay_seconds=30, on_failure=[_failed])
async def owner_task(task_id: str) -> State:
    run = get_run_context().flow_run  # type: ignore[union-attr]
    assert run is not None
    due = await make_due_task(task_id, str(run.id), run.run_count)
    if due is None:
        return Completed(message="the task was removed: nothing to do", name="Not active")
    await wait_end_task(due)
    return Completed(message="the turn ran; its reply went to the task's chat", name="Done")


def sync(settings: Settings) -> Sync:
    """The gateway's Prefect calls for the owner's tasks."""
    name = settings.schedules.deployment

    async def add(task: ScheduledTask) -> None:
        async with get_client() as client:
            deployment = await client.read_deployment_by_name(name)
            cron: SCHEDULE_TYPES = CronSchedule(cron=task.cron, timezone=task.timezone)
            await client.create_deployment_schedules(
                deployment.id, [(cron, True)],
                parameters={"task_id": task.id}, slug=slug(task.id))
            # the next runs now, not at the scheduler's next loop
            await client.request("POST", "/deployments/{id}/schedule",
                                 path_params={"id": deployment.id}, json={})

    async def remove(task_id: str) -> None:
        async with get_client() as client:
            deployment = await client.read_deployment_by_name(name)
            for schedule in await client.read_deployment_schedules(deployment.id):
                if schedule.slug == slug(task_id):
                    await client.delete_deployment_schedule(deployment.id, schedule.id)

    async def next_runs() -> dict[str, datetime]:
        async with get_client() as client:
            deployment = await client.read_deployment_by_name(name)
            runs = await client.read_flow_runs(
                deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=[deployment.id])),
                flow_run_filter=FlowRunFilter(state=FlowRunFilterState(
                    type=FlowRunFilterStateType(any_=[StateType.SCHEDULED]))),
                sort="EXPECTED_START_TIME_ASC", limit=200)  # type: ignore[arg-type]
        found: dict[str, datetime] = {}
        for run in runs:
            task_id = (run.parameters or {}).get("task_id")
            if task_id and run.expected_start_time and task_id not in found:
                found[str(task_id)] = run.expected_start_time
        return found

    return Sync(add=add, remove=remove, next_runs=next_runs)


__all__ = ["owner_task", "sync"]
