"""The ager on the real database: time is use. After exactly N invocations (N = 50, 100 via the
settings) it decays, quarantines, releases and proposes as configured; after N-1 it does
nothing; without invocations it never ages, however long the calendar says it slept."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import pytest
from sqlalchemy import Engine, text
from sqlmodel import select

from metnos.features.mnestoma import ager, moves
from metnos.features.proposals.models import Proposal
from metnos.features.proposals.store import handler_for
from metnos.ground.db.engine import session as db_session
from metnos.mechanisms.audit import open_audit_log, read_tail, verify_instance
from tests.support.home import Home, MakeHome

POOL = ["fs_read", "pdf_ext", "archive", "old_tool", "never_used"]  # fs_read: the core
CHAIN = ["fs_read", "pdf_ext", "archive"]


@pytest.fixture(params=[50, 100], ids=["N=50", "N=100"])
def every(request: pytest.FixtureRequest) -> int:
    return int(request.param)


@pytest.fixture
def home(make_home: MakeHome, every: int) -> Home:
    return make_home(lang="en", METNOS_EVOLUTION_AGER_EVERY=str(every),
                     METNOS_EVOLUTION_QUARANTINE_AFTER=str(every),
                     METNOS_EVOLUTION_ARCHIVE_AFTER=str(every), METNOS_EVOLUTION_DECAY="1.0")


def invoke(engine: Engine, uses: Sequence[str], handoffs: Sequence[tuple[str, str]] = (),
           ticks: int = 1) -> int:
    """`ticks` invocations, each using `uses` and reinforcing `handoffs` once (what the
    turn's recording writes); returns the use clock."""
    clock = 0
    for _ in range(ticks):
        with engine.begin() as conn:
            clock = int(conn.execute(text(
                "INSERT INTO use_clock (id, clock, ager_clock, ager_cycles) VALUES (1, 1, 0, 0) "
                "ON CONFLICT (id) DO UPDATE SET clock = use_clock.clock + 1 "
                "RETURNING clock")).scalar_one())
            for name in uses:
                conn.execute(text(
                    "INSERT INTO executor_use VALUES (:n, 1, 1, :c, 'active', :c, now()) "
                    "ON CONFLICT (name) DO UPDATE SET invocations = executor_use.invocations "
                    "+ 1, window_uses = executor_use.window_uses + 1, last_clock = :c, "
                    "updated_at = now()"), {"n": name, "c": clock})
            for src, dst in handoffs:
                conn.execute(text(
                    "INSERT INTO mnest VALUES (:s, :d, 1, :c, now(), now()) ON CONFLICT "
                    "(src, dst) DO UPDATE SET weight = mnest.weight + 1, clock = :c, "
                    "updated_at = now()"), {"s": src, "d": dst, "c": clock})
    return clock


def test_the_ager_decays_quarantines_and_proposes_exactly_as_configured(
        engine: Engine, home: Home, every: int) -> None:
    n, settings = every, home.settings
    audit = open_audit_log(settings)
    invoke(engine, ["old_tool"], [("fs_read", "old_tool")])  # clock 1
    invoke(engine, CHAIN, [("fs_read", "pdf_ext"), ("pdf_ext", "archive")], ticks=n - 2)
    assert not ager.due(engine, settings)  # N-1 invocations: nothing
    before = moves.dump(engine)
    assert not ager.cycle(engine, settings, audit, executors=POOL).ran
    assert moves.dump(engine) == before

    invoke(engine, CHAIN, [("fs_read", "pdf_ext"), ("pdf_ext", "archive")])  # clock N
    assert ager.due(engine, settings)
    first = ager.cycle(engine, settings, audit, executors=POOL)
    assert (first.ran, first.clock, first.decayed, first.quarantined, first.proposed) == (
        True, n, 0, [], [])  # everything was used within the last N
    assert _use(engine)["never_used"] == ("active", 0, n)  # first seen now
    assert ager.clocks(engine) == (n, n) and not ager.due(engine, settings)

    invoke(engine, CHAIN, [("fs_read", "pdf_ext")], ticks=n)  # clock 2N
    second = ager.cycle(engine, settings, audit, executors=POOL)
    assert second.decayed == 2 and second.quarantined == ["never_used", "old_tool"]
    assert _weights(engine) == {("fs_read", "old_tool"): 0.0, ("pdf_ext", "archive"): n - 2,
                                ("fs_read", "pdf_ext"): 2 * n - 1}
    assert second.proposed == []  # quarantined just now: archiving comes N later

    invoke(engine, CHAIN, [("fs_read", "pdf_ext")], ticks=4)
    invoke(engine, [*CHAIN, "never_used"], [("fs_read", "pdf_ext")])  # used again
    invoke(engine, CHAIN, [("fs_read", "pdf_ext")], ticks=n - 5)  # clock 3N
    third = ager.cycle(engine, settings, audit, executors=POOL)
    assert third.released == ["never_used"] and third.quarantined == []
    assert third.decayed == 1 and _weights(engine)[("pdf_ext", "archive")] == n - 3
    assert len(third.proposed) == 1
    assert moves.states(engine) == {"fs_read": "active", "pdf_ext": "active",
                                    "archive": "active", "old_tool": "quarantined",
                                    "never_used": "active"}
    assert all(w == 0 for _, w, _ in _use(engine).values())  # window_uses reset
    with engine.connect() as conn:
        assert conn.execute(text("SELECT ager_cycles FROM use_clock")).scalar() == 3

    invoke(engine, [*CHAIN, "never_used"], ticks=n)  # clock 4N
    fourth = ager.cycle(engine, settings, audit, executors=POOL)
    assert fourth.decayed == 2 and fourth.proposed == []  # the same one is never made twice

    with db_session(engine) as db:
        proposal = db.exec(select(Proposal)).one()
    assert (proposal.kind, proposal.origin, proposal.status, proposal.user_id) == (
        "archive", "ager", "new", "owner")
    assert proposal.vars == {"name": "old_tool", "uses": 3 * n - 1}
    handler = handler_for("archive")
    assert handler is ager.accept_archive
    assert moves.states(engine)["old_tool"] == "quarantined"  # the ager never archives
    handler(engine, proposal)  # the owner accepted it
    assert moves.states(engine)["old_tool"] == "archived"
    latest = moves.history(engine)[0]
    assert (latest.kind, latest.target) == ("archive", "old_tool")
    assert latest.motivation == f"You accepted archiving it after {3 * n - 1} uses in quarantine."
    kinds = [m.kind for m in reversed(moves.history(engine))]
    assert kinds == ["decay", "quarantine", "quarantine", "release", "decay", "decay", "archive"]
    lines = [r for r in read_tail(audit.log_path, 50) if r["action"].startswith("evolution.")]
    assert [r["action"] for r in lines] == [f"evolution.{k}" for k in kinds]
    audit.close()
    assert verify_instance(settings).ok


def test_a_sleeping_system_does_not_age(engine: Engine, home: Home, every: int) -> None:
    """No invocations: no cycle, however old every timestamp is."""
    audit = open_audit_log(home.settings)
    invoke(engine, ["old_tool"], [("fs_read", "old_tool")])
    invoke(engine, CHAIN, [("pdf_ext", "archive")], ticks=every - 1)
    assert ager.cycle(engine, home.settings, audit, executors=POOL).ran
    long_ago = datetime(2020, 1, 1, tzinfo=UTC)
    with engine.begin() as conn:  # years pass on the calendar, not one invocation
        conn.execute(text("UPDATE mnest SET created_at = :t, updated_at = :t"), {"t": long_ago})
        conn.execute(text("UPDATE executor_use SET updated_at = :t"), {"t": long_ago})
    before, history = moves.dump(engine), moves.history(engine)
    for _ in range(3):
        assert not ager.due(engine, home.settings)
        assert not ager.cycle(engine, home.settings, audit, executors=POOL).ran
    assert moves.dump(engine) == before and moves.history(engine) == history
    audit.close()


def test_a_fresh_instance_is_never_due(engine: Engine, home: Home) -> None:
    assert ager.clocks(engine) == (0, 0) and not ager.due(engine, home.settings)
    with open_audit_log(home.settings) as audit:
        report = ager.cycle(engine, home.settings, audit, executors=POOL)
    assert not report.ran and moves.dump(engine) == b"# mnest\n# proto_mnest\n# use_clock\n" \
        b"# executor_use\n# trace\n"


def _use(engine: Engine) -> dict[str, tuple[str, int, int]]:
    with engine.connect() as conn:
        return {n: (s, w, c) for n, s, w, c in conn.execute(text(
            "SELECT name, state, window_uses, state_clock FROM executor_use"))}


def _weights(engine: Engine) -> dict[tuple[str, str], float]:
    with engine.connect() as conn:
        return {(s, d): w for s, d, w in conn.execute(text("SELECT src, dst, weight FROM mnest"))}
