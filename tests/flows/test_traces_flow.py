"""The `traces` and `introvert` flows against the session's Prefect server."""

from __future__ import annotations

from flows.introvert import introvert
from flows.traces import traces
from metnos.features.mnestoma.models import Trace
from metnos.ground.db.engine import session as db_session
from tests.mnestoma.traces_fixture import INVOICES, PHOTOS, engine_of, plant
from tests.support.home import MakeHome


async def test_traces_detect_when_due_and_the_introvert_night_proposes_nothing_twice(
        make_home: MakeHome, prefect_api: str) -> None:
    home = make_home(lang="en")
    with engine_of(home.settings) as engine:
        plant(engine, {**INVOICES, **PHOTOS})
    first = await traces()
    second = await traces()  # detected a moment ago: not due
    forced = await traces(force=True)
    assert first["ran"] is True and first["generation"] == 1
    assert [set(t["members"]) for t in first["traces"]] == [
        {"fs_read", "pdf_ext", "archive", "notify"}, {"fs_find", "fs_move"}]
    assert second == {"ran": False}
    assert forced["generation"] == 2
    with engine_of(home.settings) as engine, db_session(engine) as db:
        assert len(list(db.exec(Trace.__table__.select()))) == 4  # type: ignore[attr-defined]

    # fs_find hands all it hands on to fs_move, which gets all it gets from fs_find, and
    # their profiles fit; notify has a host effect: never fused
    night = await introvert()
    assert "fs_find+fs_move" in night["subjects"] and "archive+notify" not in night["subjects"]
    assert set(night["kinds"]) == {"fuse"} and night["repeated"] == 0 and night["batch"]
    again = await introvert()
    assert again["proposals"] == [] and again["repeated"] == len(night["proposals"])
