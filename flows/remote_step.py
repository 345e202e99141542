"""The `remote-step` flow: one phase of a step whose manifest says `runs_on`, run by a
Prefect worker of that place's work pool (deployment `remote-step/<pool>`; SPEC §1).
`python -m flows.remote_step` deploys it for every place in `[remote] pools`.

The reply travels back through the Prefect server as the final state's message (JSON): a
laptop shares no disk with the server, so no result storage is involved; the server reads it
as untrusted data (`metnos.features.remote.server.reply_of`). A refusal on the laptop ends the run
Failed with its reason, visible in the Prefect UI. The server's calls are `port()`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any
from uuid import UUID

from prefect import flow, get_client
from prefect.client.schemas.actions import WorkPoolCreate
from prefect.client.schemas.objects import State
from prefect.exceptions import ObjectAlreadyExists
from prefect.states import Completed, Failed

from flows._remote_port import port
from metnos.ground.settings import get_settings
from tasks.remote import remote_executor

ENTRYPOINT = "flows/remote_step.py:remote_step"


@flow(name="remote-step", persist_result=False, log_prints=False)
async def remote_step(request: dict[str, Any]) -> State:
    reply = await remote_executor(request)
    text = json.dumps(reply, ensure_ascii=True)
    return Completed(message=text) if reply.get("ok") else Failed(message=text)


# the folder holding the `flows` package (the checkout, or site-packages): what a pool pulls
CODE_ROOT = Path(__file__).resolve().parent.parent


async def deploy(pool: str, source: Path) -> UUID:
    """The pool (type `process`) and the deployment `remote-step/<pool>` its workers run,
    the code pulled from `source` (the laptop's own checkout of Metnos, at the same path)."""
    async with get_client() as client:
        with contextlib.suppress(ObjectAlreadyExists):  # made by an earlier deploy
            await client.create_work_pool(WorkPoolCreate(name=pool, type="process"))
    found = await remote_step.afrom_source(str(source), ENTRYPOINT)
    deployment_id: UUID = await found.adeploy(name=pool, work_pool_name=pool,
                                              print_next_steps=False,
                                              ignore_warnings=True)
    return deployment_id


async def deploy_pools() -> list[UUID]:
    """`python -m flows.remote_step`: the deployment of every place in `[remote] pools`."""
    settings = get_settings()
    return [await deploy(pool, CODE_ROOT) for pool in settings.remote.pools.values()]


__all__ = ["CODE_ROOT", "deploy", "deploy_pools", "port", "remote_step"]

if __name__ == "__main__":
    asyncio.run(deploy_pools())
