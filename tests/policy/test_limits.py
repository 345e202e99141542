"""Rate limit and daily LLM cost cap: reservations on a real PostgreSQL, also under real
concurrency (threads, one connection each)."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Engine
from sqlmodel import Session, select

from metnos.mechanisms.policy.decide import Decision
from metnos.mechanisms.policy.limits import (
    LLM_USD,
    RUNS,
    Reservation,
    day_spent_usd,
    format_usd,
    record_action,
    release,
    reserve_llm,
    reserve_run,
    settle_llm,
)
from metnos.mechanisms.policy.usage_models import ActionUsage, LLMUsage, UsageCounter

NOON = datetime(2025, 3, 14, 12, 0, tzinfo=UTC)


def _used(db: Session, kind: str, scope: str, window: datetime) -> float:
    row = db.get(UsageCounter, (kind, scope, window))
    return 0.0 if row is None else row.used


def test_runs_are_reserved_per_user_and_clock_hour(db_session: Session) -> None:
    slots = [reserve_run(db_session, user_id="alice", limit_per_hour=3,
                         now=NOON + timedelta(minutes=m)) for m in (0, 20, 59)]
    assert all(isinstance(s, Reservation) for s in slots)
    denied = reserve_run(db_session, user_id="alice", limit_per_hour=3, now=NOON)
    assert isinstance(denied, Decision) and denied.verdict == "deny"
    assert (denied.key, denied.vars) == ("ERR_POLICY_RATE_LIMIT", {"limit": 3})
    assert "3" in denied.message("it") and "3" in denied.message("en")
    assert _used(db_session, RUNS, "alice", NOON) == 3
    # bob has his own budget; the next clock hour starts from zero
    assert isinstance(reserve_run(db_session, user_id="bob", limit_per_hour=1, now=NOON),
                      Reservation)
    assert isinstance(reserve_run(db_session, user_id="alice", limit_per_hour=3,
                                  now=NOON + timedelta(hours=1)), Reservation)


def test_a_released_run_can_be_reserved_again(db_session: Session) -> None:
    first = reserve_run(db_session, user_id="carol", limit_per_hour=1, now=NOON)
    assert isinstance(first, Reservation)
    assert isinstance(reserve_run(db_session, user_id="carol", limit_per_hour=1, now=NOON),
                      Decision)
    release(db_session, first)
    assert _used(db_session, RUNS, "carol", NOON) == 0
    assert isinstance(reserve_run(db_session, user_id="carol", limit_per_hour=1, now=NOON),
                      Reservation)


def test_record_action_commits_a_row(db_session: Session) -> None:
    row = record_action(db_session, user_id="carol", executor="fs_write", turn_id=None)
    stored = db_session.exec(select(ActionUsage).where(ActionUsage.id == row.id)).one()
    assert stored.executor == "fs_write" and stored.started_at.tzinfo is not None


def test_llm_reserves_an_estimate_and_settles_to_the_real_cost(db_session: Session) -> None:
    slot = reserve_llm(db_session, cap_usd_per_day=1.0, estimate_usd=0.25, now=NOON)
    assert isinstance(slot, Reservation) and slot.amount == 0.25
    assert day_spent_usd(db_session, now=NOON) == pytest.approx(0.25)  # in flight
    row = settle_llm(db_session, slot, turn_id="t1", user_id="alice", model="m",
                     cost_usd=0.1, now=NOON)
    assert row.cost_usd == pytest.approx(0.1)
    assert day_spent_usd(db_session, now=NOON) == pytest.approx(0.1)
    stored = db_session.exec(select(LLMUsage).where(LLMUsage.id == row.id)).one()
    assert stored.model == "m" and stored.turn_id == "t1"
    # a call dearer than its estimate counts whole, past the cap: then nothing more fits
    big = reserve_llm(db_session, cap_usd_per_day=1.0, estimate_usd=0.25, now=NOON)
    assert isinstance(big, Reservation)
    settle_llm(db_session, big, turn_id="t2", user_id="bob", model="m", cost_usd=1.15,
               now=NOON)
    denied = reserve_llm(db_session, cap_usd_per_day=1.0, estimate_usd=0.25, now=NOON)
    assert isinstance(denied, Decision)
    assert (denied.key, denied.vars) == ("ERR_POLICY_COST_CAP", {"spent": "1.25", "cap": "1.00"})
    assert "1.25" in denied.message("en")
    # the next UTC day starts from zero
    assert isinstance(reserve_llm(db_session, cap_usd_per_day=1.0, estimate_usd=0.25,
                                  now=NOON + timedelta(days=1)), Reservation)


def test_a_failed_call_gives_its_estimate_back(db_session: Session) -> None:
    day = NOON + timedelta(days=10)
    slot = reserve_llm(db_session, cap_usd_per_day=0.15, estimate_usd=0.05, now=day)
    assert isinstance(slot, Reservation)
    release(db_session, slot)
    assert day_spent_usd(db_session, now=day) == 0.0
    # three estimates fill a cap of three exactly (no float rounding refusal)
    held = [reserve_llm(db_session, cap_usd_per_day=0.15, estimate_usd=0.05, now=day)
            for _ in range(4)]
    assert [isinstance(h, Reservation) for h in held] == [True, True, True, False]


def test_an_estimate_above_the_cap_is_cut_to_the_cap(db_session: Session) -> None:
    day = NOON + timedelta(days=20)
    slot = reserve_llm(db_session, cap_usd_per_day=0.01, estimate_usd=0.05, now=day)
    assert isinstance(slot, Reservation) and slot.amount == 0.01
    assert isinstance(reserve_llm(db_session, cap_usd_per_day=0.01, estimate_usd=0.05,
                                  now=day), Decision)  # one call at a time under this cap
    settle_llm(db_session, slot, turn_id=None, user_id="a", model="local", cost_usd=0.0,
               now=day)
    assert isinstance(reserve_llm(db_session, cap_usd_per_day=0.01, estimate_usd=0.05,
                                  now=day), Reservation)


def test_cap_zero_means_no_llm_at_all(db_session: Session) -> None:
    for estimate in (0.0, 0.05):
        denied = reserve_llm(db_session, cap_usd_per_day=0.0, estimate_usd=estimate,
                             now=NOON + timedelta(days=30))
        assert isinstance(denied, Decision) and denied.vars == {"spent": "0.00", "cap": "0.00"}


def test_odd_costs_are_stored_as_zero(db_session: Session) -> None:
    day = NOON + timedelta(days=60)
    for cost in (float("nan"), -1.0, 0.0):
        slot = reserve_llm(db_session, cap_usd_per_day=0.01, estimate_usd=0.001, now=day)
        assert isinstance(slot, Reservation)
        settle_llm(db_session, slot, turn_id=None, user_id="a", model="m", cost_usd=cost,
                   now=day)
    rows = db_session.exec(select(LLMUsage).where(LLMUsage.created_at == day)).all()
    assert [r.cost_usd for r in rows] == [0.0, 0.0, 0.0]
    assert day_spent_usd(db_session, now=day) == 0.0


def test_naive_datetimes_are_refused(db_session: Session) -> None:
    with pytest.raises(ValueError):
        reserve_run(db_session, user_id="a", limit_per_hour=1, now=datetime(2025, 1, 1))


def test_format_usd() -> None:
    assert (format_usd(0), format_usd(0.0042), format_usd(2), format_usd(1.005)) == (
        "0.00", "0.0042", "2.00", "1.00")


def _race(engine: Engine, n: int, reserve: Callable[[Session], object]) -> list[object]:
    """`n` threads, one connection each (the pool holds 15), all reserving at once."""
    barrier = threading.Barrier(n)
    results: list[object] = [None] * n

    def one(i: int) -> None:
        with Session(engine) as db:
            db.exec(select(1)).one()  # connected before the start line
            barrier.wait(timeout=30)
            results[i] = reserve(db)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results


@pytest.mark.parametrize(("n", "cap"), [(12, 5), (10, 1), (8, 8)])
def test_concurrent_run_reservations_succeed_exactly_cap_times(
        db_engine: Engine, n: int, cap: int) -> None:
    user = f"racer-{uuid.uuid4().hex[:8]}"  # a counter row no one else has created yet
    results = _race(db_engine, n, lambda db: reserve_run(db, user_id=user,
                                                         limit_per_hour=cap, now=NOON))
    assert sum(isinstance(r, Reservation) for r in results) == cap
    assert sum(isinstance(r, Decision) for r in results) == n - cap
    with Session(db_engine) as db:
        assert _used(db, RUNS, user, NOON) == cap


def test_concurrent_llm_reservations_never_pass_the_cap(db_engine: Engine) -> None:
    day = NOON + timedelta(days=100 + uuid.uuid4().int % 10_000)  # a fresh day row
    results = _race(db_engine, 12, lambda db: reserve_llm(db, cap_usd_per_day=0.25,
                                                          estimate_usd=0.05, now=day))
    assert sum(isinstance(r, Reservation) for r in results) == 5
    with Session(db_engine) as db:
        assert _used(db, LLM_USD, "instance", day.replace(hour=0)) == pytest.approx(0.25)
