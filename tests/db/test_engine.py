"""URLs from the settings, the engine, table creation and the session's commit/rollback."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import Engine, inspect, select
from sqlmodel import Session

from metnos.faces.registry import create_tables
from metnos.ground.db.engine import (
    PREFECT_URL_ENV,
    database_url,
    embedded_postgres,
    make_engine,
    ping,
    prefect_database_url,
    session,
    uses_embedded,
)
from metnos.ground.db.models import ChatSession
from metnos.ground.errors import DatabaseError
from metnos.ground.settings import DatabaseSettings, Settings
from tests.support.pg import free_port


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    for name in ("METNOS_DATABASE_URL", "METNOS_DATABASE_PORT", PREFECT_URL_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("METNOS_HOME", str(tmp_path))
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    (secrets / "pg.password").write_text("s3cret/+\n")
    return Settings(home=tmp_path, database=DatabaseSettings(port=45999))


def test_embedded_urls_follow_the_settings(settings: Settings) -> None:
    pg = embedded_postgres(settings)
    assert pg.data_dir == settings.pg_dir
    assert database_url(settings) == "postgresql+psycopg://metnos:s3cret%2F%2B@127.0.0.1:45999/metnos"
    assert prefect_database_url(settings) == (
        "postgresql+asyncpg://metnos:s3cret%2F%2B@127.0.0.1:45999/prefect")
    assert uses_embedded(settings)


def test_external_urls_win(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    external = settings.model_copy(update={"database": DatabaseSettings(
        url="postgresql://u:p@db.lan/metnos")})
    assert database_url(external) == "postgresql+psycopg://u:p@db.lan/metnos"
    assert uses_embedded(external)  # Prefect's database is still the embedded one
    monkeypatch.setenv(PREFECT_URL_ENV, "postgresql+asyncpg://u:p@db.lan/prefect")
    assert prefect_database_url(external) == "postgresql+asyncpg://u:p@db.lan/prefect"
    assert not uses_embedded(external)


def test_create_tables_is_idempotent(db_engine: Engine) -> None:
    create_tables(db_engine)
    create_tables(db_engine)
    tables = set(inspect(db_engine).get_table_names())
    assert {"chat_session", "turn", "turn_step", "before_manifest"} <= tables


def test_session_commits_or_rolls_back(db_engine: Engine) -> None:
    with session(db_engine) as db:
        kept = ChatSession(user_id="u-commit", channel="cli", interaction_language="it")
        db.add(kept)
    assert kept.user_id == "u-commit"  # still readable after the block (no expiry)
    with pytest.raises(RuntimeError), session(db_engine) as db:
        db.add(ChatSession(user_id="u-rollback", channel="cli", interaction_language="it"))
        db.flush()
        raise RuntimeError("boom")
    with Session(db_engine) as db:
        users = set(db.scalars(select(ChatSession.user_id)).all())  # type: ignore[call-overload]
    assert "u-commit" in users and "u-rollback" not in users


def test_ping(db_engine: Engine) -> None:
    ping(db_engine)
    dead = make_engine(f"postgresql+psycopg://metnos:x@127.0.0.1:{free_port()}/nothing")
    with pytest.raises(DatabaseError) as info:
        ping(dead)
    assert info.value.key == "ERR_DATABASE_UNAVAILABLE"
