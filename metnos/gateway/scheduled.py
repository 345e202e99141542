"""The owner's scheduled tasks in the gateway (SPEC §12): `with_schedules(app, sync)` adds
`/api/schedules`, the firing loop (`metnos.schedules.firing`) and the `schedule_set`
executor's effect and undo (`metnos.schedules.effect`) to an app from `create_app`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI

from metnos.gateway.drain import draining
from metnos.gateway.routes import schedules
from metnos.schedules import effect as schedule_effect
from metnos.schedules.firing import loop
from metnos.schedules.owner import Sync
from metnos.turns.service import TurnService


def with_schedules(app: FastAPI, sync: Sync | None) -> FastAPI:
    """`app` with the owner's scheduled tasks: `/api/schedules` and the firing loop."""
    inner = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[Any]:
        async with inner(app) as state:
            app.state.schedules_sync = sync
            service: TurnService = app.state.service  # "every Monday at 8 …" from a chat
            service.effects[schedule_effect.EFFECT] = schedule_effect.effect(service, sync)
            service.undoers[schedule_effect.EFFECT] = schedule_effect.undoer(service, sync)
            task = asyncio.get_running_loop().create_task(
                loop(app.state.turns, lambda: draining(app.state)), name="schedules")
            try:
                yield state
            finally:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)

    app.router.lifespan_context = lifespan
    app.include_router(schedules.router)
    return app
