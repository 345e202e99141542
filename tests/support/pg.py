"""pytest plugin: a real PostgreSQL for the tests (register with
`pytest_plugins = ["tests.support.pg"]` in tests/conftest.py).

Fixtures:
- `pg_server` (session): a running `TestPostgres`. `.url(name, driver=...)` creates the database
  on first use; `.fresh_database()` makes a `test_<hex>` one (`tables=True`: with Metnos's
  tables, a copy of the process's template database); `.drop_database(name)`.
- `db_engine` (module): an Engine on a throwaway database with Metnos's tables, dropped after the
  module.
- `db_session` (function): a Session on `db_engine` inside a transaction that is rolled back at
  the end of the test (the helpers' commits become savepoints), so tests do not see each other.

Which cluster: when the three variables below are set (`python -m tests.support.services`, used
by `make test`, `.ci/run` and `make bench`, exports them after starting PostgreSQL for the
Prefect server), that cluster is reused and left running. Otherwise one throwaway cluster is
initialised in a temp dir on a free port for the test session, and stopped and deleted at
the end.

    METNOS_TEST_PG_DATA           data directory of the running cluster
    METNOS_TEST_PG_PORT           its port on 127.0.0.1
    METNOS_TEST_PG_PASSWORD_FILE  file holding the password of the `metnos` superuser
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import socket
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from sqlalchemy import Engine
from sqlmodel import Session

from metnos.faces.registry import create_tables
from metnos.ground.db.embedded import Driver, EmbeddedPostgres
from metnos.ground.db.engine import make_engine
from metnos.ground.errors import DatabaseError

ENV_DATA, ENV_PORT, ENV_PASSWORD = (
    "METNOS_TEST_PG_DATA", "METNOS_TEST_PG_PORT", "METNOS_TEST_PG_PASSWORD_FILE")


class TestPostgres:
    """A running cluster as the tests see it."""

    __test__ = False  # not a test class

    def __init__(self, pg: EmbeddedPostgres) -> None:
        self.pg = pg
        self.template: str | None = None

    def url(self, name: str, driver: Driver = "psycopg") -> str:
        self.pg.ensure_database(name)
        return self.pg.url(name, driver=driver)

    def fresh_database(self, *, tables: bool = False) -> str:
        """A new empty database; with `tables`, a copy of one that holds Metnos's tables
        (`CREATE DATABASE ... TEMPLATE`: a file copy, where creating them takes ~100
        statements), made once per test process."""
        name = f"test_{uuid.uuid4().hex[:12]}"
        if not tables:
            self.pg.ensure_database(name)
            return name
        template = self._template()
        with psycopg.connect(self.pg.conninfo("postgres"), autocommit=True,
                             connect_timeout=10) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                sql.Identifier(name), sql.Identifier(template)))
        return name

    def _template(self) -> str:
        if self.template is None:
            name = f"template_{uuid.uuid4().hex[:12]}"
            self.pg.ensure_database(name)
            engine = make_engine(self.pg.url(name))
            try:
                create_tables(engine)
            finally:
                engine.dispose()  # a template must have no connection when it is copied
            self.template = name
        return self.template

    def drop_database(self, name: str) -> None:
        self.pg.drop_database(name)


# Under pytest-xdist each worker hands out ports from a block of its own, below the kernel's
# ephemeral range (32768-60999): a port one worker was given and has not bound yet cannot
# be given to another. Outside xdist the kernel picks one.
PORT_BLOCK, FIRST_PORT = 1500, 20000
_handed_out = itertools.count(os.getpid() % PORT_BLOCK)  # a child pytest starts elsewhere


def free_port() -> int:
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        return _bind(0)
    start = FIRST_PORT + int(worker.removeprefix("gw")) * PORT_BLOCK
    for _ in range(PORT_BLOCK):
        port = start + next(_handed_out) % PORT_BLOCK
        with contextlib.suppress(OSError):
            return _bind(port)
    raise OSError(f"no free port left in {worker}'s block from {start}")


def _bind(port: int) -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
        return int(sock.getsockname()[1])


def _from_environment() -> EmbeddedPostgres | None:
    if not all(os.environ.get(name) for name in (ENV_DATA, ENV_PORT, ENV_PASSWORD)):
        return None
    return EmbeddedPostgres(Path(os.environ[ENV_DATA]), int(os.environ[ENV_PORT]),
                            Path(os.environ[ENV_PASSWORD]))


def _start_throwaway(root: Path) -> EmbeddedPostgres:
    pg = EmbeddedPostgres(root / "data", free_port(), root / "pg.password", durable=False)
    pg.initialise()
    try:
        pg.start()
    except DatabaseError as exc:  # the free port was taken in between: once more
        if exc.key != "ERR_DATABASE_PORT_IN_USE":
            raise
        pg.port = free_port()
        pg.start()
    return pg


@pytest.fixture(scope="session")
def pg_server() -> Iterator[TestPostgres]:
    shared = _from_environment()
    if shared is not None:
        if not shared.is_running():
            pytest.fail(f"{ENV_DATA}={shared.data_dir} is set but no PostgreSQL runs there")
        yield TestPostgres(shared)
        return
    root = Path(tempfile.mkdtemp(prefix="metnos-test-pg-"))
    try:
        pg = _start_throwaway(root)
        try:
            yield TestPostgres(pg)
        finally:
            pg.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def db_engine(pg_server: TestPostgres) -> Iterator[Engine]:
    name = pg_server.fresh_database(tables=True)
    engine = make_engine(pg_server.url(name))
    try:
        yield engine
    finally:
        engine.dispose()
        pg_server.drop_database(name)


@pytest.fixture
def db_session(db_engine: Engine) -> Iterator[Session]:
    with db_engine.connect() as conn:
        outer = conn.begin()
        with Session(bind=conn, join_transaction_mode="create_savepoint",
                     expire_on_commit=False) as db:
            yield db
        outer.rollback()
