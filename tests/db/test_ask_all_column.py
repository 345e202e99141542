"""The session's "ask for everything" (issue 27) on an instance created before it existed."""

from __future__ import annotations

from sqlalchemy import inspect, text
from sqlmodel import Session

from metnos.faces.registry import create_tables
from metnos.ground.db.engine import make_engine
from metnos.ground.db.models import ChatSession, open_session
from tests.support.pg import TestPostgres


def test_an_older_database_gains_ask_all_off(pg_server: TestPostgres) -> None:
    name = pg_server.fresh_database()
    engine = make_engine(pg_server.url(name))
    try:
        create_tables(engine)
        with Session(engine) as db:
            old_id = open_session(db, None, user_id="owner", channel="api", lang="en").chat.id
        with engine.begin() as conn:
            conn.execute(text("ALTER TABLE chat_session DROP COLUMN ask_all"))
        assert "ask_all" not in {c["name"] for c in inspect(engine).get_columns("chat_session")}
        create_tables(engine)  # start-up: the column comes back, off for every old session
        with Session(engine) as db:
            found = db.get(ChatSession, old_id)
            assert found is not None and found.ask_all is False
            new = open_session(db, None, user_id="owner", channel="api", lang="en").chat
            assert new.ask_all is False
    finally:
        engine.dispose()
        pg_server.drop_database(name)
