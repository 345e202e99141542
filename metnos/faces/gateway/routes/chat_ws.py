"""`WS /api/chat` (SPEC §3): the web chat's live channel, for clients that prefer one socket.

The handshake is checked like any request: the Host and Origin by `HostGuard`, the caller by
`authenticate` (the session cookie, or the owner's bearer token); a refused handshake is
closed before it is accepted (the client sees a 403). Then, one JSON object per frame:

- the client sends `{"type": "message", "text", "session_id"?, "lang"?}` to start a turn, or
  `{"type": "decision", "approval_id", "decision": "approve"|"deny", "reason"?}`;
- Metnos answers `{"type": "turn", "turn_id", "session_id"}`, then the turn's events as
  `GET /api/turns/{id}/events` gives them (`status`, `step`, `approval`, `delta`, `reply`,
  `end`), and `{"type": "error", "key", "message"}` for a request it refuses (while Metnos
  stops, a message gets `ERR_GATEWAY_DRAINING` and starts no turn). `delta`
  (`{"text", "think"}`) is a piece of the model's text as it streams, every one forwarded in
  order; `reply` (`{"text", "status", "activity", "stop_reason"}`) replaces what streamed,
  with what ran beside it as activity items.

Each turn's events stream in a task of its own, so the socket keeps reading: a decision can
come on the same socket while its turn waits for it. `POST /api/logout` closes the sockets
of that web session (code 1008); a new handshake with its cookie is then refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any

from fastapi import APIRouter, WebSocket, WebSocketDisconnect

from metnos.faces.gateway.deps import authenticate, gateway_state, get_turns
from metnos.faces.gateway.drain import KEY as DRAINING_KEY
from metnos.faces.gateway.drain import draining
from metnos.ground import i18n
from metnos.ground.errors import MetnosError
from metnos.ground.i18n.tags import match_language
from metnos.ground.system_lang import Lang
from metnos.turns.handle import TurnHandle
from metnos.turns.language import ui_locale

router = APIRouter()
log = logging.getLogger(__name__)

MAX_FRAME_CHARS = 64 * 1024


@router.websocket("/api/chat")
async def chat_socket(websocket: WebSocket) -> None:
    auth = await asyncio.to_thread(authenticate, websocket)
    if auth.user is None:
        await websocket.close(code=1008)  # before accept: the handshake is refused (403)
        return
    await websocket.accept()
    socket = _Socket(websocket, get_turns(websocket), auth.user,
                     "api" if auth.via == "bearer" else "web")
    with gateway_state(websocket).connections.hold(auth.connection) as ended:
        reader = asyncio.ensure_future(_read(socket))
        logout = asyncio.ensure_future(ended.wait())
        try:
            await asyncio.wait({reader, logout}, return_when=asyncio.FIRST_COMPLETED)
            if not reader.done():  # the browser logged out: its socket ends now
                reader.cancel()
                await asyncio.wait({reader})
                with contextlib.suppress(RuntimeError, OSError):  # unless it just went away
                    await websocket.close(code=1008, reason="logged out")
            elif not reader.cancelled():
                reader.result()  # raise what broke the reader
        finally:
            for task in (reader, logout, *socket.streams):
                task.cancel()


async def _read(socket: _Socket) -> None:
    """Handle frames until the client goes away."""
    try:
        while True:
            await socket.handle(await socket.websocket.receive_text())
    except WebSocketDisconnect:
        pass


class _Socket:
    """One connection: frames are read while turns stream their events in tasks of their
    own, so a decision can arrive on the same socket while its turn waits for it."""

    def __init__(self, websocket: WebSocket, turns: TurnHandle, owner: str,
                 channel: str) -> None:
        self.websocket, self.turns, self.owner, self.channel = (
            websocket, turns, owner, channel)
        self.streams: set[asyncio.Task[None]] = set()
        self._send_lock = asyncio.Lock()

    async def send(self, data: dict[str, Any]) -> None:
        async with self._send_lock:
            await self.websocket.send_json(data)

    async def handle(self, raw: str) -> None:
        await _handle(self, raw)

    def stream(self, turn_id: str) -> None:
        task = asyncio.get_running_loop().create_task(self._stream(turn_id))
        self.streams.add(task)
        task.add_done_callback(self.streams.discard)

    async def _stream(self, turn_id: str) -> None:
        try:
            async for event in self.turns.follow(turn_id):
                await self.send(event.to_json())
        except (WebSocketDisconnect, RuntimeError):  # the client went away
            return


async def _handle(socket: _Socket, raw: str) -> None:
    websocket, turns, owner, channel = (
        socket.websocket, socket.turns, socket.owner, socket.channel)
    try:
        frame = json.loads(raw) if len(raw) <= MAX_FRAME_CHARS else None
    except ValueError:
        frame = None
    asked = frame.get("lang") if isinstance(frame, dict) else None  # errors follow it
    locale = ui_locale(asked if isinstance(asked, str) else None,
                       websocket.headers.get("accept-language"), turns.service.settings)
    if not isinstance(frame, dict) or frame.get("type") not in ("message", "decision"):
        await _error(socket, MetnosError("ERR_REQUEST_INVALID", detail="frame"), locale)
        return
    try:
        if frame["type"] == "message":
            await _turn(socket, frame, locale)
        else:
            await turns.decide(str(frame.get("approval_id", ""))[:64],
                               str(frame.get("decision", "")), user_id=owner, channel=channel,
                               via=channel, reason=str(frame.get("reason") or "")[:500])
    except MetnosError as exc:
        await _error(socket, exc, locale)


async def _turn(socket: _Socket, frame: dict[str, Any], locale: Lang) -> None:
    websocket, turns = socket.websocket, socket.turns
    text = frame.get("text")
    if not isinstance(text, str):
        raise MetnosError("ERR_REQUEST_INVALID", detail="text")
    if not text.strip():
        raise MetnosError("ERR_MESSAGE_EMPTY")
    session_id = frame.get("session_id") if isinstance(frame.get("session_id"), str) else None
    lang = frame.get("lang") if isinstance(frame.get("lang"), str) else None
    active = turns.service.settings.active_languages
    if lang is not None and match_language(lang, active) is None:
        raise MetnosError("ERR_LANG_UNKNOWN", value=lang[:35], active=", ".join(active))
    if draining(gateway_state(websocket)):  # stopping: no turn, the client may send it again
        raise MetnosError(DRAINING_KEY)
    ctx = await turns.start(text, session_id=session_id, lang=locale, channel=socket.channel,
                            sender=socket.owner)
    await socket.send({"type": "turn", "turn_id": ctx.turn_id, "session_id": ctx.session_id})
    socket.stream(ctx.turn_id)


async def _error(socket: _Socket, exc: MetnosError, locale: str) -> None:
    await socket.send({"type": "error", "key": exc.key, "message": i18n.message(exc, locale)})
