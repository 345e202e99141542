"""Prefect task wrapping the audit verification."""

from __future__ import annotations

from dataclasses import asdict

from prefect import task
from prefect.cache_policies import NO_CACHE

from metnos.audit import verify_instance
from metnos.settings import get_settings


@task(name="verify-audit", cache_policy=NO_CACHE, retries=1, retry_delay_seconds=5)
async def verify_audit_task() -> dict[str, object]:
    return asdict(verify_instance(get_settings()))
