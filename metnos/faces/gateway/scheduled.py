"""The owner's scheduled tasks in the gateway (SPEC §12): `with_schedules(app)` adds
`/api/schedules` and the firing loop (`metnos.features.schedules.firing`) to an app from
`create_app` (the `schedule_set` executor's effect and undo, `metnos.features.schedules.effect`, are
registered with every runtime: `metnos.faces.wiring`).
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

from fastapi import FastAPI

from metnos.faces.gateway.drain import draining
from metnos.faces.gateway.routes import schedules
from metnos.faces.gateway.state import run_alongside, state_of
from metnos.features.schedules.firing import loop


def with_schedules(app: FastAPI) -> FastAPI:
    """`app` with the owner's scheduled tasks: `/api/schedules` and the firing loop."""
    def fire(app: FastAPI) -> Coroutine[Any, Any, None]:
        gateway = state_of(app)
        return loop(gateway.handle(), lambda: draining(gateway))

    run_alongside(app, "schedules", fire)
    app.include_router(schedules.router)
    return app
