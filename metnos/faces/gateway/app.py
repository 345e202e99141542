"""The gateway (SPEC §3): a thin FastAPI app, the only contact with the world.

`create_app(settings, runner=...)` builds it. The `runner` decides how a turn runs once it is
opened: `flows.gateway` passes the Prefect `turn` flow; without one, turns run the same
pipeline as plain function calls (used by the benchmark's baseline). The gateway never runs
an executor itself.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DataError
from starlette.exceptions import HTTPException as StarletteHTTPException

import metnos.faces.registry  # noqa: F401 - what every feature adds: tables, host checks, planners
from metnos.faces.channels.telegram import load_config
from metnos.faces.gateway.drain import drain
from metnos.faces.gateway.exposed import DeviceGate
from metnos.faces.gateway.invalid import body_lang, problems
from metnos.faces.gateway.routes import (
    approvals,
    attachments,
    audit,
    chat_ws,
    completions,
    devices,
    docs,
    evolution,
    health,
    login,
    mnestoma,
    pairing,
    proposals,
    sessions,
    status,
    synt,
    turns,
    tutor_feedback,
    undo,
    voice,
    web,
)
from metnos.faces.gateway.routes import trash as trash_routes
from metnos.faces.gateway.schemas import COMMON_ERRORS
from metnos.faces.gateway.security import HostGuard
from metnos.faces.gateway.state import GatewayState, RunCloser, state_of
from metnos.faces.web.overlay import Exposed, ExposeUnavailable, exposed
from metnos.faces.wiring import Edges, build_runtime
from metnos.features.languages.instance import open_instance_store
from metnos.features.lists_merge import merge_lists
from metnos.ground import i18n
from metnos.ground.errors import MetnosError
from metnos.ground.i18n import intents, lint
from metnos.ground.i18n.store import MessageStore
from metnos.ground.settings import Settings, get_settings
from metnos.mechanisms.approvals.resume import Resumer
from metnos.mechanisms.llm.health import check_model
from metnos.turns import trash
from metnos.turns.handle import TurnHandle, TurnRunner, open_only, plain_runner
from metnos.turns.recovery import recover_at_start
from metnos.turns.runtime import Runtime

if TYPE_CHECKING:
    from metnos.faces.channels.telegram.bot import TelegramChannel

log = logging.getLogger(__name__)


async def _telegram(turns: TurnHandle, settings: Settings) -> TelegramChannel | None:
    """The Telegram channel when a bot token is configured (aiogram loaded only then)."""
    config = load_config(settings)
    if config is None:
        return None
    from metnos.faces.channels.telegram.bot import start_telegram

    return await start_telegram(turns, settings, config)


async def _probe_model(service: Runtime) -> None:
    """Ask the configured model once (`check_model`, bounded) and let the live view learn it;
    nothing to ask without a model."""
    if service.port is None or service.model_health.state != "unknown":
        return
    found = await check_model(service.settings)
    if service.model_health.state == "unknown":  # a turn's call meanwhile knows better
        service.model_health.record(found)


def create_app(settings: Settings | None = None, *, runner: TurnRunner | None = None,
               resumer: Resumer | None = None, close_runs: RunCloser | None = None,
               edges: Edges | None = None) -> FastAPI:
    """`edges`: the ways out the composition root hands in (`metnos.faces.wiring.Edges`: Prefect's
    scheduling calls, the work pools, the scheduler's latest signals for the Tutor)."""
    settings = settings or get_settings()
    edges = edges or Edges()
    background: set[asyncio.Task[None]] = set()

    def telegram_polling() -> bool | None:  # None: no bot configured (or not started yet)
        channel = state.telegram
        return None if channel is None else channel.polling

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        service = await build_runtime(settings, replace(edges, telegram=telegram_polling))
        store = await asyncio.to_thread(_message_store, settings)
        await asyncio.to_thread(intents.audit_policy, service.audit, settings)
        threading.Thread(target=lint.warm_up, args=(settings.active_languages,),
                         name="lint-warm-up", daemon=True).start()
        recovered = await asyncio.to_thread(recover_at_start, service)  # after a crash
        # one household, one list: an older home's per-language list files, merged
        await asyncio.to_thread(merge_lists, settings, service.audit)
        if close_runs is not None and recovered.flow_runs:
            await close_runs(recovered.flow_runs)
        state.service = service
        state.turns = TurnHandle(service, state.runner, launch, resumer)
        state.owner_token = settings.owner_token()
        telegram = state.telegram = await _telegram(state.turns, settings)
        # the model's state known from the start (/healthz, the web chat's header, `metnos
        # serve`'s report), not only after the first turn: one probe, beside the start
        probe = asyncio.get_running_loop().create_task(_probe_model(service))
        # the trash has a bottom: its retention policy at start, then periodically
        keeper = asyncio.get_running_loop().create_task(trash.keep(settings, service.audit))
        log.info("gateway.ready executors=%d sandbox_ok=%s",
                 len(service.registry.admitted), service.sandbox_ok)
        yield
        # a process stop drains while still listening (flows.gateway); this one is for a
        # server stopped without it: nothing is left running or open either way (SPEC §1)
        await drain(state, settings.gateway.drain_s)
        probe.cancel()
        keeper.cancel()
        if telegram is not None:
            await telegram.stop()
        service.audit.close()
        service.engine.dispose()
        if store is not None:
            i18n.use_store(None)
            store.close()

    app = FastAPI(title="Metnos", version="0.1.0", lifespan=lifespan,
                  docs_url=None, redoc_url=None, responses=COMMON_ERRORS)

    def launch(coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        background.add(task)
        task.add_done_callback(_finished(background))

    state = app.state.gateway = GatewayState(open_only(runner or plain_runner), resumer,
                                             close_runs, edges, launch, background)
    app.include_router(health.router)
    app.include_router(status.router)
    app.include_router(turns.router)
    app.include_router(attachments.router)
    app.include_router(voice.router)
    app.include_router(audit.router)
    app.include_router(approvals.router)
    app.include_router(sessions.router)
    app.include_router(pairing.router)
    app.include_router(devices.router)
    app.include_router(devices.ceremony)
    app.include_router(completions.router)
    app.include_router(undo.router)
    app.include_router(trash_routes.router)
    app.include_router(proposals.router)
    app.include_router(evolution.router)
    app.include_router(mnestoma.router)
    app.include_router(docs.router)
    app.include_router(synt.router)
    app.include_router(web.router)
    app.include_router(chat_ws.router)
    app.include_router(tutor_feedback.router)
    login.install(app)  # after the web chat: its `/` wins over the placeholder
    _install_error_handlers(app)
    # a message and up to 10 forwarded texts of max_message_chars, at 4 UTF-8 bytes a
    # character, plus their JSON envelope
    max_body = settings.gateway.max_message_chars * 11 * 4 + 4096
    found = state.exposed = _exposed(settings)
    app.add_middleware(DeviceGate, found=found)  # inside the host guard: names first
    app.add_middleware(HostGuard, allowed_hosts=settings.gateway.allowed_hosts,
                       max_body_bytes=max_body,
                       path_limits={attachments.PATH: settings.attachments.max_bytes,
                                    voice.PATH: settings.voice.max_bytes},
                       exposed=(found.address, found.names) if found else None)
    return app


def _exposed(settings: Settings) -> Exposed | None:
    """The overlay listener; when it cannot be had, loopback only, said in the log (and by
    `metnos doctor`): the household keeps its server-side chat and Telegram meanwhile."""
    try:
        return exposed(settings)
    except ExposeUnavailable as exc:
        log.error("gateway.expose_unavailable %s", i18n.message(exc, settings.lang))
        return None


def _message_store(settings: Settings) -> MessageStore | None:
    """The i18n database (SPEC §9.3), seeded from the files; without it, the files serve."""
    try:
        store = open_instance_store(settings)
    except (MetnosError, OSError, sqlite3.Error) as exc:
        log.warning("i18n.store_unavailable detail=%s", exc)
        return None
    i18n.use_store(store)
    return store


def _finished(background: set[asyncio.Task[None]]) -> Callable[[asyncio.Task[None]], None]:
    def done(task: asyncio.Task[None]) -> None:
        background.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("turn.background_failed", exc_info=task.exception())
    return done


def _install_error_handlers(app: FastAPI) -> None:
    """Every error leaves as `{"error": {"key", "message"}}` in the caller's language."""
    from metnos.faces.gateway.deps import request_lang

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        key = f"ERR_HTTP_{exc.status_code}"
        known = key in i18n.catalog("en")
        detail = exc.detail if isinstance(exc.detail, dict) else {
            "key": key,
            "message": i18n.get(key, request_lang(request)) if known else str(exc.detail)}
        return JSONResponse({"error": detail}, status_code=exc.status_code,
                            headers=getattr(exc, "headers", None))

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.error("gateway.unexpected path=%s", request.url.path, exc_info=exc)
        message = i18n.get("ERR_INTERNAL_UNEXPECTED", request_lang(request))
        return JSONResponse({"error": {"key": "ERR_INTERNAL_UNEXPECTED", "message": message}},
                            status_code=500)

    @app.exception_handler(DataError)
    async def unstorable(request: Request, exc: DataError) -> JSONResponse:
        """A value the database cannot hold (a NUL character in a text): the caller's error."""
        log.warning("gateway.unstorable path=%s detail=%s", request.url.path, exc.orig)
        message = i18n.get("ERR_REQUEST_UNSTORABLE", request_lang(request))
        return JSONResponse({"error": {"key": "ERR_REQUEST_UNSTORABLE", "message": message}},
                            status_code=422)

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        """422 in plain words, in the body's `lang`, else the caller's language: the first
        problem as `key`/`message`, every problem (field, key, message) in `detail`."""
        service = state_of(request.app).service
        lang = (body_lang(exc.body, service.settings) if service is not None else None) \
            or request_lang(request)
        found = problems(exc.errors(), lang)
        return JSONResponse({"error": {"key": found[0].key, "message": found[0].message,
                                       "detail": [p.to_json() for p in found]}},
                            status_code=422)
