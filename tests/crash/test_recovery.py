"""The gateway's start-up sweep of what a dead process left (`metnos.turns.recovery`).

The state is planted as a kill -9 leaves it (turn rows still open, a before-record linked to
its turn, a half-written record, temporary files of interrupted writes), then the real app
starts on the home.
"""

from __future__ import annotations

import os

from metnos.ground import i18n, keys, reversibility
from metnos.ground.db import models
from metnos.ground.db.engine import database_url, make_engine
from metnos.ground.db.engine import session as db_session
from metnos.mechanisms.audit import open_audit_log
from metnos.turns.recovery import link_record
from tests.support.home import Home, MakeHome, gateway_client


def open_turn(home: Home, status: str) -> str:
    engine = make_engine(database_url(home.settings))
    try:
        with db_session(engine) as db:
            chat = models.open_session(db, None, user_id="owner", channel="api", lang="it",
                                       legacy_lang="it", autonomy="Full").chat
            turn = models.record_turn_start(db, session_id=chat.id, channel="api",
                                            sender="owner", text="riscrivi", lang="it")
            models.finish_turn(db, turn.id, status=status)
            return turn.id
    finally:
        engine.dispose()


def record(home: Home, turn_id: str, action_id: str) -> None:
    settings = home.settings
    signed = reversibility.record_before(settings.state_dir, action_id, home.workspace,
                                         "fs_write", ["a.md"],
                                         keys.load_private_key(settings.keys_dir, "audit"))
    engine = make_engine(database_url(settings))
    try:
        link_record(engine, action_id=action_id, turn_id=turn_id, executor="fs_write",
                    signed=signed)
    finally:
        engine.dispose()


async def test_start_up_fails_open_turns_and_clears_half_written_state(
        make_home: MakeHome) -> None:
    home = make_home(lang="it")
    settings = home.settings
    (home.workspace / "a.md").write_text("prima")
    running, waiting = open_turn(home, "running"), open_turn(home, "awaiting_approval")
    record(home, running, "act1")  # its outcome never written: it may have run
    record(home, running, "act2")  # this one finished and was audited before the crash
    with open_audit_log(settings) as audit:
        audit.append(sender="owner", channel="api", action="fs_write", decision="allow",
                     reason="ok", outcome="done", action_id="act2", turn_id=running)
    partial = settings.state_dir / "before" / f"{reversibility.PARTIAL_PREFIX}act3"
    (partial / "blobs").mkdir(parents=True)
    temporaries = [settings.secrets_dir / ".owner.token.x1y2z3.tmp",
                   settings.state_dir / ".audit.checkpoint.a1b2c3.tmp",
                   settings.home / "signatures" / ".fs_write.minisig.q8w7e6.tmp"]
    for path in temporaries:
        path.write_text("half")

    async with gateway_client(home, prefect=False) as client:
        first = (await client.get(f"/api/turns/{running}")).json()
        second = (await client.get(f"/api/turns/{waiting}")).json()
        lines = (await client.get("/api/audit?limit=50")).json()

    interrupted = i18n.get("ERR_TURN_INTERRUPTED", "it")
    assert first["status"] == "failed" and first["reply"].splitlines() == [
        interrupted,
        i18n.get("MSG_TURN_INTERRUPTED_ACTION", "it", executor="fs_write", action_id="act1"),
        i18n.get("MSG_TURN_INTERRUPTED_ACTION", "it", executor="fs_write", action_id="act2")]
    assert second["status"] == "failed" and second["reply"] == interrupted
    swept = [(r["turn_id"], r["action"], r["action_id"], r["outcome"]) for r in lines
             if r["reason"] == "ERR_TURN_INTERRUPTED"]
    assert sorted(swept, key=str) == sorted([
        (running, "fs_write", "act1", "interrupted"), (running, "turn", None, "failed"),
        (waiting, "turn", None, "failed")], key=str)
    assert sorted(os.listdir(settings.state_dir / "before")) == ["act1", "act2"]
    assert not any(path.exists() for path in temporaries)

    async with gateway_client(home, prefect=False) as client:  # a clean start changes nothing
        assert (await client.get(f"/api/turns/{running}")).json() == first
        again = (await client.get("/api/audit?limit=50")).json()
    assert [r for r in again if r["reason"] == "ERR_TURN_INTERRUPTED"] == [
        r for r in lines if r["reason"] == "ERR_TURN_INTERRUPTED"]
