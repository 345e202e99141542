"""The live connections of each web session: the WebSockets (`WS /api/chat`) and event streams
(`GET /api/turns/{id}/events`) a browser opened with its session cookie, so that
`POST /api/logout` ends them at once instead of leaving them open until they idle out.

A connection `hold`s an `asyncio.Event` for its web session while it lives; `end` (called
from any thread: the logout route runs in a worker thread) sets the events of that session on
their loops. A session once ended stays ended here: a connection that authenticated just
before the logout and registers just after it is ended at once, so no socket slips through.
Bearer-token connections have no web session and are never ended by a logout.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_ENDED_KEPT = 10_000  # ended session ids remembered (one per logout; sessions are few)


class LiveConnections:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._live: dict[str, set[tuple[asyncio.AbstractEventLoop, asyncio.Event]]] = {}
        self._ended: dict[str, None] = {}  # insertion-ordered, bounded

    @contextmanager
    def hold(self, web_session_id: str | None) -> Iterator[asyncio.Event]:
        """An event set when `web_session_id` logs out, for as long as the block runs (never
        set when there is no web session: a bearer client)."""
        ended = asyncio.Event()
        if web_session_id is None:
            yield ended
            return
        entry = (asyncio.get_running_loop(), ended)
        with self._lock:
            if web_session_id in self._ended:
                ended.set()
            self._live.setdefault(web_session_id, set()).add(entry)
        try:
            yield ended
        finally:
            with self._lock:
                held = self._live.get(web_session_id)
                if held is not None:
                    held.discard(entry)
                    if not held:
                        del self._live[web_session_id]

    def end(self, web_session_id: str) -> int:
        """End every connection of `web_session_id` (thread-safe); how many were open."""
        with self._lock:
            self._ended[web_session_id] = None
            while len(self._ended) > _ENDED_KEPT:
                del self._ended[next(iter(self._ended))]
            held = list(self._live.get(web_session_id, ()))
        for loop, event in held:
            try:
                loop.call_soon_threadsafe(event.set)
            except RuntimeError:  # that loop is closed: its connection is gone already
                continue
        return len(held)

