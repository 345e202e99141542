"""Prefect tasks wrapping the Tutor's catalog upkeep and the counterfactual check of its
feedback."""

from __future__ import annotations

import asyncio
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from metnos.features.tutor.feedback_report import check_instance
from metnos.features.tutor.upkeep import Upkeep, refresh
from metnos.ground.settings import get_settings


@task(name="tutor-refresh", cache_policy=NO_CACHE, persist_result=False)
async def refresh_task() -> Upkeep:
    # parsing the docs, and a compile when due, are blocking work: off the runner's loop
    return await asyncio.to_thread(refresh, get_settings().home)


@task(name="tutor-feedback-check", cache_policy=NO_CACHE, persist_result=False)
async def feedback_check_task() -> dict[str, Any] | None:
    """The remembered 👍 checked against the catalog now admitted (None: none is)."""
    report = await asyncio.to_thread(check_instance, get_settings())
    return report.to_dict() if report is not None else None
