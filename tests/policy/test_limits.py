"""Rate limit and daily LLM cost cap on a real PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlmodel import Session, select

import metnos.policy.usage_models as usage_models  # noqa: F401 - before create_tables runs
from metnos.policy.limits import (
    check_cost,
    check_rate,
    day_spent_usd,
    format_usd,
    record_action,
    record_llm_cost,
    runs_last_hour,
)
from metnos.policy.usage_models import ActionUsage, LLMUsage

NOON = datetime(2025, 3, 14, 12, 0, tzinfo=UTC)


def test_rate_counts_the_last_hour_per_user(db_session: Session) -> None:
    for minutes in (70, 59, 30, 1):
        record_action(db_session, user_id="alice", executor="fs_read", turn_id="t1",
                      now=NOON - timedelta(minutes=minutes))
    record_action(db_session, user_id="bob", executor="fs_read", turn_id="t2", now=NOON)
    assert runs_last_hour(db_session, user_id="alice", now=NOON) == 3
    assert check_rate(db_session, user_id="alice", limit_per_hour=4, now=NOON) is None
    denied = check_rate(db_session, user_id="alice", limit_per_hour=3, now=NOON)
    assert denied is not None and denied.verdict == "deny"
    assert (denied.key, denied.vars) == ("ERR_POLICY_RATE_LIMIT", {"limit": 3})
    assert "3" in denied.message("it") and "3" in denied.message("en")
    # an hour later the window has moved on; bob has his own budget
    assert check_rate(db_session, user_id="alice", limit_per_hour=3,
                      now=NOON + timedelta(minutes=31)) is None
    assert check_rate(db_session, user_id="bob", limit_per_hour=2, now=NOON) is None


def test_record_action_commits_a_row(db_session: Session) -> None:
    row = record_action(db_session, user_id="carol", executor="fs_write", turn_id=None)
    stored = db_session.exec(select(ActionUsage).where(ActionUsage.id == row.id)).one()
    assert stored.executor == "fs_write" and stored.started_at.tzinfo is not None


def test_cost_cap_per_utc_day(db_session: Session) -> None:
    yesterday = NOON - timedelta(days=1)
    record_llm_cost(db_session, turn_id="t0", user_id="alice", model="m", cost_usd=5.0,
                    now=yesterday)
    record_llm_cost(db_session, turn_id="t1", user_id="alice", model="m", cost_usd=0.75,
                    now=NOON.replace(hour=0, minute=0))
    record_llm_cost(db_session, turn_id="t2", user_id="bob", model="m", cost_usd=0.5, now=NOON)
    assert day_spent_usd(db_session, now=NOON) == pytest.approx(1.25)
    assert check_cost(db_session, cap_usd_per_day=1.26, now=NOON) is None
    denied = check_cost(db_session, cap_usd_per_day=1.25, now=NOON)
    assert denied is not None and denied.verdict == "deny"
    assert (denied.key, denied.vars) == ("ERR_POLICY_COST_CAP", {"spent": "1.25", "cap": "1.25"})
    assert "1.25" in denied.message("en")
    # the next UTC day starts from zero
    assert check_cost(db_session, cap_usd_per_day=1.0, now=NOON + timedelta(days=1)) is None


def test_cap_zero_means_no_llm_at_all(db_session: Session) -> None:
    denied = check_cost(db_session, cap_usd_per_day=0.0, now=NOON + timedelta(days=30))
    assert denied is not None and denied.vars == {"spent": "0.00", "cap": "0.00"}


def test_odd_costs_are_stored_as_zero(db_session: Session) -> None:
    day = NOON + timedelta(days=60)
    for cost in (float("nan"), -1.0, 0.0):
        record_llm_cost(db_session, turn_id=None, user_id="a", model="m", cost_usd=cost, now=day)
    rows = db_session.exec(select(LLMUsage).where(LLMUsage.created_at == day)).all()
    assert [r.cost_usd for r in rows] == [0.0, 0.0, 0.0]
    assert check_cost(db_session, cap_usd_per_day=0.01, now=day) is None


def test_naive_datetimes_are_refused(db_session: Session) -> None:
    with pytest.raises(ValueError):
        check_rate(db_session, user_id="a", limit_per_hour=1, now=datetime(2025, 1, 1))


def test_format_usd() -> None:
    assert (format_usd(0), format_usd(0.0042), format_usd(2), format_usd(1.005)) == (
        "0.00", "0.0042", "2.00", "1.00")
