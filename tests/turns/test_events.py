"""The per-turn event bus: order, replay, late subscribers, cleanup, nobody listening."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest

from metnos.turns.events import TurnEvent, TurnEvents


async def collect(bus: TurnEvents, turn_id: str, after: int = 0) -> list[TurnEvent]:
    return [e async for e in bus.subscribe(turn_id, after)]


async def test_live_subscriber_sees_every_event_in_order_and_stops_after_end() -> None:
    bus = TurnEvents()
    bus.publish("t1", "status", status="planning")
    listener = asyncio.create_task(collect(bus, "t1"))
    await asyncio.sleep(0.01)  # subscribed, waiting for more
    assert not listener.done()
    bus.publish("t1", "step", executor="fs_write", state="started")
    await asyncio.sleep(0)
    bus.publish("t1", "reply", text="done", status="completed")
    bus.publish("t1", "end", status="completed")
    events = await asyncio.wait_for(listener, 30)  # a hang, not a speed
    assert [(e.seq, e.kind) for e in events] == [
        (1, "status"), (2, "step"), (3, "reply"), (4, "end")]
    assert events[1].data == {"executor": "fs_write", "state": "started"}
    first = events[0].to_json()
    assert first["type"] == "status" and first["seq"] == 1 and first["turn_id"] == "t1"
    json.dumps([e.to_json() for e in events])  # JSON-able


async def test_late_subscriber_replays_history_then_gets_live_events() -> None:
    bus = TurnEvents()
    for state in ("started", "done"):
        bus.publish("t1", "step", executor="fs_read", state=state)
    late = asyncio.create_task(collect(bus, "t1"))
    resumed = asyncio.create_task(collect(bus, "t1", after=1))  # as with Last-Event-ID: 1
    await asyncio.sleep(0.01)
    bus.publish("t1", "end", status="completed")
    assert [e.seq for e in await late] == [1, 2, 3]
    assert [e.seq for e in await resumed] == [2, 3]
    # after the end: the whole history at once, and nothing is accepted any more
    assert bus.publish("t1", "status", status="running") is None
    assert [e.kind for e in await collect(bus, "t1")] == ["step", "step", "end"]
    assert await collect(bus, "t1", after=3) == []


async def test_turns_do_not_mix_and_unknown_turn_yields_nothing() -> None:
    bus = TurnEvents()
    bus.publish("a", "status", status="planning")
    bus.publish("b", "status", status="running")
    bus.publish("a", "end", status="completed")
    bus.publish("b", "end", status="failed")
    assert [e.data["status"] for e in await collect(bus, "b")] == ["running", "failed"]
    assert [e.seq for e in await collect(bus, "a")] == [1, 2]
    assert await collect(bus, "nope") == [] and not bus.known("nope")


async def test_finished_turns_are_forgotten_after_keep_s_and_silent_ones_after_stale_s() -> None:
    bus = TurnEvents(keep_s=0.5, stale_s=1.5)  # margins that a stalled loaded box keeps
    bus.publish("done", "end", status="completed")
    bus.publish("forever", "status", status="running")  # never ends
    assert bus.known("done") and bus.known("forever")
    await asyncio.sleep(0.6)
    assert not bus.known("done") and bus.known("forever")
    waiting = asyncio.create_task(collect(bus, "forever"))
    await asyncio.sleep(1.5)
    assert not bus.known("forever")
    assert [e.kind for e in await asyncio.wait_for(waiting, 30)] == ["status"]  # released


async def test_history_is_bounded_per_turn() -> None:
    bus = TurnEvents(max_events=3)
    for i in range(10):
        bus.publish("t", "step", executor=f"e{i}", state="done")
    bus.publish("t", "end", status="completed")
    assert [e.seq for e in bus.history("t")] == [9, 10, 11]


async def test_publish_with_nobody_listening_and_from_another_thread() -> None:
    bus = TurnEvents()
    assert bus.publish("t", "status", status="planning") is not None  # no listener: fine
    listener = asyncio.create_task(collect(bus, "t", after=1))
    await asyncio.sleep(0.01)

    def worker() -> None:
        time.sleep(0.02)
        bus.publish("t", "step", executor="fs_find", state="refused")
        bus.publish("t", "end", status="completed")

    thread = threading.Thread(target=worker)
    thread.start()
    events = await asyncio.wait_for(listener, 30)  # a hang, not a speed
    thread.join()
    assert [e.kind for e in events] == ["step", "end"]


async def test_a_subscriber_that_leaves_is_unregistered() -> None:
    bus = TurnEvents()
    bus.publish("t", "status", status="planning")
    stream = bus.subscribe("t")
    assert (await anext(stream)).seq == 1
    await stream.aclose()
    assert bus.publish("t", "end", status="completed") is not None
    assert bus._streams["t"].waiters == set()


def test_unknown_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown turn event"):
        TurnEvents().publish("t", "typing")  # type: ignore[arg-type]
