"""`/api/pairing`: the owner lists, approves and revokes DM pairings, and drops pending
requests (SPEC §4)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from pydantic import BaseModel, ConfigDict, Field, StrictBool

from metnos.faces.gateway.deps import LangDep, OwnerDep, ServiceDep, gateway_state
from metnos.faces.gateway.schemas import ErrorPublic
from metnos.features.pairing import service as pairing
from metnos.features.pairing.models import PairedSender, PairingRequest
from metnos.ground import i18n
from metnos.ground.db.engine import session as db_session

router = APIRouter(prefix="/api/pairing", tags=["pairing"])

_STATUS = {"ERR_PAIRING_CODE_UNKNOWN": 404, "ERR_PAIRING_PERSON_UNKNOWN": 422,
           "ERR_PAIRING_CODE_EXPIRED": 410, "ERR_PAIRING_LOCKED": 429}
_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorPublic} for code in (401, 404, 410, 422, 429)}


class ApproveBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    code: str = Field(min_length=1, max_length=64, description="The code the sender received.")
    person: str | None = Field(None, min_length=1, max_length=256, description=(
        "Whose it is: `owner`, or the user id of someone paired; none: a new member."))


class RevokeBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    channel: str = Field(min_length=1, max_length=256)
    sender_id: str = Field(min_length=1, max_length=256)


class DropBody(BaseModel):
    """One sender's pending request, or (`all`) every pending request."""

    model_config = ConfigDict(extra="forbid")

    channel: str | None = Field(None, min_length=1, max_length=256)
    sender_id: str | None = Field(None, min_length=1, max_length=256)
    all: StrictBool = False  # true or false only: 1 or "yes" is a 422, not a drop of all


class PendingPublic(BaseModel):
    id: str
    channel: str
    sender_id: str
    created_at: datetime
    expires_at: datetime


class PairedPublic(BaseModel):
    channel: str
    sender_id: str
    user_id: str
    role: str
    approved_by: str
    approved_at: datetime


class PairingList(BaseModel):
    pending: list[PendingPublic]
    paired: list[PairedPublic]


class PairingChange(PairedPublic):
    message: str


@router.get("", response_model=PairingList, responses=_ERRORS)
def list_pairing(service: ServiceDep, owner: OwnerDep) -> PairingList:
    with db_session(service.engine) as db:
        return PairingList(pending=[_pending(r) for r in pairing.list_pending(db)],
                           paired=[_paired(p) for p in pairing.list_paired(db)])


@router.post("/approve", response_model=PairingChange, responses=_ERRORS)
def approve(body: ApproveBody, service: ServiceDep, owner: OwnerDep,
            lang: LangDep) -> PairingChange:
    try:
        with db_session(service.engine) as db:
            paired = pairing.approve(db, body.code, approver=owner,
                                     settings=service.settings.policy, audit=service.audit,
                                     person=body.person)
    except pairing.PairingError as exc:
        raise HTTPException(_STATUS.get(exc.key, 400), detail={
            "key": exc.key, "message": i18n.message(exc, lang)}) from exc
    view = _paired(paired)
    return PairingChange(**view.model_dump(), message=i18n.get(
        "MSG_PAIRING_APPROVED", lang, **view.model_dump(include={
            "channel", "sender_id", "role", "user_id"})))


@router.post("/revoke", responses=_ERRORS)
def revoke(body: RevokeBody, request: Request, service: ServiceDep, owner: OwnerDep,
           lang: LangDep) -> dict[str, Any]:
    names = {"channel": body.channel, "sender_id": body.sender_id}
    with db_session(service.engine) as db:
        done = pairing.revoke(db, channel=body.channel, sender_id=body.sender_id,
                              audit=service.audit, revoker=owner)
    if not done:
        raise HTTPException(404, detail={"key": "ERR_PAIRING_NOT_PAIRED", "message": i18n.get(
            "ERR_PAIRING_NOT_PAIRED", lang, **names)})
    if body.channel == pairing.DEVICE_CHANNEL:  # a device: its open chats end now
        gateway_state(request).connections.end(f"device:{body.sender_id}")
    return {**names, "revoked": True, "message": i18n.get("MSG_PAIRING_REVOKED", lang, **names)}


@router.post("/drop", responses=_ERRORS)
def drop(body: DropBody, service: ServiceDep, owner: OwnerDep, lang: LangDep) -> dict[str, Any]:
    """Drop pending requests (a stranger's, or all of them): their senders get no new code
    for a day, and the slots are free for someone the owner expects."""
    one = body.channel is not None and body.sender_id is not None
    if one == body.all:
        raise HTTPException(422, detail={"key": "ERR_PAIRING_DROP_WHICH", "message": i18n.get(
            "ERR_PAIRING_DROP_WHICH", lang)})
    with db_session(service.engine) as db:
        dropped = pairing.drop(db, channel=body.channel, sender_id=body.sender_id,
                               audit=service.audit, dropper=owner)
    if one and not dropped:
        raise HTTPException(404, detail={"key": "ERR_PAIRING_NOT_PENDING", "message": i18n.get(
            "ERR_PAIRING_NOT_PENDING", lang, channel=body.channel, sender_id=body.sender_id)})
    return {"dropped": [_pending(r).model_dump(mode="json") for r in dropped],
            "message": i18n.get("MSG_PAIRING_DROPPED_COUNT", lang, count=len(dropped))
            if dropped else i18n.get("MSG_PAIRING_DROPPED_NONE", lang)}


def _pending(request: PairingRequest) -> PendingPublic:
    return PendingPublic(id=request.id, channel=request.channel, sender_id=request.sender_id,
                         created_at=request.created_at, expires_at=request.expires_at)


def _paired(paired: PairedSender) -> PairedPublic:
    return PairedPublic(channel=paired.channel, sender_id=paired.sender_id,
                        user_id=paired.user_id, role=paired.role,
                        approved_by=paired.approved_by, approved_at=paired.approved_at)
