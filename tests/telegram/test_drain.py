"""A draining gateway and the Telegram channel (issue 26 §3): polling stops at once, so a
message sent during the drain starts no turn (it waits on Telegram's side for the next start),
while the turn in flight finishes and its reply is still sent."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from sqlmodel import select

from metnos.faces.gateway.drain import drain
from metnos.ground.db import models
from metnos.ground.db.engine import session as db_session
from metnos.testing.llm_server import ScriptedLLM
from metnos.testing.telegram_server import FakeTelegram
from tests.support.home import MakeHome
from tests.telegram.support import pair, shown_texts, telegram_gateway, until

ANNA = 7001
REPLY = "Here it is, slowly."


async def test_a_draining_gateway_stops_polling_and_finishes_the_turn_in_flight(
        make_home: MakeHome, scripted_llm: ScriptedLLM, telegram: FakeTelegram,
        prefect_api: str) -> None:
    home = make_home(llm=scripted_llm, lang="en")

    def slowly(body: dict[str, Any]) -> str:
        time.sleep(2.0)
        return REPLY

    async with telegram_gateway(home, telegram) as (client, channel):
        app = client.app  # type: ignore[attr-defined]
        app.state.gateway.telegram = channel  # as the lifespan keeps the channel it starts
        await pair(client, telegram, ANNA, language_code="en")
        scripted_llm.respond_with(slowly)
        telegram.push_message(ANNA, "tell me something nice", language_code="en")
        engine = app.state.gateway.service.engine
        await until(telegram, lambda t: _turns(engine) == ["tell me something nice"],
                    "the turn to start")
        draining = asyncio.ensure_future(drain(app.state.gateway, 30.0))
        await until(telegram, lambda t: not channel.polling, "polling to stop")
        telegram.push_message(ANNA, "and another thing", language_code="en")
        await asyncio.wait_for(draining, 60)
        # streamed: sent at its first words, edited to its end (which words come first
        # depends on the machine's pace)
        assert any(REPLY in text for text in shown_texts(telegram, ANNA))
        await asyncio.sleep(1.5)  # a poller still running would have taken it by now
        assert _turns(engine) == ["tell me something nice"]
        assert (await client.get("/healthz")).status_code == 503


def _turns(engine: Any) -> list[str]:
    with db_session(engine) as db:
        return [t.text for t in db.exec(select(models.Turn)).all()]
