"""The embedded PostgreSQL lifecycle, on one real cluster for the module (its own: these tests
stop and kill it, so they never touch the shared `pg_server`)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.ext.asyncio import create_async_engine

from metnos.ground import i18n
from metnos.ground.db import _system
from metnos.ground.db.embedded import SUPERUSER, EmbeddedPostgres
from metnos.ground.errors import DatabaseError
from tests.support.pg import free_port


def _our_temp_dirs() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob("metnos-pg-*")}


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedPostgres]:
    root = Path(tempfile.mkdtemp(prefix="metnos-test-embedded-"))
    # durable, as in production: the SIGKILL test relies on committed data surviving
    pg = EmbeddedPostgres(root / "data", free_port(), root / "secrets" / "pg.password")
    before = _our_temp_dirs()
    assert pg.initialise() is True
    assert _our_temp_dirs() <= before, "the temporary password copy must be deleted"
    print(f"\ninitdb {pg.last_initdb_s:.2f}s", file=sys.stderr)
    try:
        yield pg
    finally:
        pg.stop()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def pg(cluster: EmbeddedPostgres) -> EmbeddedPostgres:
    """The module's cluster, running (a test before may have stopped or killed it)."""
    cluster.start()
    return cluster


def _select_one(pg: EmbeddedPostgres, database: str = "postgres") -> int:
    with psycopg.connect(pg.conninfo(database)) as conn:
        row = conn.execute("SELECT 1").fetchone()
    assert row is not None
    return int(row[0])


def _postmaster_pid(pg: EmbeddedPostgres) -> int:
    return int((pg.data_dir / "postmaster.pid").read_text().split()[0])


def test_initialise_twice_is_a_no_op(pg: EmbeddedPostgres) -> None:
    password = pg.password_file.read_text()
    version = (pg.data_dir / "PG_VERSION").stat().st_mtime_ns
    assert pg.initialise() is False
    assert pg.password_file.read_text() == password
    assert (pg.data_dir / "PG_VERSION").stat().st_mtime_ns == version


