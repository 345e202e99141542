"""The owner's scheduled tasks in the gateway (SPEC §12): `with_schedules(app)` adds
`/api/schedules` and the firing loop (`metnos.schedules.firing`) to an app from `create_app`
(the `schedule_set` executor's effect and undo, `metnos.schedules.effect`, are registered with
every runtime: `metnos.wiring`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI

from metnos.gateway.drain import draining
from metnos.gateway.routes import schedules
from metnos.gateway.state import state_of
from metnos.schedules.firing import loop


def with_schedules(app: FastAPI) -> FastAPI:
    """`app` with the owner's scheduled tasks: `/api/schedules` and the firing loop."""
    inner = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[Any]:
        async with inner(app) as state:
            gateway = state_of(app)
            task = asyncio.get_running_loop().create_task(
                loop(gateway.handle(), lambda: draining(gateway)), name="schedules")
            try:
                yield state
            finally:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)

    app.router.lifespan_context = lifespan
    app.include_router(schedules.router)
    return app
