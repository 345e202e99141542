"""`egress = "account"`: a run whose network reaches its account's server and nothing else.

The real bwrap, the real host forwarder (metnos.mechanisms.sandbox.egress). The probe is the
attacker: it tries a loopback service that is not its server (the gateway, say), its own server
directly, and DNS; only the host's socket answers, and only with the account's server behind it."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from pydantic import ValidationError

from metnos.mechanisms.sandbox import SandboxProfile
from metnos.mechanisms.sandbox.bwrap import EGRESS_SOCKET
from tests.sandbox._helpers import Runner

EGRESS = SandboxProfile(network=True, egress="account", timeout_s=20)

PROBE = """
import socket

def tcp(port):
    s = socket.socket()
    s.settimeout(2)
    try:
        s.connect(("127.0.0.1", port))
        return "connected"
    except OSError as exc:
        return type(exc).__name__
    finally:
        s.close()

def dns():
    try:
        socket.getaddrinfo("example.org", 443)
        return "resolved"
    except OSError as exc:
        return type(exc).__name__

def through(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(path)
    greeting = s.recv(100).decode()
    s.sendall(b"PING\\r\\n")
    echoed = s.recv(100).decode()
    s.close()
    return greeting + echoed

reply(other=tcp(args["other"]), server=tcp(args["server"]), dns=dns(),
      through=through(args["egress"]))
"""


@asynccontextmanager
async def listener(greeting: bytes) -> AsyncIterator[tuple[int, list[str]]]:
    """A loopback TCP server that greets, echoes one line, and notes each client."""
    seen: list[str] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(str(writer.get_extra_info("peername")))
        writer.write(greeting)
        await writer.drain()
        line = await reader.readline()
        writer.write(b"ECHO " + line)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield port, seen
    finally:
        server.close()
        await server.wait_closed()


@pytest.mark.attack
async def test_only_the_accounts_server_is_reached(run: Runner) -> None:
    async with listener(b"* OK imap\r\n") as (server, at_server), \
            listener(b"gateway\r\n") as (other, at_other):
        account = {"host": "127.0.0.1", "port": server, "security": "plain",
                   "username": "u", "password": "p"}
        result = await run(PROBE, EGRESS, args={"other": other, "server": server,
                                                 "egress": EGRESS_SOCKET}, account=account)
        assert result.ok, (result.error_key, result.stderr_tail)
        assert result.result is not None
        assert result.result["other"] != "connected" and at_other == []
        assert result.result["server"] != "connected"  # not even its own server, directly
        assert result.result["dns"] != "resolved"
        assert result.result["through"] == "* OK imap\r\nECHO PING\r\n"
        assert len(at_server) == 1  # the one connection, made by the host's forwarder
        control = await run(PROBE.replace('through=through(args["egress"])', "through=''"),
                            SandboxProfile(network=True), args={"other": other,
                                                                "server": server})
        assert control.result is not None and control.result["other"] == "connected"


async def test_egress_without_an_account_has_no_way_out(run: Runner) -> None:
    body = """
    import socket
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(args["egress"])
        reply(way_out=True)
    except OSError as exc:
        reply(way_out=False, err=type(exc).__name__)
    """
    result = await run(body, EGRESS, args={"egress": EGRESS_SOCKET})
    assert result.result == {"way_out": False, "err": "FileNotFoundError"}, result


async def test_a_server_that_does_not_answer_closes_the_executors_connection(
        run: Runner) -> None:
    closed = socket.create_server(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there now
    body = """
    import socket
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(args["egress"])
    reply(read=s.recv(100).decode())
    """
    account = {"host": "127.0.0.1", "port": port}
    result = await run(body, EGRESS, args={"egress": EGRESS_SOCKET}, account=account)
    assert result.ok and result.result == {"read": ""}, (result.error_key, result.stderr_tail)


def test_egress_narrows_a_network_it_must_have() -> None:
    with pytest.raises(ValidationError):
        SandboxProfile(network=False, egress="account")
