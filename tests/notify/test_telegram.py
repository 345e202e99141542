"""A notify step set from the command line reaches the owner's preferred channel: with
`[notify] channel = "telegram"` it arrives as a bot message in the owner's Telegram chat
(the fake Bot API), sent once by the gateway's outbox loop."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from asgi_lifespan import LifespanManager

from metnos.faces.gateway.app import create_app
from metnos.faces.gateway.outbox_delivery import with_reminders
from metnos.features.reminders import outbox
from metnos.ground.db.engine import database_url, in_session, make_engine
from metnos.testing.telegram_server import FakeTelegram
from tests.gateway.test_turns import wait_closed
from tests.support.home import GATEWAY_BASE, MakeHome
from tests.telegram.support import TOKEN, pair, until

ANNA = 5551234


@pytest.mark.timeout(180)
async def test_a_notification_goes_to_the_preferred_telegram_chat(
        make_home: MakeHome, telegram: FakeTelegram) -> None:
    home = make_home(lang="it", METNOS_TELEGRAM_BOT_TOKEN=TOKEN,
                     METNOS_TELEGRAM_API_BASE=telegram.base_url,
                     METNOS_TELEGRAM_POLL_TIMEOUT_S="1", METNOS_REMINDERS_DELIVERY_POLL_S="0.5",
                     METNOS_NOTIFY_CHANNEL="telegram", METNOS_NOTIFY_QUIET_HOURS="")
    app = with_reminders(create_app(home.settings))
    async with (LifespanManager(app, startup_timeout=60, shutdown_timeout=60) as manager,
                httpx.AsyncClient(transport=httpx.ASGITransport(app=manager.app),
                                  base_url=GATEWAY_BASE, headers=home.auth(),
                                  timeout=60) as client):
        await pair(client, telegram, ANNA)  # the first pairing: Anna is the owner
        before = len(telegram.sent_texts(ANNA))
        telegram.push_message(ANNA, "elenca i file", language_code="it")
        await until(telegram, lambda t: len(t.sent_texts(ANNA)) > before, "the reply")
        resp = await client.post("/api/turns", json={  # a bearer client: the CLI
            "text": "avvisami che la bolletta della luce è archiviata"})
        assert resp.status_code == 200, resp.text
        turn = await wait_closed(client, resp.json()["turn_id"])
        assert "su Telegram" in turn["reply"], turn["reply"]
        notice = "🔔 la bolletta della luce è archiviata"
        await until(telegram, lambda t: notice in t.sent_texts(ANNA), "the notification")
        engine = make_engine(database_url(home.settings))
        [item] = [a for a in turn["activity"] if a["executor"] == "notify"]
        for _ in range(40):
            row = in_session(engine, outbox.by_action, item["action_id"])
            assert row is not None
            if row.delivered_at is not None:
                break
            await asyncio.sleep(0.25)  # marked delivered right after the Bot API took it
        assert (row.channel, row.address) == ("telegram", f"telegram-{ANNA}")
        assert row.delivered_at is not None
        assert telegram.sent_texts(ANNA).count(notice) == 1
        engine.dispose()
