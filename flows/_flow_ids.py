"""The flows' ids, remembered by a process's shared Prefect client (`flows/_clients.py`).

Prefect's client asks the server for the flow's id (`POST /flows/`, an upsert by name) before
every flow run it creates: one request of three on the way to the run's start, which is the
turn's critical path. `FlowIds` answers it from memory after the first time; if the flow was
deleted since (from the Prefect UI), the server refuses the run with a 409, and the run is
asked again once with the id the server gives the name now.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

Send = Callable[..., Awaitable[httpx.Response]]


class FlowIds:
    """The ids the server gave flow names (`POST /flows/` answered from memory after the
    first), for one Prefect httpx client. A run refused with a 409 that named a remembered id
    is sent again once with the id the server gives the name now."""

    def __init__(self, http: Any) -> None:
        self.http = http
        self.send: Send = http.send
        self.by_name: dict[str, dict[str, Any]] = {}  # name -> the server's answer (a Flow)

    def install(self) -> None:
        self.http.send = self._send

    async def _send(self, request: httpx.Request, *args: Any, **kwargs: Any) -> httpx.Response:
        if request.method == "POST" and request.url.path.endswith("/flows/"):
            return await self._flow(request, *args, **kwargs)
        if request.method == "POST" and request.url.path.endswith("/flow_runs/"):
            return await self._flow_run(request, *args, **kwargs)
        return await self.send(request, *args, **kwargs)

    async def _flow(self, request: httpx.Request, *args: Any, **kwargs: Any) -> httpx.Response:
        name = json.loads(request.content).get("name")
        known = self.by_name.get(name) if isinstance(name, str) else None
        if known is not None:
            return httpx.Response(200, json=known, request=request)
        response = await self.send(request, *args, **kwargs)
        if isinstance(name, str) and response.is_success:
            self.by_name[name] = response.json()
        return response

    async def _flow_run(self, request: httpx.Request, *args: Any,
                        **kwargs: Any) -> httpx.Response:
        try:
            return await self.send(request, *args, **kwargs)
        except httpx.HTTPStatusError as exc:  # Prefect's client raises on an error status
            body = json.loads(request.content)
            stale = [n for n, f in self.by_name.items() if f.get("id") == body.get("flow_id")]
            if exc.response.status_code != httpx.codes.CONFLICT or not stale:
                raise
        del self.by_name[stale[0]]
        flow = await self._flow(self._like(request, "flows/", {"name": stale[0]}),
                                *args, **kwargs)
        again = self._like(request, "flow_runs/", {**body, "flow_id": flow.json()["id"]})
        return await self.send(again, *args, **kwargs)

    def _like(self, request: httpx.Request, path: str, body: dict[str, Any]) -> httpx.Request:
        """A POST like `request` (its headers but the length) to `path` beside it."""
        headers = {k: v for k, v in request.headers.items() if k.lower() != "content-length"}
        url = request.url.copy_with(path=request.url.path.rsplit("/", 2)[0] + "/" + path)
        built: httpx.Request = self.http.build_request("POST", url, json=body, headers=headers)
        return built
