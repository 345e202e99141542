"""The gateway served on loopback and on an overlay address (`tests.support.overlay`), and
clients that speak from a device's address."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx

from metnos.faces.gateway.app import create_app
from metnos.faces.gateway.exposed import listening_sockets
from metnos.faces.gateway.state import state_of
from tests.support.home import Home, served_app


@dataclass(frozen=True)
class Served:
    home: Home
    server: str  # the overlay address
    port: int

    @property
    def overlay(self) -> str:
        return f"http://{self.server}:{self.port}"

    @property
    def loopback(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def device(self, address: str) -> httpx.Client:
        """A browser-like client on the device at `address` (its requests come from there,
        and say they come from the gateway's own page)."""
        return httpx.Client(base_url=self.overlay, timeout=30,
                            transport=httpx.HTTPTransport(local_address=address),
                            headers={"Origin": self.overlay, "Accept-Language": "en"})

    def owner(self) -> httpx.Client:
        """The owner's CLI on the server itself: loopback, the bearer token."""
        return httpx.Client(base_url=self.loopback, timeout=60,
                            headers={**self.home.auth(), "Accept-Language": "en"})

    def audit(self) -> list[dict[str, Any]]:
        path = self.home.workspace / ".audit" / "audit.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()]


@contextmanager
def served(home: Home, server: str) -> Iterator[Served]:
    """The gateway of `home` (whose `[gateway] expose` is `server`) under uvicorn, in a
    thread, on its two sockets."""
    app = create_app(home.settings)
    found = state_of(app).exposed
    assert found is not None and found.address == server
    sockets = listening_sockets(home.settings, found)
    try:
        with served_app(app, home.settings.gateway.port, sockets):
            yield Served(home, server, home.settings.gateway.port)
    finally:
        for sock in sockets:
            sock.close()


def admit(served: Served, device: httpx.Client, label: str,
          person: str | None = None) -> dict[str, Any]:
    """The whole ceremony: the device asks, the owner approves its code (as `person`)."""
    asked = device.post("/device/ask", json={"label": label})
    assert asked.status_code == 200, asked.text
    assert device.get("/device/state").json() == {"state": "waiting"}
    body = {"code": asked.json()["code"], **({"person": person} if person else {})}
    with served.owner() as owner:
        approved = owner.post("/api/pairing/approve", json=body)
    assert approved.status_code == 200, approved.text
    assert device.get("/device/state").json() == {"state": "admitted"}
    result: dict[str, Any] = approved.json()
    return result
