"""What the gateway holds for its routes and loops: one typed object, `app.state.gateway`,
read through `metnos.faces.gateway.deps` (routes) or `state_of(app)` (the lifespan's loops).

Made by `create_app` with what is known before start-up; the lifespan adds the turn service
(built once: `metnos.faces.wiring.build_runtime`) and its turn handle (`metnos.turns.handle`), the
owner's token and the Telegram channel.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from metnos.faces.gateway.connections import LiveConnections
from metnos.faces.gateway.drain import Drain
from metnos.faces.wiring import Edges
from metnos.mechanisms.approvals.resume import Resumer
from metnos.turns.handle import Launch, TurnHandle, TurnRunner
from metnos.turns.runtime import Runtime

if TYPE_CHECKING:
    from fastapi import FastAPI

    from metnos.faces.channels.telegram.bot import TelegramChannel
    from metnos.faces.gateway.outbox_delivery import Delivery
    from metnos.faces.web.overlay import Exposed

# ends the Prefect flow runs of turns a dead gateway left open (their ids), at start-up
RunCloser = Callable[[list[str]], Awaitable[None]]


@dataclass
class GatewayState:
    runner: TurnRunner
    resumer: Resumer | None  # None: a turn waits by polling the database (plain path)
    close_runs: RunCloser | None
    edges: Edges
    launch: Launch
    background: set[asyncio.Task[None]]  # the turns (and scheduled runs) in flight
    drain: Drain = field(default_factory=Drain)
    connections: LiveConnections = field(default_factory=LiveConnections)
    exposed: Exposed | None = None  # the overlay listener (`[gateway] expose`), if any
    # set by the lifespan, before the first request
    service: Runtime | None = None
    turns: TurnHandle | None = None  # what the faces do with a turn (`metnos.turns.handle`)
    owner_token: str = ""
    telegram: TelegramChannel | None = None
    delivery: Delivery | None = None  # the outbox loop (`with_reminders`)
    # /healthz's last database ping and the one running
    health_ping: tuple[float, Literal["ok", "down"]] | None = None
    health_ping_task: asyncio.Task[bool] | None = None

    def ready(self) -> Runtime:
        """The runtime (the lifespan built it before any request is served)."""
        if self.service is None:
            raise RuntimeError("the gateway has not started")
        return self.service

    def handle(self) -> TurnHandle:
        """The turn handle (made with the service, before any request is served)."""
        if self.turns is None:
            raise RuntimeError("the gateway has not started")
        return self.turns


def state_of(app: Any) -> GatewayState:
    """The gateway's state of `app` (a FastAPI app, or a connection's `.app`)."""
    state: GatewayState = app.state.gateway
    return state


def run_alongside(app: FastAPI, name: str,
                  start: Callable[[FastAPI], Coroutine[Any, Any, None]]) -> None:
    """Run `start(app)` as the asyncio task `name` for the life of `app`'s lifespan: started
    once the lifespan before it has started, cancelled (and awaited) before that one ends."""
    inner = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[Any]:
        async with inner(app) as state:
            task = asyncio.get_running_loop().create_task(start(app), name=name)
            try:
                yield state
            finally:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)

    app.router.lifespan_context = lifespan