def test_password_file_is_private(pg: EmbeddedPostgres) -> None:
    assert stat.S_IMODE(pg.password_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(pg.password_file.parent.stat().st_mode) == 0o700
    assert pg.password_file.stat().st_uid == os.geteuid()
    assert len(pg.password_file.read_text().strip()) >= 32
    user = _system.owner()
    if user is not None:  # as root the cluster is another user's, the password is not
        assert pg.data_dir.stat().st_uid == user.pw_uid
        as_pg_user = subprocess.run(["cat", str(pg.password_file)], user=user.pw_uid,
                                    group=user.pw_gid, extra_groups=[], capture_output=True,
                                    check=False)
        assert as_pg_user.returncode != 0 and not as_pg_user.stdout


def test_listens_on_loopback_only_and_requires_the_password(pg: EmbeddedPostgres) -> None:
    with psycopg.connect(pg.conninfo("postgres")) as conn:
        settings = dict(conn.execute(
            "SELECT name, setting FROM pg_settings WHERE name IN "
            "('listen_addresses', 'unix_socket_directories', 'port', 'server_encoding')"
        ).fetchall())
    assert settings == {"listen_addresses": "127.0.0.1", "unix_socket_directories": "",
                        "port": str(pg.port), "server_encoding": "UTF8"}
    assert not list(pg.data_dir.glob(".s.PGSQL.*"))
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(f"postgresql://{SUPERUSER}:wrong@127.0.0.1:{pg.port}/postgres")


def test_start_is_a_no_op_when_running_and_stop_start_works(pg: EmbeddedPostgres) -> None:
    pid = _postmaster_pid(pg)
    pg.start()
    assert _postmaster_pid(pg) == pid
    pg.stop()
    assert not pg.is_running()
    with pytest.raises(psycopg.OperationalError):
        _select_one(pg)
    pg.stop()  # stopping a stopped cluster is fine
    pg.start()
    assert pg.is_running()
    assert pg.last_start_s is not None and pg.last_start_s > 0  # target: bench/hot_paths.py
    print(f"\nstart {pg.last_start_s:.2f}s", file=sys.stderr)
    assert _select_one(pg) == 1


def test_ensure_database_is_idempotent(pg: EmbeddedPostgres) -> None:
    name = "Metnos-test db"  # needs quoting
    assert pg.ensure_database(name) is True
    assert pg.ensure_database(name) is False
    assert _select_one(pg, name) == 1
    pg.drop_database(name)
    pg.drop_database(name)
    assert pg.ensure_database(name) is True
    pg.drop_database(name)


async def test_urls_work_with_both_drivers_and_any_password(pg: EmbeddedPostgres) -> None:
    original = pg.password_file.read_text()
    odd = "p@ss:w/rd%?#&= é"
    with psycopg.connect(pg.conninfo("postgres"), autocommit=True) as conn:
        conn.execute(psycopg.sql.SQL("ALTER ROLE metnos PASSWORD {}").format(odd))
    pg.password_file.write_text(odd + "\n")
    try:
        pg.ensure_database("urls")
        assert pg.url("urls", driver="asyncpg").startswith("postgresql+asyncpg://metnos:p%40ss")
        engine = create_engine(pg.url("urls"))
        with engine.connect() as conn:
            assert conn.execute(text("SELECT current_database()")).scalar() == "urls"
        engine.dispose()
        aengine = create_async_engine(pg.url("urls", driver="asyncpg"))
        async with aengine.connect() as aconn:
            assert (await aconn.execute(text("SELECT 1"))).scalar() == 1
        await aengine.dispose()
    finally:
        with psycopg.connect(pg.conninfo("postgres"), autocommit=True) as conn:
            conn.execute(psycopg.sql.SQL("ALTER ROLE metnos PASSWORD {}").format(original.strip()))
        pg.password_file.write_text(original)
    with pytest.raises(ValueError):
        pg.url("urls", driver="psycopg2")  # type: ignore[arg-type]


def test_restarts_after_sigkill(pg: EmbeddedPostgres) -> None:
    os.kill(_postmaster_pid(pg), signal.SIGKILL)
    deadline = time.monotonic() + 5
    while pg.is_running() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not pg.is_running()
    assert (pg.data_dir / "postmaster.pid").exists()  # stale
    pg.start()
    assert _select_one(pg) == 1


def test_stale_pid_naming_another_live_process(pg: EmbeddedPostgres) -> None:
    pg.stop()
    pid_file = pg.data_dir / "postmaster.pid"
    pid_file.write_text(f"{os.getpid()}\n{pg.data_dir}\n")  # a reused pid: ours, not postgres
    assert not pg.is_running()
    pg.start()
    assert _postmaster_pid(pg) != os.getpid()
    assert _select_one(pg) == 1


def test_running_on_another_port_is_not_silently_reused(pg: EmbeddedPostgres) -> None:
    elsewhere = EmbeddedPostgres(pg.data_dir, pg.port + 1, pg.password_file)
    assert elsewhere.is_running()
    with pytest.raises(DatabaseError) as info:
        elsewhere.start()
    assert info.value.key == "ERR_DATABASE_RUNNING_ON_OTHER_PORT"
    assert info.value.vars["port"] == pg.port


def test_port_taken_by_another_program(pg: EmbeddedPostgres) -> None:
    pg.stop()
    with socket.socket() as squatter:
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past TIME_WAIT
        squatter.bind(("127.0.0.1", pg.port))
        squatter.listen()
        with pytest.raises(DatabaseError) as info:
            pg.start()
    assert info.value.key == "ERR_DATABASE_PORT_IN_USE"
    assert str(pg.port) in i18n.message(info.value, "en")
    assert str(pg.port) in i18n.message(info.value, "it")


def test_failed_start_shows_the_log_tail(pg: EmbeddedPostgres) -> None:
    pg.stop()
    conf = pg.data_dir / "postgresql.conf"
    original = conf.read_bytes()
    with conf.open("a") as fh:
        fh.write("shared_buffers = 'plenty'\n")
    try:
        with pytest.raises(DatabaseError) as info:
            pg.start(timeout_s=10)
    finally:
        conf.write_bytes(original)
    assert info.value.key == "ERR_DATABASE_START_FAILED"
    assert "shared_buffers" in info.value.vars["log_tail"]
    assert "shared_buffers" in i18n.message(info.value, "en")


def test_start_before_initialise_is_a_clear_error(tmp_path: Path) -> None:
    pg = EmbeddedPostgres(tmp_path / "nothing", free_port(), tmp_path / "pw")
    with pytest.raises(DatabaseError) as info:
        pg.start()
    assert info.value.key == "ERR_DATABASE_NOT_INITIALISED"
    with pytest.raises(DatabaseError) as missing:
        pg.url("x")
    assert missing.value.key == "ERR_DATABASE_PASSWORD_MISSING"


def test_command_line(pg: EmbeddedPostgres) -> None:
    base = [sys.executable, "-m", "metnos.ground.db.embedded"]
    where = ["--data-dir", str(pg.data_dir), "--port", str(pg.port),
             "--password-file", str(pg.password_file)]

    def cli(*args: str) -> str:
        done = subprocess.run([*base, *args, *where], capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    cli("stop")
    assert not pg.is_running()
    cli("start", "--database", "cli_a", "--database", "cli_b")
    assert pg.is_running()
    assert _select_one(pg, "cli_b") == 1
    assert cli("url", "--database", "cli_a", "--driver", "asyncpg") == pg.url("cli_a", "asyncpg")
    assert cli("url", "--database", "cli_a") == pg.url("cli_a")
