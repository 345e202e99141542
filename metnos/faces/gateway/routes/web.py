"""The web chat (SPEC §3, §11): `GET /`, its two static files, and the UI locale switch.

The page is a Jinja2 template with no inline script (the CSP forbids it) and no token: the
browser holds the HttpOnly session cookie of `metnos login`. Its chrome follows the UI locale
(the `metnos_ui_locale` cookie, else Accept-Language, else METNOS_LANG); switching it never
touches a running session's interaction language (SPEC §9.6). Without credentials, `/`
answers 401 with a page that says how to log in.
"""

from __future__ import annotations

import asyncio
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2
from fastapi import APIRouter, HTTPException, Request, Response
from fastapi.responses import HTMLResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.routing import NoMatchFound

from metnos.faces.gateway.deps import (
    SESSION_COOKIE,
    PersonDep,
    ServiceDep,
    authenticate,
    require_person,
)
from metnos.faces.gateway.schemas import error_responses
from metnos.ground import i18n
from metnos.ground.i18n.formatting import text_direction
from metnos.ground.i18n.tags import match_language
from metnos.ground.settings import Settings
from metnos.turns.language import ui_locale

router = APIRouter(tags=["web"])

WEBCHAT = Path(__file__).resolve().parent.parent / "webchat"
LOCALE_COOKIE = "metnos_ui_locale"
LOCALE_MAX_AGE_S = 365 * 24 * 3600
_JS = "text/javascript; charset=utf-8"
# chat.js and the ES modules it imports; render.js and the vendored libraries are plain scripts
MODULES = ("chat.js", "api.js", "actions.js", "bubbles.js", "cards.js", "composer.js",
           "feedback.js", "panels.js", "stream.js", "trash.js", "askall.js", "voice.js")
STATIC_FILES = {**dict.fromkeys(MODULES, _JS), "chat.css": "text/css; charset=utf-8",
                "favicon.svg": "image/svg+xml", "render.js": _JS,
                # vendored, unchanged: versions and sha256 in webchat/static/README.md
                "markdown-it.min.js": "text/javascript; charset=utf-8",
                "purify.min.js": "text/javascript; charset=utf-8"}
PUBLIC_STATIC = frozenset({"chat.css", "favicon.svg"})  # the device ceremony's page uses them
_JS_KEYS = {
    "you": "WEB_CHAT_YOU", "metnos": "WEB_CHAT_METNOS", "session": "WEB_CHAT_SESSION",
    "httpError": "WEB_CHAT_HTTP_ERROR",
    "approve": "WEB_CHAT_APPROVE", "deny": "WEB_CHAT_DENY", "approved": "WEB_CHAT_APPROVED",
    "denied": "WEB_CHAT_DENIED", "working": "WEB_CHAT_WORKING",
    "auditEmpty": "WEB_CHAT_AUDIT_EMPTY", "files": "WEB_CHAT_FILES",
    "fileExists": "CARD_FILE_EXISTS", "fileNew": "CARD_FILE_NEW",
    "pairingWaiting": "WEB_CHAT_PAIRING_WAITING", "pairingMember": "WEB_CHAT_PAIRING_MEMBER",
    "pairingNone": "WEB_CHAT_PAIRING_NONE", "pairingDrop": "WEB_CHAT_PAIRING_DROP",
    "sessionsEmpty": "WEB_CHAT_SESSIONS_EMPTY", "toolResult": "WEB_CHAT_TOOL_RESULT",
    "activity": "WEB_CHAT_ACTIVITY", "cardTitle": "CARD_TITLE", "details": "CARD_DETAILS",
    "valueSize": "CARD_VALUE_SIZE", "shownCut": "CARD_SHOWN_CUT",
    "undo": "UNDO_BUTTON", "undone": "UNDO_DONE_ITEM", "undoAlready": "UNDO_ALREADY",
    "undoFailed": "UNDO_FAILED", "pasteTooLong": "WEB_CHAT_PASTE_TOO_LONG",
    "pasteSendFit": "WEB_CHAT_PASTE_SEND_FIT", "notice": "WEB_CHAT_NOTICE",
    "feedbackAsk": "TUTOR_FEEDBACK_ASK", "feedbackUp": "TUTOR_FEEDBACK_UP",
    "feedbackDown": "TUTOR_FEEDBACK_DOWN", "feedbackWhy": "TUTOR_FEEDBACK_WHY",
    "feedbackFailed": "TUTOR_FEEDBACK_FAILED", "attachRemove": "WEB_CHAT_ATTACH_REMOVE",
    "attachTooLarge": "WEB_CHAT_ATTACH_TOO_LARGE", "attachSending": "WEB_CHAT_ATTACH_SENDING",
    "waitsForOwner": "WEB_CHAT_WAITS_FOR_OWNER", "voiceRecording": "WEB_CHAT_VOICE_RECORDING",
    "voiceListening": "WEB_CHAT_VOICE_LISTENING",
}
_FEEDBACK_CAUSES = ("wrong_section", "insufficient", "outdated", "not_about_metnos")
NOTICES_ROUTE = "notice_events"  # the reminders' stream (routes/notices.py), when served
_STATUSES = ("planning", "running", "awaiting_approval", "completed", "failed")
_MODEL_STATES = ("ok", "unreachable", "misconfigured", "embedded", "unknown")  # ModelState


