"""The overlay's stand-in for the device tests: an interface with the server's and two
devices' addresses (`tests.support.overlay.addresses`), which the network guard counts as
this machine's own while it lasts."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.llm_guard import NetworkGuard
from tests.support.overlay import Addresses, addresses


@pytest.fixture
def overlay(network_guard: NetworkGuard) -> Iterator[Addresses]:
    with addresses() as found:
        network_guard.local |= {found.server, *found.devices}  # this machine's own
        try:
            yield found
        finally:
            network_guard.local -= {found.server, *found.devices}
