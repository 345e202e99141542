"""What the latency bench watches from outside: the Prefect client's HTTP requests and the
first streamed text of each model call.

- `PrefectCalls` wraps `send` of `PrefectHttpxAsyncClient` and `PrefectHttpxSyncClient` (the
  transports every Prefect client call goes through; a sync call blocks the event loop) and
  files each request (method, path with ids folded, start, end)
  under the turn that made it: a context variable set by the bench around the turn's runner,
  so a request made by the flow engine inside the turn's task counts, one made by a Prefect
  background worker (logs, events) does not.
- `DeltaClock` records, per turn and model call, when its first `delta` event is published
  on `service.events` (it calls the bus's own `publish` after noting the time).
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

_IDS = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    start: float  # perf_counter seconds
    end: float

    @property
    def name(self) -> str:
        return f"{self.method} {self.path}"

    @property
    def ms(self) -> float:
        return (self.end - self.start) * 1000


@dataclass
class PrefectCalls:
    by_turn: dict[str, list[Call]] = field(default_factory=dict)
    outside: list[Call] = field(default_factory=list)
    _turn: ContextVar[str | None] = field(
        default_factory=lambda: ContextVar("bench_turn", default=None))

    def install(self) -> None:
        from prefect.client.base import PrefectHttpxAsyncClient, PrefectHttpxSyncClient

        original, original_sync = PrefectHttpxAsyncClient.send, PrefectHttpxSyncClient.send

        async def send(client: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return await original(client, request, *args, **kwargs)
            finally:
                self._file(request, "", start)

        def send_sync(client: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return original_sync(client, request, *args, **kwargs)
            finally:
                self._file(request, " (sync)", start)

        setattr(PrefectHttpxAsyncClient, "send", send)  # noqa: B010
        setattr(PrefectHttpxSyncClient, "send", send_sync)  # noqa: B010
        self._time_construction()

    def _time_construction(self) -> None:
        """A new Prefect client builds an httpx client and its TLS context (even for http://):
        filed as a `NEW <class>` pseudo-request."""
        from prefect.client.orchestration import PrefectClient, SyncPrefectClient

        def timing(cls: type) -> Any:
            init = getattr(cls, "__init__")  # noqa: B009

            def timed(client: Any, *args: Any, **kwargs: Any) -> None:
                start = time.perf_counter()
                try:
                    init(client, *args, **kwargs)
                finally:
                    self._add(Call("NEW", cls.__name__, start, time.perf_counter()))
            return timed

        for cls in (PrefectClient, SyncPrefectClient):
            setattr(cls, "__init__", timing(cls))  # noqa: B010

    def _file(self, request: Any, kind: str, start: float) -> None:
        path = _IDS.sub("{id}", request.url.path.split("/api", 1)[-1])
        self._add(Call(request.method + kind, path, start, time.perf_counter()))

    def _add(self, call: Call) -> None:
        turn = self._turn.get()
        (self.by_turn.setdefault(turn, []) if turn else self.outside).append(call)

    @contextmanager
    def turn(self, turn_id: str) -> Iterator[None]:
        token = self._turn.set(turn_id)
        try:
            yield
        finally:
            self._turn.reset(token)

    def of(self, turn_id: str, before: float | None = None) -> list[Call]:
        """The turn's requests; with `before`, those that started before that instant."""
        return [c for c in self.by_turn.get(turn_id, []) if before is None or c.start < before]


def busy_ms(calls: list[Call], until: float | None = None) -> float:
    """Wall time covered by the requests (overlaps counted once), up to `until`."""
    spans = sorted((c.start, min(c.end, until) if until else c.end) for c in calls)
    total, reach = 0.0, float("-inf")
    for start, end in spans:
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total * 1000


def endpoint_table(samples: list[list[Call]]) -> list[tuple[str, float, float]]:
    """(endpoint, requests per turn, median ms per request), most time first."""
    count: Counter[str] = Counter()
    times: dict[str, list[float]] = {}
    for calls in samples:
        for call in calls:
            count[call.name] += 1
            times.setdefault(call.name, []).append(call.ms)
    rows = []
    for name, n in count.items():
        ordered = sorted(times[name])
        rows.append((name, n / max(1, len(samples)), ordered[len(ordered) // 2]))
    return sorted(rows, key=lambda r: -r[1] * r[2])


@dataclass
class DeltaClock:
    first: dict[str, dict[int, float]] = field(default_factory=dict)

    def attach(self, service: Any) -> None:
        events = service.events
        publish = events.publish
        first = self.first

        def timed(turn_id: str, kind: Any, /, **data: Any) -> Any:
            if kind == "delta":
                first.setdefault(turn_id, {}).setdefault(int(data["think"]), time.perf_counter())
            return publish(turn_id, kind, **data)

        events.publish = timed

    def final(self, turn_id: str) -> float:
        """When the last model call of the turn published its first text."""
        calls = self.first.get(turn_id)
        assert calls, f"turn {turn_id} streamed no text"
        return calls[max(calls)]
