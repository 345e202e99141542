"""The `notify` effect: the validated message becomes an outbox row for the person's
preferred channel (or where they last wrote from), due now, or at the end of the quiet hours
when it is set inside them. Real database, real gateway, real sandbox; no model (the
embedded planner reads "avvisami che ...")."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlmodel import select

from metnos.features.notify.effect import (
    EFFECT,
    KIND,
    Destination,
    Notification,
    checked_result,
    destination,
    notification_row,
)
from metnos.features.pairing.models import PairedSender
from metnos.features.reminders import outbox
from metnos.features.reminders.outbox import Outbox
from metnos.ground.db.engine import database_url, in_session, make_engine
from metnos.ground.db.engine import session as db_session
from metnos.ground.db.models import ChatSession, Turn
from metnos.ground.settings import Settings
from tests.gateway.test_turns import wait_closed
from tests.support.home import Home, MakeHome, gateway_client

NOTE = Notification(id="a" * 32, text="La fattura della luce è archiviata.", title=None)
HERE = Destination("cli", "session-here")


def _engine(settings: Settings) -> Any:
    return make_engine(database_url(settings))


def _wrote(settings: Settings, session_id: str, channel: str, at: datetime,
           sender: str = "owner") -> None:
    with db_session(_engine(settings)) as db:
        if db.get(ChatSession, session_id) is None:
            db.add(ChatSession(id=session_id, user_id="owner", channel=channel,
                               interaction_language="it"))
            db.flush()
        db.add(Turn(session_id=session_id, channel=channel, sender=sender, text="ciao",
                    lang="it", created_at=at))


def _where(engine: Any, home: Home, user_id: str) -> Destination:
    return in_session(engine, destination, home.settings, user_id, HERE)


def test_auto_is_a_channel_the_owner_reads(make_home: MakeHome) -> None:
    """"auto": Telegram when paired or used, else the web chat, a terminal only when it is
    the only channel ever used; one `metnos chat` never takes the notices from the phone."""
    home = make_home(METNOS_NOTIFY_CHANNEL="auto")
    engine = _engine(home.settings)
    assert _where(engine, home, "owner") == HERE  # nothing known yet
    t0 = datetime(2026, 11, 30, 9, tzinfo=UTC)
    _wrote(home.settings, "cli-1", "api", t0)  # only the terminal so far: it keeps them
    assert _where(engine, home, "owner") == Destination("cli", "cli-1")
    _wrote(home.settings, "web-1", "web", t0 + timedelta(hours=1))
    _wrote(home.settings, "cli-2", "api", t0 + timedelta(hours=2))
    assert _where(engine, home, "owner") == Destination("web", "web-1")
    with db_session(engine) as db:  # paired on Telegram, not written from there yet
        db.add(PairedSender(channel="telegram", sender_id="42", user_id="owner",
                            role="owner", approved_by="owner"))
    assert _where(engine, home, "owner") == Destination(
        "telegram", "telegram-42")
    _wrote(home.settings, "telegram-77", "telegram", t0 + timedelta(hours=3))
    _wrote(home.settings, "sys-1", "system", t0 + timedelta(hours=4), sender="metnos")
    _wrote(home.settings, "cli-3", "api", t0 + timedelta(hours=5))  # one `metnos chat`
    assert _where(engine, home, "owner") == Destination(
        "telegram", "telegram-77")
    assert _where(engine, home, "someone-else") == HERE


def test_a_preferred_channel_wins(make_home: MakeHome) -> None:
    home = make_home(METNOS_NOTIFY_CHANNEL="web")
    engine = _engine(home.settings)
    assert _where(engine, home, "owner") == HERE  # no web chat known
    t0 = datetime(2026, 11, 30, 9, tzinfo=UTC)
    _wrote(home.settings, "web-1", "web", t0)
    _wrote(home.settings, "telegram-42", "telegram", t0 + timedelta(hours=1))
    assert _where(engine, home, "owner") == Destination("web", "web-1")


@pytest.mark.parametrize(("now", "due", "later"), [
    (datetime(2026, 12, 1, 12, 0, tzinfo=UTC), datetime(2026, 12, 1, 12, 0, tzinfo=UTC), None),
    (datetime(2026, 12, 1, 22, 30, tzinfo=UTC), datetime(2026, 12, 2, 7, 0, tzinfo=UTC),
     datetime(2026, 12, 2, 7, 0, tzinfo=UTC)),
    (datetime(2026, 12, 2, 6, 59, tzinfo=UTC), datetime(2026, 12, 2, 7, 0, tzinfo=UTC),
     datetime(2026, 12, 2, 7, 0, tzinfo=UTC)),
])
def test_quiet_hours_defer_the_row(make_home: MakeHome, now: datetime, due: datetime,
                                   later: datetime | None) -> None:
    home = make_home(METNOS_NOTIFY_QUIET_HOURS="21:00-07:00", METNOS_TIMEZONE="UTC")
    row = notification_row(NOTE, HERE, settings=home.settings, user_id="owner", lang="it",
                           now=now, action_id="act1", turn_id=None)
    assert (row.due_at, row.scheduled_for) == (due, later)
    assert (row.kind, row.channel, row.address) == (KIND, "cli", "session-here")
    assert row.text == "🔔 La fattura della luce è archiviata."


@pytest.mark.parametrize("result", [
    {}, {"notification": "text"}, {"notification": {"id": "x", "text": "ok"}},
    {"notification": {"id": "a" * 32, "text": ""}},
    {"notification": {"id": "a" * 32, "text": "x" * 1501}},
    {"notification": {"id": "a" * 32, "text": "ok", "title": "t" * 121}},
])
def test_a_result_the_executor_never_gives_is_refused(result: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        checked_result(result)


def _quiet_around_now() -> str:
    """Quiet hours from an hour ago to two hours ahead (local, UTC): now is inside them."""
    now = datetime.now(UTC)
    return f"{(now - timedelta(hours=1)):%H:%M}-{(now + timedelta(hours=2)):%H:%M}"


async def _notify_turn(client: httpx.AsyncClient, text: str) -> dict[str, Any]:
    app = client.app  # type: ignore[attr-defined]
    assert EFFECT in app.state.gateway.service.hooks.effects  # every runtime carries notify out
    resp = await client.post("/api/turns", json={"text": text})
    assert resp.status_code == 200, resp.text
    turn = await wait_closed(client, resp.json()["turn_id"])
    items = [a for a in turn["activity"] if a["executor"] == "notify"]
    assert len(items) == 1 and items[0]["status"] == "done", turn
    return {**turn, "action_id": items[0]["action_id"]}


def _rows(home: Home) -> list[Outbox]:
    with db_session(_engine(home.settings)) as db:
        return list(db.exec(select(Outbox).where(Outbox.kind == KIND)))


async def test_a_notify_step_queues_the_message_and_undo_cancels_it(
        make_home: MakeHome) -> None:
    home = make_home(lang="it", METNOS_NOTIFY_QUIET_HOURS="", METNOS_NOTIFY_CHANNEL="auto")
    async with gateway_client(home, prefect=False) as client:
        turn = await _notify_turn(client, "avvisami che la fattura della luce è archiviata")
        assert "Messaggio mandato sulla riga di comando" in turn["reply"], turn["reply"]
        [row] = _rows(home)
        assert (row.channel, row.address, row.action_id) == ("cli", turn["session_id"],
                                                            turn["action_id"])
        assert row.text == "🔔 la fattura della luce è archiviata"
        assert row.due_at is not None and row.scheduled_for is None
        pending = await asyncio.to_thread(in_session, _engine(home.settings), outbox.pending)
        assert [r.id for r in pending] == [row.id]
        resp = await client.post(f"/api/actions/{turn['action_id']}/undo")
        assert resp.status_code == 200, resp.text
        [row] = _rows(home)
        assert row.cancelled_at is not None and row.delivered_at is None
        assert await asyncio.to_thread(in_session, _engine(home.settings), outbox.pending) == []


async def test_inside_quiet_hours_the_message_waits(make_home: MakeHome) -> None:
    home = make_home(lang="en", METNOS_TIMEZONE="UTC",
                     METNOS_NOTIFY_QUIET_HOURS=_quiet_around_now())
    async with gateway_client(home, prefect=False) as client:
        turn = await _notify_turn(client, "notify me that the power bill is filed")
        assert "It is quiet time" in turn["reply"], turn["reply"]
        [row] = _rows(home)
        assert row.scheduled_for is not None and row.due_at == row.scheduled_for
        assert row.due_at > datetime.now(UTC) + timedelta(minutes=30)


async def test_nothing_is_delivered_inside_quiet_hours(make_home: MakeHome) -> None:
    home = make_home(lang="en", METNOS_TIMEZONE="UTC",
                     METNOS_NOTIFY_QUIET_HOURS=_quiet_around_now())
    async with gateway_client(home, prefect=False) as client:
        await _notify_turn(client, "notify me that the power bill is filed")
        assert await asyncio.to_thread(in_session, _engine(home.settings), outbox.pending) == []
