"""Issue 25 finding 7: a GET that changed state. `GET /api/notices/events` claimed the owner's
due notices: a page on another port of 127.0.0.1 (the same *site*, so the SameSite cookie goes
along) opened the stream and a medicine reminder was marked delivered that the real tab never
showed. Now the stream marks nothing (the page acknowledges with a POST, which checks the
Origin) and refuses a browser request from another origin, as the WebSocket does."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from metnos.features.reminders import outbox
from metnos.ground.db.engine import database_url, in_session, make_engine
from metnos.ground.db.models import utcnow
from tests.reminders.test_delivery import FAST, web_chat
from tests.support.home import MakeHome
from tests.support.pg import free_port


async def notices_seen(client: httpx.AsyncClient, headers: dict[str, str],
                       wait_s: float = 3.0) -> list[dict[str, Any]]:
    """Open the stream with `headers`, read what comes within `wait_s`, close it."""
    seen: list[dict[str, Any]] = []
    try:
        async with asyncio.timeout(wait_s):
            async with client.stream("GET", "/api/notices/events", headers=headers) as events:
                if events.status_code != 200:
                    return seen
                kind = None
                async for line in events.aiter_lines():
                    if line.startswith("event: "):
                        kind = line.removeprefix("event: ")
                    elif line.startswith("data: ") and kind == "notice":
                        seen.append(json.loads(line.removeprefix("data: ")))
    except TimeoutError:
        pass
    return seen


@pytest.mark.attack
async def test_a_page_of_another_port_cannot_swallow_a_notice(make_home: MakeHome) -> None:
    home = make_home(lang="en", METNOS_GATEWAY_PORT=str(free_port()), **FAST)
    engine = make_engine(database_url(home.settings))
    try:
        async with web_chat(home) as client:
            row = in_session(engine, outbox.add, outbox.Outbox(
                user_id="owner", channel="web", address="s1", lang="en",
                text="⏰ Reminder: take the medicine", due_at=utcnow()))
            other = f"http://127.0.0.1:{free_port()}"
            for headers in ({"Origin": other},  # fetch/EventSource from the other port
                            {"Origin": "", "Sec-Fetch-Site": "same-site"},  # an <img>, no-cors
                            {"Origin": "", "Sec-Fetch-Site": "cross-site"}):
                await notices_seen(client, headers)
                still = in_session(engine, outbox.get, row.id)
                assert still is not None and still.delivered_at is None, headers
            # nor by the acknowledgement, from another origin
            forged = await client.post("/api/notices/delivered", json={"ids": [row.id]},
                                       headers={"Origin": other})
            assert forged.status_code == 403
            # the owner's own page: shown, then acknowledged; a page that only reads marks
            # nothing, every page sees it until then
            [first] = await notices_seen(client, {})
            [again] = await notices_seen(client, {})
            assert first["id"] == again["id"] == row.id
            ack = await client.post("/api/notices/delivered", json={"ids": [row.id]})
            assert ack.status_code == 200 and ack.json()["delivered"] == [row.id]
            assert await notices_seen(client, {}, wait_s=1.5) == []
        done = in_session(engine, outbox.get, row.id)
        assert done is not None and done.delivered_at is not None
    finally:
        engine.dispose()
