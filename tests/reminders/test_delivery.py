"""A reminder set through a turn (no model) arrives in the chat it was set from, through the
real deployment runner (`python -m deployments.serve`) and the session's Prefect server; an
undo cancels it (the row and the scheduled run). The clock is shortened
(`METNOS_REMINDERS_TIME_SCALE`): "tra 2 minuti" arrives in about six seconds plus the run's
process start.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import httpx
import pytest
from prefect import get_client
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName

from flows.reminder import reminder, scheduler
from flows.turn import resume_approval, run_turn
from metnos.faces.gateway.app import create_app
from metnos.faces.gateway.outbox_delivery import with_reminders
from metnos.faces.wiring import Edges
from metnos.features.reminders import outbox
from metnos.ground.db.engine import database_url, in_session, make_engine
from tests.gateway.test_turns import wait_closed
from tests.support.home import Home, MakeHome, served_app
from tests.support.pg import free_port
from tests.web.support import log_in

FAST = {"METNOS_REMINDERS_TIME_SCALE": "0.05", "METNOS_REMINDERS_DELIVERY_POLL_S": "0.5"}


@contextmanager
def deployment_runner(home: Home) -> Iterator[None]:
    """`python -m deployments.serve` as `metnos serve` starts it, polling every second."""
    env = {**os.environ, "PREFECT_RUNNER_POLL_FREQUENCY": "1"}
    log = (home.path / "runner.log").open("wb")
    proc = subprocess.Popen([sys.executable, "-m", "deployments.serve"], env=env,  # noqa: S603
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


async def wait_deployment(name: str = "reminder/at", timeout_s: float = 90) -> None:
    deadline = time.monotonic() + timeout_s
    async with get_client() as client:
        while True:
            try:
                await client.read_deployment_by_name(name)
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.5)


async def reminder_run(name: str) -> Any:
    async with get_client() as client:
        runs = await client.read_flow_runs(
            flow_run_filter=FlowRunFilter(name=FlowRunFilterName(any_=[name])))
    assert len(runs) == 1, runs
    return runs[0]


async def final_run(name: str, timeout_s: float = 60) -> Any:
    """The run named `name` once its state is final."""
    deadline = time.monotonic() + timeout_s
    while True:
        run = await reminder_run(name)
        if run.state is not None and run.state.is_final():
            return run
        assert time.monotonic() < deadline, f"{name} never ended: {run.state}"
        await asyncio.sleep(0.2)


@asynccontextmanager
async def web_chat(home: Home) -> AsyncIterator[httpx.AsyncClient]:
    """The gateway with reminders on a real port, and a browser logged in to it."""
    app = with_reminders(create_app(home.settings, runner=run_turn, resumer=resume_approval,
                                    edges=Edges(scheduler=scheduler(home.settings))))
    with served_app(app, home.settings.gateway.port) as base:
        async with httpx.AsyncClient(base_url=base, timeout=60,
                                     headers={"Origin": base}) as client:
            await log_in(client, home)
            yield client


async def set_reminder(client: httpx.AsyncClient, text: str) -> dict[str, Any]:
    resp = await client.post("/api/turns", json={"text": text})
    assert resp.status_code == 200, resp.text
    turn = await wait_closed(client, resp.json()["turn_id"])
    items = [a for a in turn["activity"] if a["executor"] == "reminder_set"]
    assert len(items) == 1, turn
    item = items[0]
    assert item["status"] == "done" and item["undo"], turn
    return {**turn, "action_id": item["action_id"]}


async def next_notice(client: httpx.AsyncClient, timeout_s: float) -> dict[str, Any]:
    async with asyncio.timeout(timeout_s):
        async with client.stream("GET", "/api/notices/events") as events:
            kind = None
            async for line in events.aiter_lines():
                if line.startswith("event: "):
                    kind = line.removeprefix("event: ")
                elif line.startswith("data: ") and kind == "notice":
                    data: dict[str, Any] = json.loads(line.removeprefix("data: "))
                    return data
    raise AssertionError("the stream ended")


@pytest.mark.timeout(240)
async def test_a_reminder_in_two_minutes_reaches_the_web_chat(make_home: MakeHome,
                                                               prefect_api: str) -> None:
    home = make_home(lang="it", METNOS_GATEWAY_PORT=str(free_port()), **FAST)
    with deployment_runner(home):
        await wait_deployment()
        async with web_chat(home) as client:
            turn = await set_reminder(client, "ricordami tra 2 minuti di spegnere il forno")
            assert turn["reply"].startswith("⏰ Te lo ricorderò oggi alle"), turn["reply"]
            assert turn["reply"].endswith("spegnere il forno")
            engine = make_engine(database_url(home.settings))
            row = in_session(engine, outbox.by_action, turn["action_id"])
            assert row is not None and row.channel == "web" and row.due_at is None
            run = await reminder_run(f"reminder-{row.id[:8]}")
            assert set(run.tags) == {"reminder", "channel:web", f"user:{row.user_id}"}
            assert "forno" not in run.name
            notice = await next_notice(client, 120)
            shown = await client.post("/api/notices/delivered", json={"ids": [notice["id"]]})
            assert shown.status_code == 200 and shown.json()["delivered"] == [row.id]
            # the notice is due once the run marked it, a moment before the run reports its
            # own end: the runner is stopped only after that (stopped sooner, Prefect cancels
            # the run, "Runner is shutting down")
            run = await final_run(f"reminder-{row.id[:8]}")
    assert notice["text"] == "⏰ Promemoria: spegnere il forno"
    assert notice["session_id"] == turn["session_id"]
    delivered = in_session(engine, outbox.get, row.id)
    assert delivered is not None and delivered.delivered_at is not None
    assert run.state is not None and run.state.name == "Due"
    engine.dispose()


@pytest.mark.timeout(180)
async def test_undo_cancels_the_reminder_and_its_run(make_home: MakeHome,
                                                     prefect_api: str) -> None:
    home = make_home(lang="en", METNOS_GATEWAY_PORT=str(free_port()), **FAST)
    deployment = await reminder.to_deployment(name="at")  # type: ignore[misc]
    await deployment.apply()  # no runner: the run stays scheduled
    async with web_chat(home) as client:
        turn = await set_reminder(client, "remind me tomorrow at 9 to water the plants")
        reply = turn["reply"]  # CLDR puts a narrow no-break space before AM
        assert reply.startswith("⏰ I will remind you tomorrow at 9:00"), reply
        assert reply.endswith("AM: water the plants"), reply
        undo = await client.post(f"/api/actions/{turn['action_id']}/undo")
        assert undo.status_code == 200, undo.text
        assert "will not arrive" in undo.json()["message"]
        again = await client.post(f"/api/actions/{turn['action_id']}/undo")
        assert again.status_code == 409
        engine = make_engine(database_url(home.settings))
        row = in_session(engine, outbox.by_action, turn["action_id"])
        assert row is not None and row.cancelled_at is not None
        name = f"reminder-{row.id[:8]}"
        for _ in range(60):
            run = await reminder_run(name)
            if run.state is not None and run.state.type.value == "CANCELLED":
                break
            await asyncio.sleep(0.5)
        assert run.state is not None and run.state.type.value == "CANCELLED", run.state
        assert in_session(engine, outbox.pending) == []
        engine.dispose()


async def test_two_open_pages_get_a_notice_until_one_shows_it(make_home: MakeHome) -> None:
    """Each open page gets a web notice until one page says it showed it (the POST); then
    no page gets it again."""
    from metnos.ground.db.models import utcnow

    home = make_home(lang="en", METNOS_GATEWAY_PORT=str(free_port()), **FAST)
    engine = make_engine(database_url(home.settings))
    async with web_chat(home) as client:
        first = asyncio.ensure_future(next_notice(client, 20))
        second = asyncio.ensure_future(next_notice(client, 20))
        await asyncio.sleep(1)  # both streams are open
        row = in_session(engine, outbox.add, outbox.Outbox(
            user_id="owner", channel="web", address="s1", text="⏰ Reminder: tea", lang="en",
            due_at=utcnow()))
        got = await asyncio.gather(first, second)
        assert [g["id"] for g in got] == [row.id, row.id]
        assert got[0]["text"] == "⏰ Reminder: tea"
        assert in_session(engine, outbox.get, row.id).delivered_at is None  # type: ignore[union-attr]
        shown = await client.post("/api/notices/delivered", json={"ids": [row.id]})
        assert shown.json()["delivered"] == [row.id]
        late = asyncio.ensure_future(next_notice(client, 20))
        await asyncio.sleep(2)  # a few delivery rounds: a page opened now gets nothing
        assert not late.done()
        late.cancel()
        await asyncio.gather(late, return_exceptions=True)
    delivered = in_session(engine, outbox.get, row.id)
    assert delivered is not None and delivered.delivered_at is not None
    engine.dispose()
