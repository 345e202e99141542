"""Prefect tasks of the `synt` flow: thin wrappers over `metnos.features.synt.cascade`."""

from __future__ import annotations

import asyncio
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from metnos.features.synt import cascade
from metnos.ground.settings import get_settings


# idempotent: a proto already proposed is no longer due, a proposal is never made twice
@task(name="synt-check", cache_policy=NO_CACHE, persist_result=False,
      retries=2, retry_delay_seconds=[5, 30])
async def synt_check_task() -> dict[str, list[str]]:
    """Due proto-mnests → a composition or a generation proposal (no model call)."""
    return await asyncio.to_thread(cascade.check_instance, get_settings())


@task(name="synt-pending", cache_policy=NO_CACHE, persist_result=False,
      retries=2, retry_delay_seconds=[5, 30])
async def synt_pending_task() -> list[str]:
    """The generations the owner accepted and that have not run yet."""
    return await asyncio.to_thread(cascade.pending_instance, get_settings())


# a stage failure is an outcome, not an exception (the proto is closed, never retried); an
# exception is the database or the disk, worth one more try
@task(name="synt-generate", cache_policy=NO_CACHE, persist_result=False,
      retries=1, retry_delay_seconds=60, timeout_seconds=1800)
async def synt_generate_task(job_id: str) -> dict[str, Any]:
    """The seven stages for one accepted generation; the candidate lands unsigned."""
    return await cascade.generate_instance(get_settings(), job_id)