class LocaleChange(BaseModel):
    model_config = ConfigDict(extra="forbid")

    locale: str = Field(min_length=1, max_length=35)


@router.get("/", response_class=HTMLResponse, include_in_schema=False)
async def chat_page(request: Request, service: ServiceDep) -> HTMLResponse:
    locale = page_locale(request, service.settings)
    auth = await asyncio.to_thread(authenticate, request)  # a cookie is a database read
    if auth.user is None:
        response = HTMLResponse(_render("login_needed.html.j2", locale), status_code=401)
        if request.cookies.get(SESSION_COOKIE) is not None:
            response.delete_cookie(SESSION_COOKIE, path="/")
        return response
    strings = {**_strings(locale), "maxChars": service.settings.gateway.max_message_chars,
               "maxBytes": service.settings.attachments.max_bytes,
               "noticesUrl": _path_of(request, NOTICES_ROUTE), "role": auth.role,
               "user": auth.user}
    return HTMLResponse(_render(
        "chat.html.j2", locale, strings=strings, modules=MODULES[1:],
        model_state=service.model_health.state, owner=auth.owner is not None,
        device=auth.via == "device",
        locales=[(code, i18n.display_name(code, code)) for code in
                 service.settings.active_languages]))


@router.get("/static/{name}", include_in_schema=False)
async def static_file(name: str, request: Request) -> Response:
    if name not in PUBLIC_STATIC:  # the rest is the chat's, for someone of the household
        await asyncio.to_thread(require_person, request)
    if name not in STATIC_FILES:
        raise HTTPException(404, detail={"key": "ERR_HTTP_404",
                                         "message": i18n.get("ERR_HTTP_404")})
    body = (WEBCHAT / "static" / name).read_bytes()
    return Response(body, media_type=STATIC_FILES[name],
                    headers={"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"})


@router.post("/api/ui-locale", responses=error_responses(401))
async def set_ui_locale(body: LocaleChange, request: Request, response: Response,
                        service: ServiceDep, person: PersonDep) -> dict[str, str]:
    """The chrome's language for this browser; sessions keep their own language."""
    code = match_language(body.locale, service.settings.active_languages)
    if code is None:
        raise HTTPException(422, detail={"key": "ERR_WEB_LOCALE_UNKNOWN", "message": i18n.get(
            "ERR_WEB_LOCALE_UNKNOWN", page_locale(request, service.settings),
            locale=body.locale[:35],
            locales=", ".join(service.settings.active_languages))})
    response.set_cookie(LOCALE_COOKIE, code, max_age=LOCALE_MAX_AGE_S, path="/",
                        samesite="strict", httponly=True)
    return {"ui_locale": code}


def page_locale(request: Request, settings: Settings) -> str:
    """The UI locale of the page: the switch's cookie when it names an active language."""
    chosen = match_language(request.cookies.get(LOCALE_COOKIE), settings.active_languages)
    return chosen or ui_locale(None, request.headers.get("accept-language"), settings)


def _strings(locale: str) -> dict[str, Any]:
    """The chrome the script needs, raw: it fills `{name}` placeholders itself."""
    strings: dict[str, Any] = {name: _raw(key, locale) for name, key in _JS_KEYS.items()}
    strings["status"] = {s: _raw(f"WEB_CHAT_STATUS_{s.upper()}", locale) for s in _STATUSES}
    strings["outcomes"] = _words(locale, "STATUS_DECISION_") | _words(locale, "STATUS_OUTCOME_")
    strings["model"] = {s: _raw(f"WEB_CHAT_MODEL_{s.upper()}", locale) for s in _MODEL_STATES}
    strings["feedbackCauses"] = {c: _raw(f"TUTOR_FEEDBACK_CAUSE_{c.upper()}", locale)
                                 for c in _FEEDBACK_CAUSES}
    strings["locale"] = locale
    return strings


def _words(locale: str, prefix: str) -> dict[str, str]:
    """The status words of the activity log (`done`, `refused`...), as i18n has them."""
    keys = {k for k in i18n.catalog(i18n.FALLBACK_LANG) if k.startswith(prefix)}
    return {k[len(prefix):].lower(): _raw(k, locale) for k in sorted(keys)}


def _path_of(request: Request, route: str) -> str | None:
    """The path of the app's route named `route`; None when the app does not serve it."""
    try:
        return str(request.app.url_path_for(route))
    except NoMatchFound:
        return None


def _raw(key: str, locale: str) -> str:
    found = i18n.lookup(key, locale) or i18n.lookup(key, i18n.FALLBACK_LANG)
    return found if isinstance(found, str) else key


def render_page(name: str, locale: str, **vars: Any) -> str:
    """A page of the web chat in `locale`, as served (`metnos.faces.cli.prompts.served_pages`)."""
    return _render(name, locale, **vars)


def page_strings(locale: str) -> dict[str, Any]:
    """The script strings of the chat page in `locale`."""
    return _strings(locale)


def _render(name: str, locale: str, **vars: Any) -> str:
    return _templates().get_template(name).render(
        locale=locale, t=lambda key, **kw: i18n.get(key, locale, **kw),
        direction=text_direction, **vars)


@lru_cache(maxsize=1)
def _templates() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(WEBCHAT / "templates")),
                              autoescape=True, undefined=jinja2.StrictUndefined)
