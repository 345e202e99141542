"""The turn handle every channel goes through (`metnos.turns.handle`): a turn started through
it runs, its events can be followed to the end and its reply waited for; a turn that cannot
be launched is closed failed, never left open."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

from metnos.faces.wiring import build_runtime
from metnos.ground.db.engine import session as db_session
from metnos.ground.db.models import get_turn
from metnos.turns.handle import TurnHandle, plain_runner
from tests.support.home import MakeHome


async def test_a_started_turn_is_followed_to_its_end_and_answered(make_home: MakeHome) -> None:
    home = make_home(lang="en")
    service = await build_runtime(home.settings)
    running: set[asyncio.Task[None]] = set()

    def launch(coro: Coroutine[Any, Any, None]) -> None:
        running.add(asyncio.get_running_loop().create_task(coro))

    turns = TurnHandle(service, plain_runner, launch)
    try:
        ctx = await turns.start("what is on the shopping list", session_id=None, lang="en",
                                channel="api", sender="owner")
        answered = await turns.reply(ctx.turn_id, 60)
        events = [e async for e in turns.follow(ctx.turn_id)]
        await asyncio.gather(*running)
    finally:
        service.audit.close()
    assert answered is not None and answered.status == "completed", answered
    assert answered.reply
    kinds = [e.kind for e in events]
    assert kinds[0] == "status" and kinds[-1] == "end", kinds
    assert "reply" in kinds
    with db_session(service.engine) as db:
        row = get_turn(db, ctx.turn_id)
        assert row is not None and row.status == "completed" and row.reply == answered.reply
    service.engine.dispose()


async def test_a_turn_that_cannot_be_launched_is_closed_failed(make_home: MakeHome) -> None:
    home = make_home(lang="en")
    service = await build_runtime(home.settings)

    def launch(coro: Coroutine[Any, Any, None]) -> None:
        raise RuntimeError("no loop to run it on")

    turns = TurnHandle(service, plain_runner, launch)
    try:
        ctx = await turns.start("what is on the shopping list", session_id=None, lang="en",
                                channel="api", sender="owner")
        assert ctx.closed
        assert await turns.reply(ctx.turn_id, 1) is None  # nothing more will come
        events = [e async for e in turns.follow(ctx.turn_id)]
    finally:
        service.audit.close()
    assert [e.kind for e in events][-1] == "end"
    assert events[-1].data["status"] == "failed"
    with db_session(service.engine) as db:
        row = get_turn(db, ctx.turn_id)
        assert row is not None and row.status == "failed" and row.finished_at is not None
    service.engine.dispose()
