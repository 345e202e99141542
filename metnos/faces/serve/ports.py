"""Who holds a port: this instance, a foreign process (named by pid and command), or nobody.

`metnos serve` refuses to start a service whose port is taken (its health check would be
answered by whatever listens there) and names the holder; `metnos doctor` shows the same.
The holder is found from the kernel's socket table (psutil); a socket of another user that
the table does not show to us is reported with its pid unknown.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass

import psutil

from metnos.ground.settings import Settings


@dataclass(frozen=True)
class Holder:
    """The process listening on a port; `pid` None when the system does not tell us."""

    pid: int | None
    command: str  # its command line (or name), one line, for a person to recognise it

    def label(self) -> str:
        return f"pid {self.pid}: {self.command}" if self.pid is not None else self.command


def listening(port: int, host: str = "127.0.0.1") -> bool:
    """True when something accepts connections on host:port."""
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex((host, port)) == 0


def holder(port: int, host: str = "127.0.0.1") -> Holder | None:
    """The process listening on `port` (on `host`, a wildcard address or any loopback), or
    None when nothing listens there."""
    try:
        conns = psutil.net_connections(kind="inet")
    except (psutil.AccessDenied, OSError):
        conns = []
    for conn in conns:
        if conn.status != psutil.CONN_LISTEN or not conn.laddr or conn.laddr.port != port:
            continue
        if conn.laddr.ip not in (host, "0.0.0.0", "::", "127.0.0.1", "::1"):  # noqa: S104
            continue
        return _named(conn.pid)
    if listening(port, host):  # listening, yet not in the table we may read
        return Holder(None, "?")
    return None


def _named(pid: int | None) -> Holder:
    if pid is None:
        return Holder(None, "?")
    try:
        proc = psutil.Process(pid)
        argv = proc.cmdline() or [proc.name()]
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return Holder(pid, "?")
    command = " ".join(argv).replace("\n", " ")
    return Holder(pid, command if len(command) <= 160 else command[:159] + "…")


def instance_ports(settings: Settings, *, embedded_db: bool, own_prefect: bool
                   ) -> dict[str, int]:
    """The loopback ports this instance's services listen on, by service name."""
    ports = {"gateway": settings.gateway.port}
    if own_prefect:
        ports["prefect-server"] = settings.prefect.port
    if embedded_db:
        ports["postgres"] = settings.database.port
    return ports
