"""Build a `TurnService` from settings: database, executors, audit log, LLM port, canary,
and what a closed turn's memory is handed to."""

from __future__ import annotations

import logging
from functools import partial

from metnos.audit import open_audit_log
from metnos.db.engine import create_tables, database_url, make_engine
from metnos.errors import NotInitialisedError
from metnos.executors.registry import load_registry
from metnos.llm.port import LLMPort, configured
from metnos.mnestoma.record import Memory
from metnos.sandbox import run_canary
from metnos.settings import Settings
from metnos.synt import composition
from metnos.turns.service import TurnService

log = logging.getLogger(__name__)


async def build_service(settings: Settings) -> TurnService:
    """Everything a turn needs, checked at start-up (the canary decides sandbox_ok)."""
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
    port = LLMPort(settings.llm) if configured(settings.llm) else None
    service = TurnService(settings, engine=engine, registry=registry,
                          audit=open_audit_log(settings), port=port, sandbox_ok=canary.ok)
    service.record.memory_hooks.append(partial(_observe, service))
    return service


def _observe(service: TurnService, memory: Memory) -> None:
    """After a closed turn (its worker thread): the accepted compositions it used whole count
    towards their promotion to one executor (the synt, SPEC §7.3)."""
    if memory.sequence:
        composition.observe(service.engine, service.settings, memory.sequence)
