"""What the missed-run notice says after downtime (`metnos.features.schedules.notices`, real
database): the family's tasks only, never the instance's own jobs (`ager/check`,
`introvert/nightly`); each in its own chat and language; a daily task missed four times runs once
(the other runs, the one due a moment ago included, are skipped) and is named once; nothing is said
twice."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlmodel import select

from metnos.faces.registry import create_tables
from metnos.features.reminders.outbox import Outbox
from metnos.features.schedules import notices, owner
from metnos.features.schedules.notices import MissedRun
from metnos.ground.db.engine import database_url, make_engine
from metnos.ground.db.engine import session as db_session
from tests.support.home import MakeHome

DEPLOYMENT = "owner-task/scheduled"


def _notices(engine: object) -> list[Outbox]:
    with db_session(engine) as db:  # type: ignore[arg-type]
        return list(db.exec(select(Outbox).where(Outbox.kind == "schedule")))


def test_the_notice_speaks_of_the_familys_tasks_once_each(make_home: MakeHome) -> None:
    home = make_home(lang="it")
    engine = make_engine(database_url(home.settings))
    create_tables(engine)
    mine = owner.new_task(engine, home.settings, when="ogni giorno alle 8",
                          text="dimmi cosa c'è nella lista della spesa", user_id="owner",
                          lang="it", channel="telegram", address="telegram-1")
    theirs = owner.new_task(engine, home.settings, when="every day at 7",
                            text="show me the shopping list", user_id="telegram:2",
                            lang="en", channel="telegram", address="telegram-2")
    now = datetime.now(UTC)
    days = [now - timedelta(days=d, minutes=2) for d in (3, 2, 1, 0)]  # the last: 2 min ago
    runs = [MissedRun(f"m{i}", DEPLOYMENT, at, mine.id) for i, at in enumerate(days)]
    runs += [MissedRun("t1", DEPLOYMENT, now - timedelta(days=1), theirs.id)]
    runs += [MissedRun(f"a{i}", "ager/check", now - timedelta(hours=i + 1)) for i in range(3)]
    runs += [MissedRun("n1", "introvert/nightly", now - timedelta(hours=9))]
    found = notices.plan(runs, engine)
    late = {(r.deployment, r.task_id): r.flow_run_id for r in found.run_late}
    assert late == {(DEPLOYMENT, mine.id): "m3", (DEPLOYMENT, theirs.id): "t1",
                    ("ager/check", None): "a0", ("introvert/nightly", None): "n1"}
    assert sorted(r.flow_run_id for r in found.skip) == ["a1", "a2", "m0", "m1", "m2"]
    notices.report_missed(engine, home.settings, found, now)
    sent = {row.address: row for row in _notices(engine)}
    assert set(sent) == {"telegram-1", "telegram-2"}
    text = sent["telegram-1"].text
    assert text.count("dimmi cosa c'è nella lista della spesa") == 1, text
    assert "3 esecuzioni precedenti" in text and "show me" not in text, text
    for internal in ("ager", "introvert", "check", "nightly"):
        assert internal not in text.lower(), text
    assert sent["telegram-2"].lang == "en" and "show me the shopping list" in \
        sent["telegram-2"].text
    assert notices.plan(runs, engine).run_late == []  # a second start: nothing again
    engine.dispose()
