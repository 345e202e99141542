"""`/healthz`: liveness and the state of what the gateway depends on, no authentication.

`status` is `draining` while the gateway stops (HTTP 503: send nothing new), else `degraded`
when the database does not answer, the Prefect server is unreachable, the deployment runner
stopped polling, the sandbox is unusable or the model unreachable or misconfigured, else
`ok` (HTTP 200 both). The database is pinged off the event loop, at most once a second
whatever the callers do; Prefect and the runner are read from the scheduler's signals the
gateway already keeps (`metnos.features.tutor.signals`), never asked per request. No secret, path
or address appears.
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import UTC, datetime
from typing import Literal

from fastapi import APIRouter, Request, Response
from sqlalchemy import text
from sqlalchemy.engine import Engine

from metnos import __version__
from metnos.faces.gateway.deps import ServiceDep, gateway_state
from metnos.faces.gateway.drain import draining
from metnos.faces.gateway.schemas import HealthPublic
from metnos.features.tutor.probes import SchedulerSignals, scheduler_services

router = APIRouter(tags=["health"])
log = logging.getLogger(__name__)

PING_TIMEOUT_S = 2.0
PING_FRESH_S = 1.0
_STARTED = time.monotonic()  # a runner not seen yet is unknown until its timeout has passed


@router.get("/healthz", response_model=HealthPublic, responses={
    503: {"model": HealthPublic, "description": "Metnos is stopping."}})
async def healthz(request: Request, response: Response, service: ServiceDep) -> HealthPublic:
    database = await _ping(request, service.engine)
    prefect, runner = _scheduler(gateway_state(request).edges.signals)
    sandbox: Literal["ok", "degraded"] = "ok" if service.sandbox_ok else "degraded"
    model = service.model_health.state
    status: Literal["ok", "degraded", "draining"] = "ok"
    if draining(gateway_state(request)):
        status, response.status_code = "draining", 503
    elif ("down" in (database, runner) or prefect == "unreachable" or sandbox == "degraded"
          or model in ("unreachable", "misconfigured")):
        status = "degraded"
    return HealthPublic(status=status, version=__version__, sandbox=sandbox,
                        executors=len(service.registry.admitted),
                        llm="configured" if service.port is not None else "embedded",
                        database=database, prefect=prefect, runner=runner,
                        model=model)


def _scheduler(signals: object) -> tuple[Literal["ok", "unreachable", "unknown"],
                                         Literal["alive", "down", "unknown"]]:
    sig = signals() if callable(signals) else None
    if not isinstance(sig, SchedulerSignals):
        return "unknown", "unknown"
    seen = scheduler_services(sig, datetime.now(UTC))
    server, alive = seen["prefect_server"], seen["deployment_runner"]
    if alive is False and sig.runner_heartbeat is None and (
            time.monotonic() - _STARTED) < sig.heartbeat_timeout_s:
        alive = None  # just started: the runner may not have polled yet
    return ("unknown" if server is None else "ok" if server else "unreachable",
            "unknown" if alive is None else "alive" if alive else "down")


async def _ping(request: Request, engine: Engine) -> Literal["ok", "down"]:
    """The database's answer to `SELECT 1`, shared by the callers of the last second; one
    ping at a time (a hung one is not started again while it hangs)."""
    state = gateway_state(request)
    last = state.health_ping
    if last is not None and time.monotonic() - last[0] < PING_FRESH_S:
        return last[1]
    running = state.health_ping_task
    if running is None or running.done():
        running = state.health_ping_task = asyncio.get_running_loop().create_task(
            asyncio.to_thread(_select_one, engine))
    try:
        found: Literal["ok", "down"] = "ok" if await asyncio.wait_for(
            asyncio.shield(running), PING_TIMEOUT_S) else "down"
    except TimeoutError:
        found = "down"
    state.health_ping = (time.monotonic(), found)
    return found


def _select_one(engine: Engine) -> bool:
    try:
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))
        return True
    except Exception as exc:  # any failure is "down"; the detail goes to the log only
        log.warning("healthz.database_down %s", type(exc).__name__)
        return False
