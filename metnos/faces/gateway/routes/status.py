"""`GET /api/status`: the owner's view of the model (its state, in words, and the fix).

`/healthz` says the state to anyone; this says why, with the setting to change, to the owner
only. While no call has tried the model yet (state "unknown") it asks the model once
(`metnos.mechanisms.llm.health.check_model`, ≤ ~10 s) and the gateway's live view learns the answer.
"""

from __future__ import annotations

from fastapi import APIRouter

from metnos.faces.gateway.deps import LangDep, PersonDep, ServiceDep
from metnos.faces.gateway.schemas import StatusPublic, error_responses
from metnos.mechanisms.llm.health import check_model

router = APIRouter(prefix="/api/status", tags=["status"])


@router.get("", response_model=StatusPublic, responses=error_responses(401))
async def status(service: ServiceDep, _owner: PersonDep, lang: LangDep) -> StatusPublic:
    health = service.model_health
    if health.state == "unknown":
        health.record(await check_model(service.settings))
    check = health.check
    return StatusPublic(model=check.state, line=check.line(lang), fix=check.fix(lang),
                        setting=check.setting)
