"""The device ceremony on the overlay (issue 30), and the owner's view of the devices.

On the exposed address only (`metnos.faces.gateway.exposed`):
- `GET /device`: the page where a new browser names itself and asks for access;
- `POST /device/ask` `{label}`: a pairing code for the owner to approve, shown on the page,
  and the device's signed credential in the `metnos_device` cookie (HttpOnly,
  SameSite=Strict; it is worth nothing until the owner approves the code);
- `GET /device/state`: `admitted`, `waiting` or `none`, for the page to open the chat;
- `GET /device/device.js`: the page's script (the CSP forbids inline scripts).

For the owner: `GET /api/devices`, `POST /api/devices/{id}/revoke` (refused at once, its
open chats closed), `POST /api/devices` (an app's device, admitted at once: no browser for
the ceremony) and `GET /api/devices/{id}/token` (the token an app on it sends as a bearer,
worth something from that device's address only). A code is approved like any pairing
code (`POST /api/pairing/approve`, `metnos pair approve`, Telegram's `/pair`).
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from ipaddress import ip_address
from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from pydantic import BaseModel, ConfigDict, Field

from metnos.faces.gateway.deps import LangDep, OwnerDep, ServiceDep, gateway_state, request_lang
from metnos.faces.gateway.exposed import (
    DEVICE_COOKIE,
    client_address,
    device_of,
    on_overlay,
    presented_of,
)
from metnos.faces.gateway.routes.web import WEBCHAT, page_locale, render_page
from metnos.faces.gateway.schemas import error_responses
from metnos.features import pairing
from metnos.features.pairing import devices
from metnos.ground import i18n
from metnos.ground.db.engine import session as db_session
from metnos.ground.settings.gateway import expose_refusal
from metnos.turns.runtime import Runtime


def _overlay_only(request: Request) -> None:
    """The ceremony exists on the exposed address only: on loopback it is not found (before
    anything of the request is read)."""
    if not on_overlay(request):
        raise HTTPException(404, detail={"key": "ERR_DEVICE_ONLY_OVERLAY", "message": i18n.get(
            "ERR_DEVICE_ONLY_OVERLAY", request_lang(request))})


router = APIRouter(tags=["devices"])
ceremony = APIRouter(tags=["devices"], include_in_schema=False,
                     dependencies=[Depends(_overlay_only)])
_NO_STORE = {"Cache-Control": "no-store"}
KEPT_S = 400 * 24 * 3600  # the longest a browser keeps a cookie; the device lasts until revoked
_PAGE_KEYS = ("WEB_DEVICE_CODE", "WEB_DEVICE_HOW", "WEB_DEVICE_WAITING", "WEB_DEVICE_EXPIRED",
              "WEB_DEVICE_FAILED")


class AskBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    label: str = Field(min_length=1, max_length=devices.MAX_LABEL)


class DevicePublic(BaseModel):
    device_id: str
    label: str
    address: str
    state: str  # admitted | waiting | revoked
    user_id: str | None
    role: str | None
    created_at: datetime
    last_seen_at: datetime | None


@ceremony.get("/device", response_class=HTMLResponse)
async def device_page(request: Request, service: ServiceDep) -> Response:
    if device_of(request) is not None:
        return RedirectResponse("/", status_code=303, headers=_NO_STORE)
    locale = page_locale(request, service.settings)
    strings = {key: i18n.get(key, locale) for key in _PAGE_KEYS}
    return HTMLResponse(render_page("device.html.j2", locale, strings=strings),
                        headers=_NO_STORE)


@ceremony.get("/device/device.js")
async def device_script(request: Request) -> Response:
    body = (WEBCHAT / "static" / "device.js").read_bytes()
    return Response(body, media_type="text/javascript; charset=utf-8",
                    headers={"Cache-Control": "no-cache"})


@ceremony.post("/device/ask")
async def ask(body: AskBody, request: Request, service: ServiceDep, lang: LangDep) -> Response:
    if not devices.clean_label(body.label):  # blanks and control characters only
        raise HTTPException(422, detail={"key": "ERR_DEVICE_LABEL_EMPTY", "message": i18n.get(
            "ERR_DEVICE_LABEL_EMPTY", lang)})
    earlier = presented_of(request)
    try:
        asked = await asyncio.to_thread(_ask, service, request, body.label,
                                        earlier.device_id if earlier else None)
    except pairing.PairingError as exc:
        raise HTTPException(429, detail={"key": exc.key, "message": i18n.message(
            exc, lang)}) from exc
    telegram = gateway_state(request).telegram
    if telegram is not None:  # the owner hears of it where they are, with a Drop button
        telegram.device_asked(body.label, client_address(request), asked.request_id)
    response = JSONResponse({"code": asked.code, "expires_at": asked.expires_at.isoformat()},
                            headers=_NO_STORE)
    response.set_cookie(DEVICE_COOKIE, asked.credential, max_age=KEPT_S, path="/",
                        httponly=True, samesite="strict",
                        secure=request.url.scheme == "https")  # over the overlay's TLS
    return response


@ceremony.get("/device/state")
async def state(request: Request) -> dict[str, str]:
    if device_of(request) is not None:
        return {"state": "admitted"}
    earlier = presented_of(request)
    return {"state": "waiting" if earlier and earlier.status == "pending" else "none"}


class DevicesPublic(BaseModel):
    devices: list[DevicePublic]


class AddBody(BaseModel):
    """A device the owner adds without the ceremony (an app): its name and overlay address."""

    model_config = ConfigDict(extra="forbid")

    label: str = Field(min_length=1, max_length=devices.MAX_LABEL)
    address: str = Field(min_length=2, max_length=64)
    person: str | None = Field(None, min_length=1, max_length=256)


class TokenPublic(BaseModel):
    device_id: str
    token: str
    base_url: str | None  # where an OpenAI-compatible app points (None: nothing exposed)
    message: str


@router.post("/api/devices", response_model=TokenPublic,
             responses=error_responses(401, 403, 422, 429))
async def add_device(body: AddBody, service: ServiceDep, owner: OwnerDep, request: Request,
                     lang: LangDep) -> TokenPublic:
    """Add an app's device at `address` (admitted at once, as `person`) and give its token."""
    refusal = _not_a_device_address(body.address)
    if refusal is not None or not devices.clean_label(body.label):
        key = "ERR_DEVICE_ADDRESS_INVALID" if refusal else "ERR_DEVICE_LABEL_EMPTY"
        raise HTTPException(422, detail={"key": key, "message": i18n.get(
            key, lang, address=body.address[:64])})

    def made() -> devices.Asked:
        with db_session(service.engine) as db:
            return devices.add(db, label=body.label, address=str(ip_address(body.address)),
                               approver=owner, person=body.person,
                               keys_dir=service.settings.keys_dir,
                               settings=service.settings.policy, audit=service.audit)
    try:
        asked = await asyncio.to_thread(made)
    except pairing.PairingError as exc:
        raise HTTPException(422 if exc.key == "ERR_PAIRING_PERSON_UNKNOWN" else 429, detail={
            "key": exc.key, "message": i18n.message(exc, lang)}) from exc
    return await _token(service, request, asked.device_id, lang)


