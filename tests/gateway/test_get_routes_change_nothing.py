"""Architecture (issue 25 finding 7): every GET route of the gateway leaves the database as it
found it. A GET is what a page of another origin can make the owner's browser send with the
cookie (an `<img>`, a no-cors `fetch`): it must be safe to answer. Each GET route of the app
is called with the owner's token, while the database holds what GETs could be tempted to
touch (a due web notice, a pending pairing request); streams are read for a moment. Then
every table is compared row by row."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import httpx
import pytest
from sqlalchemy import text
from sqlmodel import SQLModel

from flows.reminder import scheduler
from metnos.faces.gateway.app import create_app
from metnos.faces.gateway.outbox_delivery import with_reminders
from metnos.faces.wiring import Edges
from metnos.features.pairing import admit
from metnos.features.reminders import outbox
from metnos.ground.db.engine import database_url, in_session, make_engine
from metnos.ground.db.engine import session as db_session
from metnos.ground.db.models import utcnow
from tests.support.home import MakeHome, served_app
from tests.support.pg import free_port
from tests.web.test_cross_site import _endpoints

SAMPLE = {"session_id": "s1", "turn_id": "t1", "name": "fs_read", "lang": "en",
          "action_id": "a1", "move_id": "m1", "approval_id": "p1"}


def snapshot(engine: Any) -> dict[str, list[tuple[Any, ...]]]:
    with engine.connect() as conn:
        return {name: sorted(map(tuple, conn.execute(text(f'SELECT * FROM "{name}"'))), key=repr)
                for name in SQLModel.metadata.tables}


def get_paths(app: Any) -> list[str]:
    """Every GET path of the app (sample values for its parameters)."""
    paths = []
    for path, methods, _ in _endpoints(app.routes):
        if "GET" in methods:
            for name, value in SAMPLE.items():
                path = path.replace("{" + name + "}", value).replace(
                    "{" + name + ":path}", value)
            paths.append(re.sub(r"\{[^}]+\}", "x", path))
    return paths


async def call(client: httpx.AsyncClient, path: str) -> int:
    """The status of GET `path`, reading a stream for a moment then closing it."""
    try:
        async with asyncio.timeout(2.0):
            async with client.stream("GET", path) as resp:
                async for _ in resp.aiter_bytes():
                    pass
                return resp.status_code
    except TimeoutError:
        return 200  # a stream that stayed open


@pytest.mark.attack
async def test_no_get_route_changes_the_database(make_home: MakeHome) -> None:
    home = make_home(lang="en", METNOS_GATEWAY_PORT=str(free_port()))
    app = with_reminders(create_app(home.settings, edges=Edges(scheduler=scheduler(home.settings))))
    engine = make_engine(database_url(home.settings))
    try:
        with served_app(app, home.settings.gateway.port) as base:
            async with httpx.AsyncClient(base_url=base, headers=home.auth(),
                                         timeout=30) as client:
                assert (await client.get("/healthz")).status_code == 200  # tables exist
                in_session(engine, outbox.add, outbox.Outbox(user_id="owner", channel="web",
                                                             address="s1", text="⏰ tea", lang="en",
                                                             due_at=utcnow()))
                with db_session(engine) as db:
                    admit(db, channel="telegram", sender_id="stranger",
                          settings=home.settings.policy)
                before = snapshot(engine)
                paths = get_paths(app)
                assert "/api/notices/events" in paths and "/api/pairing" in paths
                statuses = {path: await call(client, path) for path in paths}
                after = snapshot(engine)
    finally:
        engine.dispose()
    assert any(code == 200 for code in statuses.values()), statuses
    changed = {name for name in before if before[name] != after[name]}
    assert not changed, (changed, statuses)
