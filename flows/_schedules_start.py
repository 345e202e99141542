"""What `deployments.serve` does before it serves: missed runs reported once
(`metnos.features.schedules.notices`; the earlier ones of a deployment cancelled, the latest left to
run late, once; only the family's tasks are named), and the owner's tasks and the Prefect
schedules made to agree (schedules of removed tasks dropped; `serve()` then applies one per
active task)."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import UUID

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
from prefect.exceptions import ObjectNotFound
from prefect.states import Cancelled
from sqlalchemy.engine import Engine
from sqlmodel import SQLModel

from metnos.features.schedules import notices, owner
from metnos.features.schedules.models import ScheduledTask, ScheduleNotice, TaskRun
from metnos.ground.settings import Settings


def tables(engine: Engine) -> None:
    """This module's tables, should the gateway not have made them yet."""
    SQLModel.metadata.create_all(engine, tables=[
        SQLModel.metadata.tables[m.__tablename__]
        for m in (ScheduledTask, TaskRun, ScheduleNotice)])


async def missed(engine: Engine, settings: Settings, names: list[str]) -> notices.Plan:
    """The runs of deployments `names` past their time that never ran: of each deployment
    (each task) the latest runs, the earlier are cancelled, so a daily task missed four times
    runs once, the run due a moment ago included; the family's tasks late by more than
    `missed_grace_s` are reported (`notices.report_missed`)."""
    before = datetime.now(UTC)
    async with get_client() as client:
        ids = {}
        for name in names:
            try:
                ids[(await client.read_deployment_by_name(name)).id] = name
            except ObjectNotFound:  # never served yet: nothing of it can be missed
                continue
        runs = await client.read_flow_runs(flow_run_filter=FlowRunFilter(
            state=FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.SCHEDULED])),
            expected_start_time=FlowRunFilterExpectedStartTime(before_=before)),
            deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=list(ids))),
            limit=200) if ids else []
        found = [notices.MissedRun(str(r.id), ids[r.deployment_id], r.expected_start_time,
                                   (r.parameters or {}).get("task_id"))
                 for r in runs if r.deployment_id in ids and r.expected_start_time]
        plan = notices.plan(found, engine)
        notices.report_missed(engine, settings, plan)
        for run in plan.skip:
            await client.set_flow_run_state(UUID(run.flow_run_id), Cancelled(
                message="missed while the instance was stopped: reported"), force=True)
    return plan


async def reconcile(engine: Engine, settings: Settings) -> list[ScheduledTask]:
    """Drop the schedules no active task accounts for; the active tasks (for `serve()`)."""
    wanted = owner.wanted_schedules(engine)
    async with get_client() as client:
        try:
            deployment = await client.read_deployment_by_name(settings.schedules.deployment)
        except ObjectNotFound:
            return wanted
        schedules = await client.read_deployment_schedules(deployment.id)
        stale = set(owner.stale_slugs([s.slug for s in schedules], wanted))
        for schedule in schedules:
            if schedule.slug in stale:
                await client.delete_deployment_schedule(deployment.id, schedule.id)
    return wanted
