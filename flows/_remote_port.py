"""The server's Prefect calls for remote steps (`metnos.features.remote.port.RemotePort`)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from prefect import get_client
from prefect.client.schemas.objects import StateType, WorkerStatus
from prefect.exceptions import ObjectNotFound, PrefectHTTPStatusError
from prefect.states import Cancelled, Cancelling

from metnos.features.remote.port import RemoteLost, RemotePort, RemoteTimeout
from metnos.ground.settings import Settings

POLL_S = 0.25


def port(settings: Settings) -> RemotePort:
    async def online(pool: str) -> bool:
        async with get_client() as client:
            try:
                workers = await client.read_workers_for_work_pool(pool)
            except (ObjectNotFound, PrefectHTTPStatusError):  # no such pool
                return False
        return any(w.status == WorkerStatus.ONLINE for w in workers)

    async def submit(pool: str, parameters: dict[str, Any], deadline_s: float) -> str:
        end = time.monotonic() + deadline_s
        request = parameters.get("request", {})
        async with get_client() as client:
            deployment = await client.read_deployment_by_name(
                f"{settings.remote.deployment_flow}/{pool}")
            run = await client.create_flow_run_from_deployment(
                deployment.id, parameters=parameters, tags=["remote", pool],
                name=f"{request.get('phase', 'step')}-{request.get('action_id', '')[:12]}")
            while True:
                run = await client.read_flow_run(run.id)
                if run.state is not None and run.state.is_final():
                    break
                if time.monotonic() > end:  # cancel it, so that it never runs late
                    running = run.state is not None and run.state.type == StateType.RUNNING
                    await client.set_flow_run_state(run.id, Cancelling() if running else
                                                    Cancelled(), force=True)
                    raise RemoteTimeout()
                await asyncio.sleep(POLL_S)
        state = run.state
        if state.type in (StateType.COMPLETED, StateType.FAILED) and (
                state.message or "").startswith("{"):
            return state.message or ""
        raise RemoteLost()

    return RemotePort(online=online, submit=submit)
