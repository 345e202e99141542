"""Prefect task wrapping the audit verification."""

from __future__ import annotations

import asyncio
from dataclasses import asdict

from prefect import task
from prefect.cache_policies import NO_CACHE

from metnos.ground.settings import get_settings
from metnos.mechanisms.audit import verify_instance


@task(name="verify-audit", cache_policy=NO_CACHE, retries=1, retry_delay_seconds=5)
async def verify_audit_task() -> dict[str, object]:
    # reading and hashing the whole log is blocking work: off the event loop (it may be the
    # gateway's or the runner's, serving other flows meanwhile)
    return asdict(await asyncio.to_thread(verify_instance, get_settings()))
