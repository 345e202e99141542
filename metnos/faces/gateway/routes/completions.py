"""An OpenAI-compatible endpoint (issue 31): `POST /v1/chat/completions` and `GET /v1/models`,
so that any app that speaks to OpenAI (a phone client, Open WebUI, a script with the `openai`
package) can talk to Metnos.

Who speaks is who the gateway already knows: the owner's token on loopback, or a device's
token over the overlay (`metnos devices token ID`: the device's own signed credential, worth
something only from that device's address). Each request is ONE turn of that person:
- its text is the last `user` message (the app resends the whole conversation each time;
  Metnos keeps its own history, so the earlier messages are not read again);
- its conversation is chosen by the `X-Metnos-Session` header (a conversation of this
  person), else by the request's `user` field, else the person's one conversation of this
  endpoint: the same value always reaches the same conversation, never another person's;
- what the turn did, and a step that waits for an approval, come back as text an app can
  show. An approval is answered from Metnos's own surfaces (the web chat, Telegram,
  `metnos approvals`), never by the app: the next request finds the turn's outcome in the
  conversation.

`stream: true` answers with server-sent events in OpenAI's chunk format: the steps as they
start, then the reply, then `data: [DONE]`. Outside text (names in the steps and the cards) is
escaped as markdown, which such apps render.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any, Literal

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from metnos.faces.gateway.deps import PersonDep, TurnsDep, gateway_state
from metnos.faces.gateway.drain import draining, refusal
from metnos.faces.gateway.schemas import error_responses
from metnos.features.attachments.turn import start_turn
from metnos.ground import escape, i18n
from metnos.ground.errors import MetnosError
from metnos.turns.context import Published
from metnos.turns.handle import TurnHandle
from metnos.turns.language import ui_locale

router = APIRouter(prefix="/v1", tags=["openai"])
MODEL = "metnos"
CHANNEL = "api"
_SESSIONS = uuid.UUID("5d1b0a52-4c55-4e9b-9f0e-6d3f1c2a7b10")  # names this endpoint's sessions


class Part(BaseModel):
    model_config = ConfigDict(extra="ignore")

    type: str
    text: str | None = None


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")

    role: str = Field(max_length=32)
    content: str | list[Part] | None = None


class Completion(BaseModel):
    """What OpenAI's clients send; what Metnos does not use (temperature...) is ignored."""

    model_config = ConfigDict(extra="ignore")

    model: str = Field(MODEL, max_length=200)
    messages: list[ChatMessage] = Field(min_length=1, max_length=500)
    stream: bool = False
    user: str | None = Field(None, max_length=256)


@router.get("/models", responses=error_responses(401, 403))
async def models(person: PersonDep) -> dict[str, Any]:
    return {"object": "list",
            "data": [{"id": MODEL, "object": "model", "created": 0, "owned_by": "metnos"}]}


@router.post("/chat/completions", response_model=None,
             responses=error_responses(400, 401, 403, 422, 503))
async def chat_completions(body: Completion, request: Request, turns: TurnsDep,
                           person: PersonDep) -> Response:
    settings = turns.service.settings
    locale = ui_locale(None, request.headers.get("accept-language"), settings)
    if draining(gateway_state(request)):
        raise refusal(locale)
    text = _last_words(body.messages)
    if not text:
        raise HTTPException(422, detail={"key": "ERR_OPENAI_NO_USER_MESSAGE",
                                         "message": i18n.get("ERR_OPENAI_NO_USER_MESSAGE",
                                                             locale)})
    session = _session(person, request.headers.get("x-metnos-session"), body.user)
    try:
        ctx, _ = await start_turn(turns, text, (), session_id=session, lang=locale,
                                  channel=CHANNEL, sender=person)
    except MetnosError as exc:
        raise HTTPException(400, detail={"key": exc.key,
                                         "message": i18n.message(exc, locale)}) from exc
    made = int(time.time())
    headers = {"X-Metnos-Session": ctx.session_id, "X-Metnos-Turn": ctx.turn_id}
    if body.stream:
        return StreamingResponse(_chunks(turns, ctx.turn_id, made, ctx.lang),
                                 media_type="text/event-stream",
                                 headers={**headers, "Cache-Control": "no-cache"})
    answered = await turns.reply(ctx.turn_id)
    content = _said(answered, ctx.lang) if answered is not None else i18n.get(
        "MSG_OPENAI_STILL_WORKING", ctx.lang)
    return JSONResponse({
        "id": f"chatcmpl-{ctx.turn_id}", "object": "chat.completion", "created": made,
        "model": MODEL, "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}},
        headers=headers)


async def _chunks(turns: TurnHandle, turn_id: str, made: int, lang: str) -> AsyncIterator[str]:
    """The turn as OpenAI's chunks: a line per step as it starts, then the reply."""
    def chunk(delta: dict[str, Any], finish: Literal["stop"] | None = None) -> str:
        data = {"id": f"chatcmpl-{turn_id}", "object": "chat.completion.chunk",
                "created": made, "model": MODEL,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"

    yield chunk({"role": "assistant", "content": ""})
    last = i18n.get("MSG_OPENAI_STILL_WORKING", lang)
    async for event in turns.follow(turn_id):
        if event.kind == "step" and event.data.get("state") == "started":
            yield chunk({"content": f"_{escape.markdown_text(str(event.data['text']))}_\n\n"})
        elif event.kind == "approval":  # the turn waits: answered on Metnos's own surfaces
            last = _waiting(event.data, lang)  # not the CLI's message: it quotes arguments raw
            break
        elif event.kind == "reply":
            last = str(event.data.get("text") or "")
            break
        elif event.kind == "end":
            break
    yield chunk({"content": last})
    yield chunk({}, "stop")
    yield "data: [DONE]\n\n"


def _said(answered: Published, lang: str) -> str:
    """The reply; for a turn that waits, what each approval is and where to answer it (the
    reply of a waiting turn is the CLI's message, which quotes the arguments raw)."""
    if answered.approvals:
        return "\n\n".join(_waiting(a, lang) for a in answered.approvals)
    return answered.reply.strip()


def _waiting(approval: dict[str, Any], lang: str) -> str:
    """What an approval the turn waits for is (its card's sentence, escaped: it holds outside
    text), and where to answer it."""
    card = approval.get("card") or {}
    what = escape.markdown_text(str(card.get("action") or approval.get("executor", "")))
    return i18n.get("MSG_OPENAI_APPROVAL", lang, action=what,
                    approval_id=str(approval.get("approval_id", "")))


def _last_words(messages: list[ChatMessage]) -> str:
    """The text of the last user message (its text parts, in order)."""
    for message in reversed(messages):
        if message.role != "user":
            continue
        if isinstance(message.content, str):
            return message.content.strip()
        return "\n".join(p.text for p in message.content or [] if p.text).strip()
    return ""


def _session(person: str, chosen: str | None, user: str | None) -> str:
    """The conversation of this request: the one named, else a stable one per person and
    `user` value (another person's never: `open_session` gives a fresh one instead)."""
    if chosen and chosen.strip():
        return chosen.strip()[:64]
    return str(uuid.uuid5(_SESSIONS, f"{person}\x00{user or ''}"))
