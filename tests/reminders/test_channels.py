"""A reminder comes back to the channel it was set from: a Telegram chat (the fake Bot API),
the CLI's next `metnos chat`; and a gateway restarted in between loses nothing. The real
deployment runner runs the reminder's flow on the session's Prefect server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pytest
from asgi_lifespan import LifespanManager

from flows.reminder import scheduler
from flows.turn import resume_approval, run_turn
from metnos.faces.cli.notices import show_pending
from metnos.faces.gateway.app import create_app
from metnos.faces.gateway.outbox_delivery import with_reminders
from metnos.faces.gateway.scheduled import with_schedules
from metnos.faces.wiring import Edges
from metnos.features.reminders import outbox
from metnos.features.schedules.owner import Sync
from metnos.ground.db.engine import database_url, in_session, make_engine
from metnos.testing.telegram_server import FakeTelegram
from tests.reminders.test_delivery import (
    FAST,
    deployment_runner,
    next_notice,
    set_reminder,
    wait_deployment,
    web_chat,
)
from tests.support.home import GATEWAY_BASE, Home, MakeHome, served_app
from tests.support.pg import free_port
from tests.telegram.support import TOKEN, pair, until

ANNA = 5551234


@asynccontextmanager
async def gateway(home: Home, sync: Sync | None = None) -> AsyncIterator[httpx.AsyncClient]:
    """The gateway with reminders (and Telegram, when the home has a token), as the owner;
    with `sync`, the scheduled tasks too, as `flows/gateway.py` composes them."""
    app = with_reminders(create_app(
        home.settings, runner=run_turn, resumer=resume_approval,
        edges=Edges(scheduler=scheduler(home.settings), sync=sync)))
    app = app if sync is None else with_schedules(app)
    async with (LifespanManager(app, startup_timeout=60, shutdown_timeout=60) as manager,
                httpx.AsyncClient(transport=httpx.ASGITransport(app=manager.app),
                                  base_url=GATEWAY_BASE, headers=home.auth(),
                                  timeout=60) as client):
        yield client


@pytest.mark.timeout(240)
async def test_a_reminder_set_on_telegram_arrives_as_a_bot_message(
        make_home: MakeHome, prefect_api: str, telegram: FakeTelegram) -> None:
    home = make_home(lang="en", METNOS_TELEGRAM_BOT_TOKEN=TOKEN,
                     METNOS_TELEGRAM_API_BASE=telegram.base_url,
                     METNOS_TELEGRAM_POLL_TIMEOUT_S="1", **FAST)
    with deployment_runner(home):
        await wait_deployment()
        async with gateway(home) as client:
            await pair(client, telegram, ANNA, language_code="it")
            telegram.push_message(ANNA, "ricordami tra 2 minuti di chiamare la nonna",
                                  language_code="it")
            await until(telegram, lambda t: any(
                "⏰ Te lo ricorderò oggi alle" in s for s in t.sent_texts(ANNA)), "the reply")
            await until(telegram, lambda t: "⏰ Promemoria: chiamare la nonna" in t.sent_texts(
                ANNA), "the reminder", timeout_s=120)
            engine = make_engine(database_url(home.settings))
            for _ in range(40):  # marked delivered right after the bot API took it
                # the reminder's own row: the runner may also report other tests' missed
                # scheduled runs (the session's Prefect server is shared) on this chat
                [row] = [r for r in _all(engine)
                         if r.channel == "telegram" and r.kind == "reminder"]
                if row.delivered_at is not None:
                    break
                await asyncio.sleep(0.25)
    assert row.address == f"telegram-{ANNA}" and row.delivered_at is not None
    assert telegram.sent_texts(ANNA).count("⏰ Promemoria: chiamare la nonna") == 1
    engine.dispose()


@pytest.mark.timeout(240)
async def test_a_reminder_set_from_the_cli_waits_for_the_next_chat(
        make_home: MakeHome, prefect_api: str, capsys: pytest.CaptureFixture[str]) -> None:
    home = make_home(lang="en", METNOS_GATEWAY_PORT=str(free_port()), **FAST)
    engine = make_engine(database_url(home.settings))
    with deployment_runner(home):
        await wait_deployment()
        app = with_reminders(create_app(home.settings, runner=run_turn, resumer=resume_approval,
                                        edges=Edges(scheduler=scheduler(home.settings))))
        with served_app(app, home.settings.gateway.port) as base:
            async with httpx.AsyncClient(base_url=base, headers=home.auth(),
                                         timeout=60) as client:  # a bearer client: the CLI
                turn = await set_reminder(client, "remind me in two minutes to feed the cat")
                row = in_session(engine, outbox.by_action, turn["action_id"])
                assert row is not None and row.channel == "cli"
                for _ in range(240):
                    if (await client.get("/api/notices")).json()["notices"]:
                        break
                    await asyncio.sleep(0.5)
            assert await asyncio.to_thread(show_pending, home.settings, "en") == 1
            assert capsys.readouterr().out.strip() == "⏰ Reminder: feed the cat"
            assert await asyncio.to_thread(show_pending, home.settings, "en") == 0  # once
    engine.dispose()


@pytest.mark.timeout(240)
async def test_a_gateway_restart_loses_no_reminder(make_home: MakeHome,
                                                   prefect_api: str) -> None:
    home = make_home(lang="it", METNOS_GATEWAY_PORT=str(free_port()), **FAST)
    engine = make_engine(database_url(home.settings))
    with deployment_runner(home):
        await wait_deployment()
        async with web_chat(home) as client:
            turn = await set_reminder(client, "ricordami tra 2 minuti di innaffiare le piante")
        # the gateway is down when the reminder's time comes: the run still makes it due
        row = in_session(engine, outbox.by_action, turn["action_id"])
        assert row is not None
        for _ in range(240):
            row = in_session(engine, outbox.get, row.id)
            assert row is not None
            if row.due_at is not None:
                break
            await asyncio.sleep(0.5)
        assert row.due_at is not None and row.delivered_at is None
        async with web_chat(home) as client:  # started again: the page connects
            notice = await next_notice(client, 30)
    assert notice["text"] == "⏰ Promemoria: innaffiare le piante"
    engine.dispose()


def _all(engine: object) -> list[outbox.Outbox]:
    from sqlmodel import Session, select

    with Session(engine) as db:  # type: ignore[arg-type]
        return list(db.exec(select(outbox.Outbox)))


async def test_an_unreachable_bot_api_keeps_the_message_for_later(make_home: MakeHome) -> None:
    from metnos.faces.channels.telegram.sender import TelegramSender
    from metnos.faces.gateway.outbox_delivery import Delivery
    from metnos.faces.wiring import build_runtime
    from metnos.ground.db.models import utcnow

    home = make_home(lang="en")
    service = await build_runtime(home.settings)
    row = in_session(service.engine, outbox.add, outbox.Outbox(
        user_id="owner", channel="telegram", address="telegram-42", text="hi", lang="en",
        due_at=utcnow()))
    sender = TelegramSender(TOKEN, f"http://127.0.0.1:{free_port()}")  # nothing listens
    try:
        await Delivery(service, None, sender).tick()
    finally:
        await sender.close()
    kept = in_session(service.engine, outbox.get, row.id)
    assert kept is not None and kept.delivered_at is None and kept.cancelled_at is None
    pending = in_session(service.engine, outbox.pending)
    assert [r.id for r in pending] == [row.id]  # tried again later
    service.audit.close()
    service.engine.dispose()
