"""`POST /api/voice`: a recording from the web chat's microphone, turned into words (issue 31).

The browser sends what it recorded (WebM/Opus, OGG, WAV: the raw body, as `/api/attachments`
takes a file), within `[voice] max_bytes` (checked at the host guard, then as the body is
read) and `max_seconds` (measured by decoding). The answer is the words heard, which the page
puts in the message box for the person to read, correct and send: a transcript is never sent
as a message by itself. The recording is kept in memory only, for this request. Without a
transcription server (`[voice] api_base`), one line says voice needs one.
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, HTTPException, Request

from metnos.faces.gateway.deps import LangDep, PersonDep, ServiceDep
from metnos.faces.gateway.schemas import error_responses
from metnos.features.voice import to_wav, transcribe, voice_on
from metnos.ground import i18n
from metnos.ground.errors import MetnosError

PATH = "/api/voice"
router = APIRouter(prefix=PATH, tags=["voice"])
_STATUS = {"ERR_VOICE_OFF": 409, "ERR_VOICE_TOO_LARGE": 413, "ERR_VOICE_TOO_LONG": 413,
           "ERR_VOICE_UNREADABLE": 415, "ERR_VOICE_TRANSCRIPTION_FAILED": 502}


@router.post("", responses=error_responses(401, 409, 411, 413, 415, 422, 502))
async def hear(request: Request, service: ServiceDep, person: PersonDep,
               lang: LangDep) -> dict[str, Any]:
    """The words of the recording in the body (`text`), how long it was, and the line that
    says what was heard."""
    settings = service.settings
    try:
        if not voice_on(settings):
            raise MetnosError("ERR_VOICE_OFF")
        data = bytearray()
        async for chunk in request.stream():
            data += chunk
            if len(data) > settings.voice.max_bytes:  # refused by to_wav below
                break
        speech = await asyncio.to_thread(to_wav, bytes(data), settings.voice)
        del data
        words = await transcribe(settings, speech.wav, None)  # the language it is in
    except MetnosError as exc:
        raise HTTPException(_STATUS.get(exc.key, 422), detail={
            "key": exc.key, "message": i18n.message(exc, lang)}) from exc
    if not words:
        raise HTTPException(422, detail={"key": "MSG_VOICE_EMPTY",
                                         "message": i18n.get("MSG_VOICE_EMPTY", lang)})
    return {"text": words, "seconds": round(speech.seconds, 2),
            "message": i18n.get("WEB_CHAT_VOICE_HEARD", lang)}
