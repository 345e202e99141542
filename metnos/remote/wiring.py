"""The gateway app with its way to the work pools: `runner.remote` set for its lifespan."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI

from metnos.remote.port import RemotePort


def with_remote(app: FastAPI, port: RemotePort) -> FastAPI:
    """`app` whose steps with `runs_on` go to their pools through `port` (flows/remote_step)."""
    inner = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[Any]:
        async with inner(app) as state:
            app.state.service.runner.remote = port
            yield state

    app.router.lifespan_context = lifespan
    return app
