"""The `reminder` flow (deployment `reminder/at`, served by deployments/serve.py): at a
reminder's time its outbox row becomes due, and the gateway delivers it to the chat it was set
from. The gateway schedules one run per reminder (`scheduler`), named `reminder-<id>` and
tagged with the channel and the user (never the text); an undo cancels the run.
"""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from prefect import flow, get_client
from prefect.client.schemas.objects import State, StateType
from prefect.states import Cancelled, Completed, Scheduled

from metnos.features.reminders.effect import Scheduler
from metnos.ground.settings import Settings
from tasks.reminder import mark_due_task


@flow(name="reminder", persist_result=False, log_prints=False)
async def reminder(outbox_id: str) -> State:
    if await mark_due_task(outbox_id):
        return Completed(message="due: the gateway delivers it", name="Due")
    return Completed(message="cancelled before its time: nothing sent", name="Not sent")


def scheduler(settings: Settings) -> Scheduler:
    """The reminders' Prefect calls, for `metnos.features.reminders.effect` (run in the gateway)."""
    async def schedule(outbox_id: str, when: datetime, name: str, tags: list[str]) -> str:
        async with get_client() as client:
            deployment = await client.read_deployment_by_name(settings.reminders.deployment)
            run = await client.create_flow_run_from_deployment(
                deployment.id, parameters={"outbox_id": outbox_id}, name=name, tags=tags,
                state=Scheduled(scheduled_time=when))
        return str(run.id)

    async def cancel(flow_run_id: str) -> None:
        async with get_client() as client:
            run = await client.read_flow_run(UUID(flow_run_id))
            if run.state is not None and run.state.type == StateType.SCHEDULED:
                await client.set_flow_run_state(
                    run.id, Cancelled(message="the reminder was undone"), force=True)

    return Scheduler(schedule=schedule, cancel=cancel)


__all__ = ["reminder", "scheduler"]
