"""Prefect task of the `remote-step` flow: the laptop's side (`metnos.features.remote.worker`)."""

from __future__ import annotations

from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from metnos.features.remote import worker


# not retried: a rename batch is not idempotent, and a refusal is an answer, not a glitch
@task(name="remote-executor", cache_policy=NO_CACHE, persist_result=False)
async def remote_executor(request: dict[str, Any]) -> dict[str, Any]:
    """One phase (prepare, apply, undo) checked again and run in this machine's sandbox."""
    return await worker.handle(request)
