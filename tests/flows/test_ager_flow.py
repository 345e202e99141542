"""The `ager` flow against the session's Prefect server: a cycle when it is due, nothing when
it is not (the scheduled check is one query)."""

from __future__ import annotations

from sqlalchemy import text

from flows.ager import ager
from metnos.features.mnestoma import moves
from metnos.ground.db.engine import database_url, make_engine
from metnos.mechanisms.audit import read_tail, verify_instance
from tests.support.home import MakeHome


async def test_the_flow_ages_once_per_ager_every_invocations(
        make_home: MakeHome, prefect_api: str) -> None:
    home = make_home(lang="en", METNOS_EVOLUTION_AGER_EVERY="5",
                     METNOS_EVOLUTION_QUARANTINE_AFTER="5", METNOS_EVOLUTION_ARCHIVE_AFTER="5")
    engine = make_engine(database_url(home.settings))
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO use_clock VALUES (1, 4, 0, 0)"))
        conn.execute(text("INSERT INTO executor_use VALUES "
                          "('web_fetch', 1, 1, 0, 'active', 0, now()), "
                          "('fs_read', 3, 3, 4, 'active', 0, now())"))
        conn.execute(text("INSERT INTO mnest VALUES ('fs_read', 'pdf_ext', 2, 0, now(), now())"))
    assert await ager() == {"ran": False}  # 4 invocations of 5

    with engine.begin() as conn:
        conn.execute(text("UPDATE use_clock SET clock = 5"))
    report = await ager()
    assert (report["ran"], report["clock"], report["decayed"]) == (True, 5, 1)
    assert report["quarantined"] == ["web_fetch"] and report["proposed"] == []
    states = moves.states(engine)
    assert states["web_fetch"] == "quarantined" and states["fs_read"] == "active"
    assert states["pdf_ext"] == "active"  # a registry executor first seen now: idle from now
    assert await ager() == {"ran": False}
    actions = [r["action"] for r in read_tail(home.settings.audit_dir / "audit.jsonl", 10)]
    assert actions == ["evolution.decay", "evolution.quarantine"]
    assert verify_instance(home.settings).ok
    engine.dispose()
