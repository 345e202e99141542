"""Prefect task of the `reminder` flow: a thin wrapper over `metnos.features.reminders.outbox`."""

from __future__ import annotations

import asyncio

from prefect import task
from prefect.cache_policies import NO_CACHE

from metnos.features.reminders import outbox
from metnos.ground.db.engine import database_url, in_session, make_engine
from metnos.ground.settings import get_settings


def _mark_due(outbox_id: str) -> bool:
    engine = make_engine(database_url(get_settings()))
    try:
        return in_session(engine, outbox.mark_due, outbox_id)
    finally:
        engine.dispose()


# idempotent (a row due already stays as it is): safe to retry while the database restarts
@task(name="mark-due", cache_policy=NO_CACHE, persist_result=False,
      retries=3, retry_delay_seconds=[1, 5, 20])
async def mark_due_task(outbox_id: str) -> bool:
    """Make the message due (the gateway delivers it); False when it was cancelled."""
    return await asyncio.to_thread(_mark_due, outbox_id)
