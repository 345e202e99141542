"""Prefect tasks of memory and evolution: thin wrappers over `metnos.features.mnestoma` (traces, the
introvert steps; the ager's below). Each opens its own engine on the instance's database."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.client.schemas.objects import State
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DisconnectionError, InterfaceError, OperationalError

from metnos.features.mnestoma import ager, introvert, traces
from metnos.ground.db.engine import database_url, in_session, make_engine
from metnos.ground.settings import Settings, get_settings
from metnos.mechanisms.executors.registry import load_registry

T = TypeVar("T")


def with_engine(work: Callable[[Engine, Settings], T]) -> T:
    """`work(engine, settings)` on a fresh engine, disposed afterwards."""
    settings = get_settings()
    engine = make_engine(database_url(settings))
    try:
        return work(engine, settings)
    finally:
        engine.dispose()


@task(name="traces-due", cache_policy=NO_CACHE, persist_result=False, retries=1,
      retry_delay_seconds=10)
async def traces_due_task() -> bool:
    """Whether a new detection is due (`[evolution] traces_every_days`): one query."""
    return await asyncio.to_thread(with_engine, lambda engine, settings: in_session(
        engine, traces.due, settings, datetime.now(UTC)))


# a retry detects again: at worst one more generation, the newest is what counts
@task(name="traces-detect", cache_policy=NO_CACHE, persist_result=False, retries=1,
      retry_delay_seconds=30)
async def traces_detect_task(seed: int = 0) -> dict[str, Any]:
    found = await asyncio.to_thread(
        with_engine, lambda engine, settings: traces.detect(engine, settings, seed=seed))
    return {"generation": found[0].generation if found else None,
            "modularity": found[0].modularity if found else 0.0,
            "traces": [{"label": t.label, "members": t.members, "weight": t.weight}
                       for t in found]}


def _introvert(engine: Engine, settings: Settings) -> dict[str, Any]:
    manifests = {spec.name: spec.manifest for spec in load_registry(settings).admitted}
    report = introvert.run(engine, settings, manifests)
    return {"batch": report.batch, "proposals": [p.id for p in report.proposals],
            "kinds": report.kinds(), "subjects": [p.payload["subject"] for p in report.proposals],
            "repeated": report.repeated}


# not retried: a second run would be a second batch of the same night
@task(name="introvert", cache_policy=NO_CACHE, persist_result=False)
async def introvert_task() -> dict[str, Any]:
    return await asyncio.to_thread(with_engine, _introvert)


# -- the ager: checked on a schedule, one query; a cycle when ager_every invocations passed
def _transient(task: object, task_run: object, state: State[Any]) -> bool:
    """Retry only what a moment may cure: the database unreachable or the connection lost."""
    return isinstance(state.data, OperationalError | InterfaceError | DisconnectionError)


@task(name="ager-due", cache_policy=NO_CACHE, persist_result=False, retries=3,
      retry_delay_seconds=[2, 10, 30], retry_condition_fn=_transient)
async def ager_due_task() -> bool:
    return await asyncio.to_thread(ager.due_instance, get_settings())


# idempotent: a cycle re-checks `due` under its lock, moves already made stay made
@task(name="ager-cycle", cache_policy=NO_CACHE, persist_result=False, retries=2,
      retry_delay_seconds=[5, 30], retry_condition_fn=_transient, timeout_seconds=900)
async def ager_cycle_task() -> dict[str, Any]:
    report = await asyncio.to_thread(ager.cycle_instance, get_settings())
    return report.to_dict()
