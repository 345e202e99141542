"""A misbehaving HTTP server on loopback: real sockets, one connection, an answer the test
writes byte by byte (cut short, not HTTP, never sent)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def one_answer(answer: Callable[[socket.socket], None]) -> Iterator[str]:
    """A one-connection server on loopback that reads the request, then does `answer`;
    yields its base URL."""
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def serve() -> None:
        try:
            conn, _ = server.accept()
        except OSError:
            return
        with conn:
            conn.recv(65536)
            answer(conn)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.close()
        thread.join(timeout=5)
