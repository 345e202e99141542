"""`POST /api/tutor/answers/{turn_id}/feedback`: 👍 or 👎 (with its cause) on a Tutor answer.

Authenticated like every POST (the owner token, or the web session's cookie with our own
`Origin`: `require_owner`); the rating counts only for the person who asked, once, before
its expiry (`metnos.features.tutor.feedback.rate`: one audit line either way). Someone else's
answer reads as an unknown one: the caller learns nothing about it.
"""

from __future__ import annotations

import asyncio
from typing import Literal

from fastapi import APIRouter, HTTPException, Request
from pydantic import BaseModel, ConfigDict, Field

from metnos.faces.gateway.deps import LangDep, OwnerDep, ServiceDep
from metnos.faces.gateway.schemas import error_responses
from metnos.features.tutor import feedback
from metnos.ground import i18n

router = APIRouter(prefix="/api/tutor", tags=["tutor"])

Cause = Literal["wrong_section", "insufficient", "outdated", "not_about_metnos"]


class FeedbackBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rating: Literal["up", "down"]
    cause: Cause | None = Field(None, description="Why it did not help: required with down.")


class FeedbackDone(BaseModel):
    rating: str
    cause: str | None
    message: str = Field(description="The thanks, in the request's language.")


@router.post("/answers/{turn_id}/feedback", response_model=FeedbackDone,
             responses=error_responses(401, 403, 404, 409, 410, 422))
async def rate_answer(turn_id: str, body: FeedbackBody, request: Request,
                      service: ServiceDep, owner: OwnerDep, lang: LangDep) -> FeedbackDone:
    channel = "api" if request.headers.get("authorization") else "web"
    try:
        done = await asyncio.to_thread(feedback.rate, service.engine, service.audit,
                                       turn_id[:64], user_id=owner, rating=body.rating,
                                       cause=body.cause, channel=channel)
    except feedback.FeedbackRefused as exc:
        raise HTTPException(exc.status, detail={"key": exc.key,
                                                "message": i18n.message(exc, lang)}) from exc
    thanks = "TUTOR_FEEDBACK_THANKS_UP" if done.rating == "up" else "TUTOR_FEEDBACK_THANKS_DOWN"
    return FeedbackDone(rating=done.rating, cause=done.cause, message=i18n.get(thanks, lang))
