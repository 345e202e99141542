"""`/healthz`: liveness, no authentication."""

from __future__ import annotations

from fastapi import APIRouter

from metnos import __version__
from metnos.gateway.deps import ServiceDep
from metnos.gateway.schemas import HealthPublic

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=HealthPublic)
async def healthz(service: ServiceDep) -> HealthPublic:
    return HealthPublic(status="ok", version=__version__,
                        sandbox="ok" if service.sandbox_ok else "degraded",
                        executors=len(service.registry.admitted),
                        llm="configured" if service.port is not None else "embedded",
                        model=service.model_health.state)
