"""Pytest plugin: no test may reach a real model provider (or any non-loopback host).

The idea of pydantic-ai's `ALLOW_MODEL_REQUESTS = False`, at the socket level so it covers
litellm, httpx, the openai SDK and anything else: while tests run, `socket.connect` to a
non-loopback address and name resolution of a non-local host fail at once with
`RealNetworkBlocked`. A name under `.invalid` (RFC 6761: it never resolves) gets the
resolver's "Name or service not known" (`socket.gaierror`) without a query, so a test can
point Metnos at an address that cannot be found. Loopback (the scripted LLM, Prefect, the
embedded PostgreSQL) and Unix sockets are untouched. A blocked attempt also fails the test at
teardown, even when the code under test caught the error (an LLMError turned into a polite
reply must not hide it).

Register with `pytest_plugins = ["tests.llm_guard"]` in `tests/conftest.py`. A test that
deliberately provokes the guard asks for the `network_guard` fixture and calls `.clear()`;
`@pytest.mark.allow_network` switches the guard off for one test (never in CI).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from typing import Any

import pytest

_LOCAL_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"}


class RealNetworkBlocked(ConnectionRefusedError):
    """Raised instead of reaching a non-loopback address during tests."""


class NetworkGuard:
    """Patches `socket.socket.connect/connect_ex` and `socket.getaddrinfo` while installed."""

    def __init__(self) -> None:
        self.violations: list[str] = []
        self.enabled = True
        # addresses a test put on this machine's own interfaces (an overlay stand-in): local
        self.local: set[str] = set()
        self._saved: dict[str, Any] = {}

    def install(self) -> None:
        if self._saved:
            return
        self._saved = {
            "connect": socket.socket.connect,
            "connect_ex": socket.socket.connect_ex,
            "getaddrinfo": socket.getaddrinfo,
        }
        real_connect, real_connect_ex = self._saved["connect"], self._saved["connect_ex"]
        real_getaddrinfo = self._saved["getaddrinfo"]
        guard = self

        def connect(sock: socket.socket, address: Any) -> None:
            guard.check_address(sock.family, address)
            return real_connect(sock, address)

        def connect_ex(sock: socket.socket, address: Any) -> int:
            guard.check_address(sock.family, address)
            return int(real_connect_ex(sock, address))

        def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
            guard.check_host(host)
            return real_getaddrinfo(host, *args, **kwargs)

        socket.socket.connect = connect  # type: ignore[method-assign]
        socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]
        socket.getaddrinfo = getaddrinfo

    def uninstall(self) -> None:
        if not self._saved:
            return
        socket.socket.connect = self._saved["connect"]  # type: ignore[method-assign]
        socket.socket.connect_ex = self._saved["connect_ex"]  # type: ignore[method-assign]
        socket.getaddrinfo = self._saved["getaddrinfo"]
        self._saved = {}

    def clear(self) -> list[str]:
        """Forget recorded violations (a test that provoked the guard on purpose)."""
        seen, self.violations = self.violations, []
        return seen

    def check_address(self, family: int, address: Any) -> None:
        if not self.enabled or family not in (socket.AF_INET, socket.AF_INET6):
            return
        host = address[0] if isinstance(address, tuple) else address
        if not _is_loopback_ip(host) and str(host) not in self.local:
            self._block(f"connect to {address!r}")

    def check_host(self, host: Any) -> None:
        if not self.enabled or host is None:
            return
        name = host.decode() if isinstance(host, bytes) else str(host)
        if _is_local_name(name):
            return
        if name.lower().rstrip(".").endswith(".invalid"):  # RFC 6761: never resolves; the
            # resolver's answer, given here without asking one (a misconfigured address)
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        try:
            ipaddress.ip_address(name.split("%")[0])
        except ValueError:
            self._block(f"name resolution of {name!r}")
        # an IP literal resolves without the network; `connect` decides about it

    def _block(self, what: str) -> None:
        message = (
            f"llm_guard: tests must not reach the network ({what}). Point the LLM at "
            "metnos.testing.ScriptedLLM on loopback (model 'openai/scripted', api_base "
            "<server.api_base>); use @pytest.mark.allow_network only for a manual live test."
        )
        self.violations.append(message)
        raise RealNetworkBlocked(message)


def _is_loopback_ip(host: Any) -> bool:
    name = host.decode() if isinstance(host, bytes) else str(host)
    if name in _LOCAL_NAMES:
        return True
    try:
        ip = ipaddress.ip_address(name.split("%")[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def _is_local_name(name: str) -> bool:
    lowered = name.lower().rstrip(".")
    if lowered in _LOCAL_NAMES or lowered.endswith(".localhost") or lowered == "":
        return True
    if _is_loopback_ip(lowered):
        return True
    return lowered in {socket.gethostname().lower()}


_GUARD = NetworkGuard()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "allow_network: switch the llm_guard off for this test (manual live tests)"
    )
    _GUARD.install()


def pytest_unconfigure(config: pytest.Config) -> None:
    _GUARD.uninstall()


@pytest.fixture
def network_guard() -> NetworkGuard:
    """The installed guard (to assert on, or `.clear()` after provoking it on purpose)."""
    return _GUARD


@pytest.fixture(autouse=True)
def _llm_guard(request: pytest.FixtureRequest) -> Iterator[None]:
    allow = request.node.get_closest_marker("allow_network") is not None
    _GUARD.enabled = not allow
    _GUARD.clear()  # attempts made before this test (e.g. in session fixtures) were raised there
    try:
        yield
    finally:
        _GUARD.enabled = True
        blocked = _GUARD.clear()
        if blocked and not allow:
            pytest.fail(blocked[0], pytrace=False)
