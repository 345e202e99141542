"""Database URLs, the SQLAlchemy engine and sessions.

Metnos's tables live in `settings.database.name` and the Prefect server's in
`settings.database.prefect_name`, both on the embedded PostgreSQL under METNOS_HOME/pg unless
`METNOS_DATABASE_URL` / `PREFECT_SERVER_DATABASE_CONNECTION_URL` point at another server.
Nothing here connects at import time: callers build the engine with `make_engine`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Concatenate, ParamSpec, TypeVar

from sqlalchemy import Engine, create_engine, text
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import Session, SQLModel

from metnos.ground.db import models as _models  # noqa: F401 - registers the core tables
from metnos.ground.db.urls import PREFECT_URL_ENV as PREFECT_URL_ENV
from metnos.ground.db.urls import database_url as database_url
from metnos.ground.db.urls import embedded_postgres as embedded_postgres
from metnos.ground.db.urls import prefect_database_url as prefect_database_url
from metnos.ground.db.urls import uses_embedded as uses_embedded
from metnos.ground.db.urls import with_psycopg
from metnos.ground.errors import DatabaseError

P = ParamSpec("P")
T = TypeVar("T")


def make_engine(url: str) -> Engine:
    """A pooled engine that checks connections before handing them out."""
    return create_engine(with_psycopg(url), pool_pre_ping=True)


def ping(engine: Engine) -> None:
    """`SELECT 1`, or DatabaseError(ERR_DATABASE_UNAVAILABLE) with the reason."""
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except SQLAlchemyError as exc:
        raise DatabaseError("ERR_DATABASE_UNAVAILABLE", detail=str(exc.__cause__ or exc)) from exc


def create_registered_tables(engine: Engine) -> None:
    """Create the missing tables registered in `SQLModel.metadata` so far (existing ones are
    left alone), then bring older tables up to date with the idempotent migrations below.
    `metnos.faces.registry.create_tables` registers every feature's tables first."""
    SQLModel.metadata.create_all(engine)
    _migrate(engine)


# (table, column) that later versions made nullable: legacy sessions keep NULL until pinned
_NOW_NULLABLE = (("chat_session", "interaction_language"),)
# (table, column, SQL type) added by later versions, all nullable
_ADDED = (("chat_session", "title", "VARCHAR"), ("chat_session", "summary", "VARCHAR"),
          ("chat_session", "summary_upto", "INTEGER"),
          ("chat_session", "summary_sources", "JSON"), ("turn", "activity", "JSON"),
          ("turn", "stop_reason", "VARCHAR"), ("turn_step", "think", "INTEGER DEFAULT 0"),
          ("turn_step", "seen", "JSON"), ("turn_step", "call_id", "VARCHAR DEFAULT ''"),
          ("turn_step", "action_id", "VARCHAR"),
          ("turn_step", "started_at", "TIMESTAMP WITH TIME ZONE"),
          ("turn_step", "finished_at", "TIMESTAMP WITH TIME ZONE"),
          ("turn_step", "result", "JSON"), ("pairing_request", "dropped_by", "VARCHAR"),
          ("approval", "approver", "VARCHAR"), ("approval", "sources", "JSON"),
          ("chat_session", "ask_all", "BOOLEAN DEFAULT FALSE"))


def _migrate(engine: Engine) -> None:
    """Idempotent schema changes for databases created by an older Metnos (PostgreSQL only;
    a new database already has the current shape). Each ALTER runs only when still needed."""
    if engine.dialect.name != "postgresql":
        return
    with engine.begin() as conn:
        for table, column in _NOW_NULLABLE:
            nullable = conn.execute(text(
                "SELECT is_nullable FROM information_schema.columns "
                "WHERE table_schema = current_schema() AND table_name = :t AND column_name = :c"),
                {"t": table, "c": column}).scalar()
            if nullable == "NO":
                conn.execute(text(f'ALTER TABLE "{table}" ALTER COLUMN "{column}" DROP NOT NULL'))
        for table, column, kind in _ADDED:
            conn.execute(text(f'ALTER TABLE "{table}" ADD COLUMN IF NOT EXISTS "{column}" {kind}'))


@contextmanager
def session(engine: Engine) -> Iterator[Session]:
    """One unit of work: a session that commits on a clean exit and rolls back on an exception.

    Store functions take the `Session` and never open or commit one; the caller (a use-case, a
    route, a CLI command, a task) opens the unit here and passes it to every store call that
    belongs together. Objects stay readable after the commit (expire_on_commit=False), so a
    caller may use what a store function returned once the block is closed.
    """
    with Session(engine, expire_on_commit=False) as db:
        try:
            yield db
            db.commit()
        except BaseException:
            db.rollback()
            raise


def in_session(engine: Engine, work: Callable[Concatenate[Session, P], T],
               *args: P.args, **kwargs: P.kwargs) -> T:
    """`work(db, *args, **kwargs)` in one unit of work: `session` for a single store call,
    e.g. `await asyncio.to_thread(in_session, engine, outbox.pending)`."""
    with session(engine) as db:
        return work(db, *args, **kwargs)
