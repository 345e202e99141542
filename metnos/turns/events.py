"""The progress of a turn as events, in process (SPEC §3 `GET /api/turns/{id}/events`, §11).

`TurnEvents` is a small per-turn bus: the turn service publishes what happens (`status`,
`step`, `approval`, `delta` (a piece of the model's text as it streams), `reply`, `end`)
and any coroutine of the gateway's process subscribes —
the SSE route, the web chat, the Telegram typing indicator:

    async for event in service.events.subscribe(turn_id):
        ...  # history first, then live events, until (and including) `end`

Each turn keeps its history so a late subscriber replays it (`after` skips what it has seen,
as SSE's Last-Event-ID does). Memory stays bounded: a turn's history is dropped `keep_s`
after its `end`, a turn silent for `stale_s` is dropped too, and a turn keeps at most
`max_events`. Publishing with nobody listening only appends. Thread-safe: a worker thread may
publish; subscribers are woken on their own event loop. Plain asyncio, no Prefect.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

EventKind = Literal["status", "step", "approval", "delta", "reply", "end"]
KINDS: tuple[str, ...] = ("status", "step", "approval", "delta", "reply", "end")
KEEP_S = 300.0  # a finished turn's history stays this long for late subscribers
STALE_S = 24 * 3600.0  # a turn with no event for this long is forgotten even if it never ended
MAX_EVENTS = 1000  # per turn; beyond it the oldest events are dropped (never `end`)


@dataclass(frozen=True)
class TurnEvent:
    """One step of a turn's progress; `seq` grows by one per turn, starting at 1."""

    turn_id: str
    seq: int
    kind: EventKind
    data: dict[str, Any]
    at: str  # ISO 8601, UTC

    def to_json(self) -> dict[str, Any]:
        return {**self.data, "type": self.kind, "seq": self.seq, "turn_id": self.turn_id,
                "at": self.at}


@dataclass
class _Stream:
    events: list[TurnEvent] = field(default_factory=list)
    seq: int = 0
    ended_at: float | None = None
    touched: float = field(default_factory=time.monotonic)
    waiters: set[_Waiter] = field(default_factory=set)


@dataclass(eq=False)
class _Waiter:
    loop: asyncio.AbstractEventLoop
    wake: asyncio.Event

    def notify(self) -> None:
        with contextlib.suppress(RuntimeError):  # its loop is closed: nobody waits any more
            self.loop.call_soon_threadsafe(self.wake.set)


class TurnEvents:
    def __init__(self, *, keep_s: float = KEEP_S, stale_s: float = STALE_S,
                 max_events: int = MAX_EVENTS) -> None:
        self.keep_s, self.stale_s, self.max_events = keep_s, stale_s, max_events
        self._streams: dict[str, _Stream] = {}
        self._lock = threading.Lock()

    def publish(self, turn_id: str, kind: EventKind, /, **data: Any) -> TurnEvent | None:
        """Append an event to the turn's history and wake its subscribers. After `end`, a
        turn takes no more events (None is returned): each turn ends exactly once."""
        if kind not in KINDS:
            raise ValueError(f"unknown turn event {kind!r}; one of {KINDS}")
        now = time.monotonic()
        with self._lock:
            self._prune(now)
            stream = self._streams.setdefault(turn_id, _Stream())
            if stream.ended_at is not None:
                return None
            stream.seq += 1
            event = TurnEvent(turn_id, stream.seq, kind, data,
                              datetime.now(UTC).isoformat(timespec="milliseconds"))
            stream.events.append(event)
            if len(stream.events) > self.max_events:
                del stream.events[0]
            stream.touched = now
            if kind == "end":
                stream.ended_at = now
            waiters = list(stream.waiters)
        for waiter in waiters:
            waiter.notify()
        return event

    def known(self, turn_id: str) -> bool:
        """Whether the turn's events are (still) in memory."""
        with self._lock:
            self._prune(time.monotonic())
            return turn_id in self._streams

    def history(self, turn_id: str, after: int = 0) -> list[TurnEvent]:
        with self._lock:
            stream = self._streams.get(turn_id)
            return [e for e in stream.events if e.seq > after] if stream else []

    async def subscribe(self, turn_id: str, after: int = 0) -> AsyncIterator[TurnEvent]:
        """The turn's events with `seq > after`: the history, then live ones, ending after
        `end`. A turn not in memory (unknown, or finished long ago) yields nothing."""
        waiter = _Waiter(asyncio.get_running_loop(), asyncio.Event())
        with self._lock:
            stream = self._streams.get(turn_id)
            if stream is None:
                return
            stream.waiters.add(waiter)
        try:
            while True:
                with self._lock:
                    waiter.wake.clear()
                    fresh = [e for e in stream.events if e.seq > after]
                    ended = stream.ended_at is not None
                for event in fresh:
                    yield event
                    after = event.seq
                    if event.kind == "end":
                        return
                if ended:  # `end` was seen before `after`: nothing more will come
                    return
                await waiter.wake.wait()
        finally:
            with self._lock:
                stream.waiters.discard(waiter)

    def _prune(self, now: float) -> None:
        """Forget finished turns after `keep_s` and silent ones after `stale_s` (lock held)."""
        gone = [turn_id for turn_id, s in self._streams.items()
                if (s.ended_at is not None and now - s.ended_at > self.keep_s)
                or now - s.touched > self.stale_s]
        for turn_id in gone:
            stream = self._streams.pop(turn_id)
            stream.ended_at = stream.ended_at or now  # a subscriber still there stops
            for waiter in stream.waiters:
                waiter.notify()


__all__ = ["EventKind", "TurnEvent", "TurnEvents"]
