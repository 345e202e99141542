"""The gateway's outbound delivery: due outbox rows go to the channel they belong to.

An asyncio task of the app's lifespan looks every `[reminders] delivery_poll_s` for due,
undelivered rows: Telegram rows become a bot message in their chat; web rows wake the web
chats' notice streams (`GET /api/notices/events`), which push them until a page says it
showed them (`POST /api/notices/delivered`; a browser not connected gets them when it connects
again); CLI rows wait for `metnos chat`
(`GET /api/notices`). A row is marked delivered only once its channel took it. The same task
cancels the Prefect runs of undone reminders.

Each round first passes new proposals through the Vaglio (`metnos.features.proposals.vaglio`), turns
those left unanswered too long into ignored ones and puts the queued ones in the outbox
(`metnos.features.proposals.delivery`, never in quiet hours): a proposal's Telegram message carries
Accept / Dismiss buttons, the web chat shows it as a card (`kind` "proposal").

`with_reminders(app)` adds all this to an app from `create_app` (whose `Edges.scheduler`, the
Prefect scheduler of `flows/reminder.py` the composition root `flows/gateway.py` hands in,
also cancels the runs of undone reminders).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine, Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI

from metnos.faces.channels.bidi import marked
from metnos.faces.channels.telegram.config import load_config
from metnos.faces.gateway.state import run_alongside, state_of
from metnos.features.pairing.service import OWNER_USER_ID
from metnos.features.proposals import delivery as proposals
from metnos.features.proposals import habits, store, vaglio
from metnos.features.reminders import outbox
from metnos.features.reminders.effect import Scheduler
from metnos.features.reminders.outbox import Outbox
from metnos.ground.db.engine import in_session
from metnos.ground.db.models import utcnow
from metnos.turns.runtime import Runtime

if TYPE_CHECKING:
    from metnos.faces.channels.telegram.sender import TelegramSender

log = logging.getLogger(__name__)
HABITS_EVERY_S = 60.0  # how often the rounds look for a habit due ("as usual?")


class Delivery:
    def __init__(self, service: Runtime, scheduler: Scheduler | None,
                 telegram: TelegramSender | None) -> None:
        self.service, self.scheduler, self.telegram = service, scheduler, telegram
        self._web: set[asyncio.Event] = set()  # one per open notice stream
        self._habits_at: datetime | None = None  # when habits were last looked for

    @contextlib.contextmanager
    def listen(self) -> Iterator[asyncio.Event]:
        """An event set whenever web notices may be waiting (set at once: look now)."""
        wake = asyncio.Event()
        wake.set()
        self._web.add(wake)
        try:
            yield wake
        finally:
            self._web.discard(wake)

    async def run(self) -> None:
        poll = self.service.settings.reminders.delivery_poll_s
        while True:
            try:
                await self.tick()
            except Exception:  # the loop's boundary: a bad round must not end delivery
                log.warning("outbox.delivery_failed", exc_info=True)
            await asyncio.sleep(poll)

    async def tick(self) -> None:
        engine = self.service.engine
        try:
            await self.propose()
        except Exception:  # a failing Vaglio round must not hold up reminders and notices
            log.warning("proposals.round_failed", exc_info=True)
        rows = await asyncio.to_thread(in_session, engine, outbox.pending)
        if any(row.channel == "web" for row in rows):
            for wake in self._web:
                wake.set()
        for row in rows:
            if row.channel == "telegram" and self.telegram is not None:
                await self._to_telegram(row)
        if self.scheduler is not None:
            for row in await asyncio.to_thread(in_session, engine, outbox.runs_to_close):
                await self.scheduler.cancel(str(row.flow_run_id))
                await asyncio.to_thread(in_session, engine, outbox.close_run, row.id)

    async def propose(self, now: datetime | None = None) -> None:
        """The Vaglio on new proposals, ignored ones decayed, queued ones to the outbox."""
        service = self.service
        engine, settings = service.engine, service.settings
        at = now or utcnow()
        if settings.evolution.enabled and (now is not None or self._habits_at is None or (
                at - self._habits_at).total_seconds() >= HABITS_EVERY_S):
            self._habits_at = at
            await asyncio.to_thread(in_session, engine, habits.propose_habits, settings, at,
                                    service.registry.changes_something)
        if await asyncio.to_thread(in_session, engine, store.of_status, "new", 1):
            target = await asyncio.to_thread(in_session, engine, proposals.preferred, settings,
                                             OWNER_USER_ID)
            judges = vaglio.Judges(service.registry, service.guard.scanner, service.port,
                                   service.audit)
            await vaglio.judge_round(engine, settings, judges, lang=target.lang, now=now)
        await asyncio.to_thread(proposals.expire, engine, settings, audit=service.audit,
                                now=now)
        await asyncio.to_thread(proposals.place, engine, settings, audit=service.audit,
                                now=now)

    async def _to_telegram(self, row: Outbox) -> None:
        assert self.telegram is not None
        chat = row.address.removeprefix("telegram-")
        if not chat.lstrip("-").isdigit():  # never deliverable: not retried every round
            log.warning("outbox.bad_address id=%s", row.id)
            await asyncio.to_thread(in_session, self.service.engine, outbox.cancel, row.id)
            return
        open_ = None
        if row.kind == proposals.KIND:
            open_ = await asyncio.to_thread(in_session, self.service.engine, store.listing,
                                            user_id=row.user_id, statuses=store.OPEN,
                                            outbox_id=row.id)
        sent = await self.telegram.send(int(chat), marked(row.text, row.lang),
                                        open_[::-1] if open_ else None, row.lang)
        if sent == "refused":  # never will: blocked, or no such chat
            log.warning("outbox.telegram_refused id=%s", row.id)
            await asyncio.to_thread(in_session, self.service.engine, outbox.cancel, row.id)
        elif sent == "unreachable":  # tried again at the next round
            log.warning("outbox.telegram_unreachable id=%s", row.id)
        else:
            await asyncio.to_thread(in_session, self.service.engine, outbox.claim, [row.id])


def notice(row: Outbox) -> dict[str, Any]:
    """A row as the channels get it (the web chat's `notice` event, the CLI's list)."""
    at = row.due_at or row.created_at
    return {"id": row.id, "kind": row.kind, "text": row.text, "lang": row.lang,
            "session_id": row.address, "at": at.isoformat(timespec="seconds"),
            "scheduled_for": row.scheduled_for.isoformat(timespec="seconds")
            if row.scheduled_for else None}


def with_reminders(app: FastAPI) -> FastAPI:
    """`app` with the delivery loop running (and `/api/notices`)."""
    from metnos.faces.gateway.routes import notices

    run_alongside(app, "outbox", _deliver)
    app.include_router(notices.router)
    return app


def _deliver(app: FastAPI) -> Coroutine[Any, Any, None]:
    """The app's delivery loop (`state.delivery`, set now), and its bot closed when it ends."""
    gateway = state_of(app)
    service, scheduler = gateway.ready(), gateway.edges.scheduler
    config = load_config(service.settings)
    telegram = None
    if config is not None:  # aiogram loaded only for a gateway with a bot
        from metnos.faces.channels.telegram.sender import TelegramSender
        telegram = TelegramSender(config.token, config.api_base)
    delivery = gateway.delivery = Delivery(service, scheduler, telegram)

    async def run() -> None:
        try:
            await delivery.run()
        finally:
            if telegram is not None:
                await telegram.close()
    return run()
