"""`/api/attachments`: send a photo or a document, then name it in a turn.

`POST /api/attachments?name=receipt.jpg` with the file's bytes as the body (any
`Content-Type`; `curl --data-binary @receipt.jpg`) keeps it outside the workspace and answers
its id; `POST /api/turns` with `attachments: [id]` files it into the workspace for that turn.
What the file is comes from its bytes: a name or a type that says otherwise is refused (415),
so is a file larger than `[attachments] max_bytes` (413).
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, HTTPException, Query, Request
from pydantic import BaseModel

from metnos.faces.gateway.deps import LangDep, PersonDep, ServiceDep
from metnos.faces.gateway.schemas import ErrorPublic
from metnos.features.attachments import AttachmentRefused, keep
from metnos.ground import i18n

PATH = "/api/attachments"
router = APIRouter(prefix=PATH, tags=["attachments"])
_STATUS = {"ERR_ATTACHMENT_TOO_LARGE": 413, "ERR_ATTACHMENT_EMPTY": 400,
           "ERR_ATTACHMENT_TYPE_UNSUPPORTED": 415, "ERR_ATTACHMENT_TYPE_MISMATCH": 415}


class AttachmentPublic(BaseModel):
    id: str
    name: str
    kind: str
    size: int
    width: int | None = None
    height: int | None = None


@router.post("", response_model=AttachmentPublic, status_code=201, responses={
    code: {"model": ErrorPublic} for code in (400, 401, 411, 413, 415)})
async def send_attachment(request: Request, service: ServiceDep, person: PersonDep,
                          lang: LangDep, name: str = Query(
                              "", max_length=255, description="The file's name (a claim: "
                              "its extension must agree with its bytes).")
                          ) -> AttachmentPublic:
    """Keep a photo (JPEG, PNG, HEIC, WebP, TIFF), a PDF or a text file for a turn."""
    limit = service.settings.attachments.max_bytes
    data = bytearray()
    async for chunk in request.stream():
        data += chunk
        if len(data) > limit:  # the length header said less: refuse, keep nothing
            break
    channel = "api" if request.headers.get("authorization") else "web"
    try:
        item = await asyncio.to_thread(
            keep, service.engine, service.settings, service.audit, bytes(data), name=name,
            media_type=request.headers.get("content-type"), user_id=person, channel=channel)
    except AttachmentRefused as exc:
        raise HTTPException(_STATUS.get(exc.key, 400), detail={
            "key": exc.key, "message": i18n.message(exc, lang)}) from exc
    return AttachmentPublic(id=item.id, name=item.name, kind=item.kind, size=item.size,
                            width=item.width, height=item.height)
