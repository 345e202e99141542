"""Build a `TurnService` from settings: database, executors, audit log, LLM port, canary,
and what a closed turn's memory is handed to."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from functools import partial

from metnos.audit import open_audit_log
from metnos.db.engine import database_url, make_engine, ping
from metnos.errors import MetnosError, NotInitialisedError
from metnos.executors.registry import load_registry
from metnos.features import create_tables
from metnos.llm.port import LLMPort, configured
from metnos.mnestoma.record import Memory
from metnos.paths import resources_path
from metnos.sandbox import run_canary
from metnos.settings import Settings
from metnos.synt import composition
from metnos.turns.context import TurnContext
from metnos.turns.service import TurnService
from metnos.tutor import feedback, views
from metnos.tutor.embedder import default_embedder
from metnos.tutor.mixed import Confirmations
from metnos.tutor.precheck import Tutor, answer, composer
from metnos.tutor.probes import (
    Asker,
    ProbeContext,
    SchedulerSignals,
    default_probes,
    scheduler_services,
)

Precheck = Callable[[TurnService, TurnContext], Awaitable[str | None]]
Signals = Callable[[], SchedulerSignals]  # the scheduler's latest signals (never waits)
Liveness = Callable[[], bool | None]  # a service's state: None when not configured or known

log = logging.getLogger(__name__)


async def build_service(settings: Settings, *, scheduler: Signals | None = None,
                        telegram: Liveness | None = None) -> TurnService:
    """Everything a turn needs, checked at start-up (the canary decides sandbox_ok).
    `scheduler` and `telegram` are what the gateway knows of those services, for the
    Tutor's probes."""
    if not settings.owner_token_path.is_file():
        raise NotInitialisedError(home=str(settings.home))
    engine = make_engine(database_url(settings))
    create_tables(engine)
    registry = load_registry(settings)
    for name, key, vars in registry.refused:
        log.warning("executor.refused name=%s key=%s vars=%s", name, key, vars)
    canary = await run_canary(settings.workspace)
    if not canary.ok:
        log.error("sandbox.canary_failed detail=%s", canary.detail)
    audit = open_audit_log(settings)
    port = LLMPort.for_instance(settings, audit) if configured(settings.llm) else None
    service = TurnService(settings, engine=engine, registry=registry,
                          audit=audit, port=port, sandbox_ok=canary.ok)
    service.record.memory_hooks.append(partial(_observe, service))
    if settings.tutor.enabled:
        service.precheck = await asyncio.to_thread(tutoring, settings, service,
                                                   scheduler, telegram)
    return service


def tutoring(settings: Settings, service: TurnService, scheduler: Signals | None = None,
             telegram: Liveness | None = None) -> Precheck:
    """The Tutor's pre-check of this instance (SPEC §10), warmed when a catalog is there
    (about 2 s: the model's load) so that no question pays for it inside the window."""
    def services() -> dict[str, bool | None]:
        seen = scheduler_services(scheduler() if scheduler else None, datetime.now(UTC))
        return {"database": _up(service), "gateway": True, **seen,
                "telegram_poller": telegram() if telegram else None}

    def reading(asker: Asker) -> ProbeContext:  # what a probe may read, for this asker
        return ProbeContext(asker=asker, registry=service.registry, engine=service.engine,
                            home=settings.home, repo_executors=resources_path("executors"),
                            services=services, scheduler=scheduler)

    tutor = Tutor(settings.home, service.audit, window_s=settings.tutor.window_ms / 1000,
                  probes=default_probes(), probe_context=reading,
                  confirmations=Confirmations(service.engine, service.audit,
                                              settings.tutor.confirm_ttl_s))
    tutor.warm(settings.active_languages)
    if settings.tutor.read_at_start:  # no catalog yet: compiled in the background
        tutor.start_reading(settings.active_languages)
    if tutor.catalog() is not None:  # the views too: their first question is in a window
        views.warm(settings.active_languages, default_embedder())
    feedback.bind(tutor, service.engine)  # its answers' 👍/👎 live in the instance's database
    compose = composer(settings, service.port, guard=service.guard, audit=service.audit,
                       executors=[spec.name for spec in service.registry.admitted])

    async def precheck(_: TurnService, ctx: TurnContext) -> str | None:
        if ctx.untrusted:  # about a forwarded or quoted text the Tutor would never see
            return None
        return await answer(tutor, compose, ctx)
    return precheck


def _up(service: TurnService) -> bool:
    try:
        ping(service.engine)
    except MetnosError:
        return False
    return True


def _observe(service: TurnService, memory: Memory) -> None:
    """After a closed turn (its worker thread): the accepted compositions it used whole count
    towards their promotion to one executor (the synt, SPEC §7.3)."""
    if memory.sequence:
        composition.observe(service.engine, service.settings, memory.sequence)
