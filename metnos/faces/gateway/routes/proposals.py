"""`/api/proposals`: what Metnos proposed on its own, and the owner's answer (SPEC §7.7–7.8).

- `GET /api/proposals`: the owner's delivered proposals (`status=all` for every one past the
  Vaglio, `outbox_id=` for those of one message: the web chat's card), each with its text in
  the request's language.
- `GET /api/proposals/silent`: the register of proposals not made, with alignment, score,
  judge and reason, so the owner can see whether the aims weighed as meant.
- `GET /api/proposals/telos`: the aims as parsed from TELOS.md, with a warning when the file
  needs attention.
- `POST /api/proposals/{id}/accept` (runs the kind's handler once) and `/dismiss`.

An answer goes through `metnos.features.proposals.answer` (Telegram's buttons too): every answer and
every refusal leaves one audit line (`action="proposal.answer"`).
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from fastapi import APIRouter, HTTPException, Query, Request

from metnos.faces.gateway.deps import LangDep, OwnerDep, PersonDep, ServiceDep, TurnsDep
from metnos.faces.gateway.schemas import error_responses
from metnos.features.proposals import store, usual
from metnos.features.proposals.models import Proposal
from metnos.features.proposals.store import ProposalError
from metnos.features.proposals.telos import read_telos
from metnos.ground import i18n
from metnos.ground.db.engine import in_session

router = APIRouter(prefix="/api/proposals", tags=["proposals"])
_STATUS = {"ERR_PROPOSAL_NOT_FOUND": 404, "ERR_PROPOSAL_NOT_YOURS": 404,
           "ERR_PROPOSAL_ALREADY_DECIDED": 409, "ERR_PROPOSAL_KIND_UNKNOWN": 422,
           "ERR_PROPOSAL_ACCEPT_FAILED": 502}
_PAST_VAGLIO = ("queued", "delivered", "accepted", "dismissed", "ignored")


def public(row: Proposal, lang: str) -> dict[str, Any]:
    """A proposal as the channels show it."""
    def stamp(value: Any) -> str | None:
        return value.isoformat(timespec="seconds") if value else None
    return {"id": row.id, "kind": row.kind, "origin": row.origin, "status": row.status,
            "text": store.text(row, lang), "alignment": row.alignment, "score": row.score,
            "judge": row.judge, "reason": row.reason,
            "reason_text": i18n.get(row.reason, lang) if row.reason else None,
            "law_key": row.law_key, "weight": row.weight, "outbox_id": row.outbox_id,
            "created_at": stamp(row.created_at), "delivered_at": stamp(row.delivered_at),
            "decided_at": stamp(row.decided_at)}


@router.get("", responses=error_responses(401))
async def list_proposals(service: ServiceDep, person: PersonDep, lang: LangDep,
                         status: Literal["delivered", "all"] = "delivered",
                         outbox_id: str | None = Query(None, max_length=64),
                         limit: int = Query(100, ge=1, le=500)) -> dict[str, Any]:
    """The caller's delivered proposals (or all past the Vaglio), newest first: a family
    member's "as usual?" are theirs to answer."""
    statuses = store.OPEN if status == "delivered" and outbox_id is None else _PAST_VAGLIO
    rows = await asyncio.to_thread(in_session, service.engine, store.listing, user_id=person,
                                   statuses=statuses, outbox_id=outbox_id, limit=limit)
    if outbox_id is not None:
        rows.reverse()  # a message's proposals in its order
    return {"proposals": [public(row, lang) for row in rows],
            "labels": {"accept": i18n.get("MSG_PROPOSAL_BUTTON_ACCEPT", lang),
                       "dismiss": i18n.get("MSG_PROPOSAL_BUTTON_DISMISS", lang),
                       "accepted": i18n.get("MSG_PROPOSAL_ACCEPTED", lang),
                       "dismissed": i18n.get("MSG_PROPOSAL_DISMISSED", lang)}}


@router.get("/silent", responses=error_responses(401))
async def silent_register(service: ServiceDep, owner: OwnerDep, lang: LangDep,
                          limit: int = Query(100, ge=1, le=500)) -> dict[str, Any]:
    """The register of proposals not made (silent), newest first."""
    rows = await asyncio.to_thread(in_session, service.engine, store.listing, user_id=owner,
                                   statuses=("silent",), limit=limit)
    return {"proposals": [public(row, lang) for row in rows]}


@router.get("/telos", responses=error_responses(401))
async def telos(service: ServiceDep, owner: OwnerDep, lang: LangDep) -> dict[str, Any]:
    """The aims the Vaglio weighs proposals against, and a warning when TELOS.md has too few
    or too many."""
    found = await asyncio.to_thread(read_telos, service.settings.workspace, lang)
    return {"aims": [{"n": a.n, "text": a.text, "weight": round(a.weight, 4)}
                     for a in found.aims],
            "found": found.found, "warning": found.warning_text(lang)}


@router.post("/{proposal_id}/{answer}", responses=error_responses(401, 404, 409, 422, 502))
async def answer_route(proposal_id: str, answer: Literal["accept", "dismiss"],
                       request: Request, turns: TurnsDep, person: PersonDep,
                       lang: LangDep) -> dict[str, Any]:
    """Accept (the kind's handler runs once; an "as usual?" runs its words as a turn) or
    dismiss a delivered proposal."""
    channel = "api" if request.headers.get("authorization") else "web"
    try:
        row = await usual.answer(turns, proposal_id, answer, user_id=person, sender=person,
                                 channel=channel)
    except ProposalError as exc:
        raise HTTPException(_STATUS.get(exc.key, 409), detail={
            "key": exc.key, "message": i18n.message(exc, lang)}) from exc
    return {"proposal": public(row, lang)}