@router.get("/api/devices/{device_id}/token", response_model=TokenPublic,
            responses=error_responses(401, 403, 404))
async def device_token(device_id: str, request: Request, service: ServiceDep, owner: OwnerDep,
                       lang: LangDep) -> TokenPublic:
    """An admitted device's token, for an app on it (`Authorization: Bearer`). It works only
    from that device's address, and ends with the device."""
    return await _token(service, request, device_id[:64], lang)


@router.get("/api/devices", response_model=DevicesPublic, responses=error_responses(401, 403))
async def list_devices(service: ServiceDep, owner: OwnerDep) -> DevicesPublic:
    """Every device that asked for access, newest first, whose it is and its state."""
    def read() -> DevicesPublic:
        with db_session(service.engine) as db:
            return DevicesPublic(devices=[_public(found) for found in devices.list_devices(db)])
    return await asyncio.to_thread(read)


@router.post("/api/devices/{device_id}/revoke", responses=error_responses(401, 403, 404))
async def revoke(device_id: str, request: Request, service: ServiceDep, owner: OwnerDep,
                 lang: LangDep) -> dict[str, Any]:
    done = await asyncio.to_thread(_revoke, service, device_id[:64], owner)
    if not done:
        raise HTTPException(404, detail={"key": "ERR_DEVICE_NOT_FOUND", "message": i18n.get(
            "ERR_DEVICE_NOT_FOUND", lang, device_id=device_id[:64])})
    gateway_state(request).connections.end(f"device:{device_id}")
    return {"device_id": device_id, "revoked": True,
            "message": i18n.get("MSG_DEVICE_REVOKED", lang, device_id=device_id)}


async def _token(service: Runtime, request: Request, device_id: str,
                 lang: str) -> TokenPublic:
    def read() -> str | None:
        with db_session(service.engine) as db:
            return devices.token_of(db, device_id, service.settings.keys_dir)
    token = await asyncio.to_thread(read)
    if token is None:
        raise HTTPException(404, detail={"key": "ERR_DEVICE_NOT_FOUND", "message": i18n.get(
            "ERR_DEVICE_NOT_FOUND", lang, device_id=device_id)})
    found = gateway_state(request).exposed
    gateway = service.settings.gateway
    base = None
    if found is not None:
        scheme = "https" if gateway.expose_tls_cert else "http"
        host = gateway.expose_name or sorted(found.names)[0]
        base = f"{scheme}://{host}:{gateway.port}/v1"
    return TokenPublic(device_id=device_id, token=token, base_url=base, message=i18n.get(
        "MSG_DEVICE_TOKEN", lang, base_url=base or "-"))


def _not_a_device_address(value: str) -> str | None:
    try:
        ip_address(value.strip("[]"))
    except ValueError:
        return "not an IP address"
    return expose_refusal(value)


def _ask(service: Runtime, request: Request, label: str, earlier: str | None) -> devices.Asked:
    with db_session(service.engine) as db:
        return devices.ask(db, label=label, address=client_address(request),
                           user_agent=request.headers.get("user-agent", ""),
                           keys_dir=service.settings.keys_dir,
                           settings=service.settings.policy, audit=service.audit,
                           withdraw=earlier)


def _revoke(service: Runtime, device_id: str, owner: str) -> bool:
    with db_session(service.engine) as db:
        return pairing.revoke(db, channel=pairing.DEVICE_CHANNEL, sender_id=device_id,
                              audit=service.audit, revoker=owner)


def _public(found: devices.Listed) -> DevicePublic:
    device, paired = found.device, found.paired
    state = "admitted" if paired else "waiting" if found.waiting else "revoked"
    return DevicePublic(device_id=device.id, label=device.label, address=device.address,
                        state=state, user_id=paired.user_id if paired else None,
                        role=paired.role if paired else None, created_at=device.created_at,
                        last_seen_at=device.last_seen_at)
