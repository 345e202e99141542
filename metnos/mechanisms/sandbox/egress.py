"""A sandbox whose network reaches one server only (`[sandbox] egress = "account"`).

Such a run has no network of its own: bwrap gives it an empty network namespace, as for an
executor without network. The host listens on a Unix socket in a private temporary folder,
bound read-only into the sandbox at `bwrap.EGRESS_SOCKET`, and forwards every connection made
there to the one address it was given (the account's IMAP server, from the host's settings,
never from an argument). TLS still runs end to end inside the sandbox (the executor checks
the server's certificate and name); the host only copies bytes. Whatever the executor's code
does, it cannot reach another host, a loopback service (the gateway, the database) or a DNS
server: the notes' "network through a host proxy over a Unix socket" (notes/security.md §1).

The forwarder lives exactly as long as the run (`forward` is an async context manager), takes
at most `max_connections` at a time, and gives each connection `connect_timeout_s` to reach
the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

log = logging.getLogger(__name__)

MAX_CONNECTIONS = 4
_CHUNK = 65536


@contextlib.asynccontextmanager
async def forward(host: str, port: int, *, connect_timeout_s: float = 20.0,
                  max_connections: int = MAX_CONNECTIONS) -> AsyncIterator[Path]:
    """A Unix socket whose connections reach `host:port`; removed on exit."""
    folder = Path(tempfile.mkdtemp(prefix="metnos-egress-"))  # 0700: nobody else's way in
    path = folder / "egress.sock"
    slots = asyncio.Semaphore(max_connections)
    links: set[asyncio.Task[None]] = set()

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        links.add(task)
        try:
            if slots.locked():  # more connections than a run needs: refused
                return
            async with slots:
                await _link(reader, writer, host, port, connect_timeout_s)
        finally:
            links.discard(task)
            writer.close()
            with contextlib.suppress(OSError, ConnectionError):
                await writer.wait_closed()

    server = await asyncio.start_unix_server(accept, path=str(path))
    try:
        os.chmod(path, 0o666)  # the sandbox's user is unmapped: "others" must connect
        yield path
    finally:
        server.close()
        for task in list(links):
            task.cancel()
        await asyncio.gather(*links, return_exceptions=True)
        await server.wait_closed()
        shutil.rmtree(folder, ignore_errors=True)


async def _link(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str,
                port: int, timeout_s: float) -> None:
    try:
        up_reader, up_writer = await asyncio.wait_for(
            asyncio.open_connection(host, port), timeout_s)
    except (OSError, TimeoutError) as exc:  # the executor sees its connection close
        log.info("egress.unreachable port=%s: %s", port, type(exc).__name__)
        return
    try:
        await asyncio.gather(_copy(reader, up_writer), _copy(up_reader, writer))
    finally:
        up_writer.close()
        with contextlib.suppress(OSError, ConnectionError):
            await up_writer.wait_closed()


async def _copy(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    """Bytes from `source` to `sink` until end of file, then half-close `sink`."""
    try:
        while chunk := await source.read(_CHUNK):
            sink.write(chunk)
            await sink.drain()
        if sink.can_write_eof():
            sink.write_eof()
    except (OSError, ConnectionError):
        sink.close()
