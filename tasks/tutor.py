"""Prefect task wrapping the Tutor's catalog upkeep."""

from __future__ import annotations

import asyncio

from prefect import task
from prefect.cache_policies import NO_CACHE

from metnos.settings import get_settings
from metnos.tutor.upkeep import Upkeep, refresh


@task(name="tutor-refresh", cache_policy=NO_CACHE, persist_result=False)
async def refresh_task() -> Upkeep:
    # parsing the docs, and a compile when due, are blocking work: off the runner's loop
    return await asyncio.to_thread(refresh, get_settings().home)
