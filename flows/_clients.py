"""The Prefect API clients the turn flows of a process share, instead of new ones per run.

Left alone, each in-process flow run builds a `PrefectClient` (its httpx client builds a TLS
context even for an http:// API, then fetches a CSRF token) and, to look up the server's
default result storage, two `SyncPrefectClient`s: three TLS contexts, 15-100 ms of CPU each
on a 2-core box, before the flow's first line runs (`bench/turn_latency.py`). Prefect's
`get_client()` returns the client of its client context when one is set, so a turn runs with
the process's open clients set there (`shared_clients`); Prefect's own `async with client`
is reentrant and never closes a client it did not open.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from prefect.context import AsyncClientContext, SyncClientContext
from prefect.settings import get_current_settings

from flows._flow_ids import FlowIds

Clients = tuple[AsyncClientContext, SyncClientContext]
# the open pair, for one event loop and API at a time (a gateway has one; tests start several)
_open: tuple[tuple[object, ...], asyncio.Task[Clients]] | None = None


async def _start() -> Clients:
    async_ctx, sync_ctx = AsyncClientContext(), SyncClientContext()
    await async_ctx.client.__aenter__()  # open for the life of the loop: no __aexit__
    sync_ctx.client.__enter__()
    _one_csrf_fetch_at_a_time(async_ctx.client._client, sync_ctx.client._client)
    FlowIds(async_ctx.client._client).install()
    await async_ctx.client.raise_for_api_version_mismatch_once()
    return async_ctx, sync_ctx


def _one_csrf_fetch_at_a_time(http: Any, sync_http: Any) -> None:
    """A shared client serves concurrent turns; Prefect fetches its CSRF token lazily, and
    each fetch replaces the server's token for the client's id, so two turns fetching at
    once leave one holding a dead token (403 "Invalid CSRF token"). One fetch at a time: the
    turns that waited find the fresh token and reuse it."""
    fetch, sync_fetch = http._add_csrf_headers, sync_http._add_csrf_headers
    lock, sync_lock = asyncio.Lock(), threading.Lock()

    async def add(request: Any) -> None:
        async with lock:
            await fetch(request)

    def sync_add(request: Any) -> None:
        with sync_lock:
            sync_fetch(request)

    http._add_csrf_headers, sync_http._add_csrf_headers = add, sync_add


async def _clients() -> Clients:
    global _open
    loop, api = asyncio.get_running_loop(), get_current_settings().api
    where = (loop, api.url, api.auth_string, api.key)  # a loop equals only itself
    if _open is None or _open[0] != where:
        _open = (where, loop.create_task(_start()))
    opening = _open[1]
    try:
        return await asyncio.shield(opening)
    except Exception:
        if _open is not None and _open[1] is opening:
            _open = None  # the next turn tries again
        raise


@asynccontextmanager
async def shared_clients() -> AsyncIterator[None]:
    """Run the block with the process's Prefect clients in Prefect's client contexts."""
    async_ctx, sync_ctx = await _clients()
    async_token = AsyncClientContext.__var__.set(async_ctx)
    sync_token = SyncClientContext.__var__.set(sync_ctx)
    try:
        yield
    finally:
        SyncClientContext.__var__.reset(sync_token)
        AsyncClientContext.__var__.reset(async_token)
