"""The scheduler's latest signals, kept for the Tutor's probes by a refresher of the gateway's
lifespan, so that a turn never waits for the scheduler (SPEC §10).

Prefect stays out of `metnos/`: the composition root (flows/gateway.py) hands in how to open
a reader of the signals (flows/_scheduler_signals.py reads them from the Prefect API). A
reading that fails keeps the previous snapshot, which ages: its `observed_at` is the
observation's time, so the Tutor says it is stale.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any

from metnos.features.tutor.probes import SchedulerSignals

if TYPE_CHECKING:
    from fastapi import FastAPI

log = logging.getLogger(__name__)

REFRESH_S = 15.0  # half the scheduler probe's 30 s ttl: one slow refresh does not make it stale
Reader = Callable[[], Awaitable[SchedulerSignals]]
OpenReader = Callable[[], AbstractAsyncContextManager[Reader]]


class Snapshot:
    """The latest signals (`initial` before the first refresh: nothing observed)."""

    def __init__(self, initial: SchedulerSignals | None = None) -> None:
        self.signals = initial or SchedulerSignals()

    def __call__(self) -> SchedulerSignals:
        return self.signals

    async def refresh(self, open_reader: OpenReader, *, interval_s: float = REFRESH_S) -> None:
        """Read the signals every `interval_s` until cancelled; a failed reading keeps the
        previous snapshot, which ages."""
        async with open_reader() as read:
            while True:
                try:
                    self.signals = await read()
                except Exception:  # the snapshot ages; the next round tries again
                    log.exception("scheduler_signals.refresh_failed")
                await asyncio.sleep(interval_s)


def with_scheduler_signals(app: FastAPI, snapshot: Snapshot, open_reader: OpenReader) -> FastAPI:
    """`app` with `snapshot` refreshed for the life of its lifespan."""
    inner = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[Any]:
        task = asyncio.get_running_loop().create_task(snapshot.refresh(open_reader),
                                                      name="scheduler-signals")
        try:
            async with inner(app) as state:
                yield state
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    app.router.lifespan_context = lifespan
    return app
