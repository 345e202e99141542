"""Rate limit (executor runs per user per hour) and daily LLM cost cap (SPEC §4).

Plain helpers on an open `Session`; the `record_*` ones commit their own row. The checks
return a deny `Decision` (the turn refuses with its message and one audit line) or None.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import func
from sqlmodel import Session, select

from metnos.db.models import utcnow
from metnos.policy.decide import Decision
from metnos.policy.usage_models import ActionUsage, LLMUsage

__all__ = ["check_cost", "check_rate", "day_spent_usd", "format_usd", "record_action",
           "record_llm_cost", "runs_last_hour"]

ERR_RATE_LIMIT = "ERR_POLICY_RATE_LIMIT"
ERR_COST_CAP = "ERR_POLICY_COST_CAP"
_HOUR = timedelta(hours=1)


def record_action(db: Session, *, user_id: str, executor: str, turn_id: str | None,
                  now: datetime | None = None) -> ActionUsage:
    """Count one executor run started by `user_id` (call it when the run starts)."""
    row = ActionUsage(user_id=user_id, executor=executor, turn_id=turn_id,
                      started_at=_utc(now))
    db.add(row)
    db.commit()
    return row


def runs_last_hour(db: Session, *, user_id: str, now: datetime | None = None) -> int:
    """Executor runs `user_id` started in the hour before `now` (exclusive of its start)."""
    at = _utc(now)
    query = select(func.count()).select_from(ActionUsage).where(
        ActionUsage.user_id == user_id,
        ActionUsage.started_at > at - _HOUR,
        ActionUsage.started_at <= at,
    )
    return int(db.exec(query).one())


def check_rate(db: Session, *, user_id: str, limit_per_hour: int,
               now: datetime | None = None) -> Decision | None:
    """Deny when `user_id` already started `limit_per_hour` runs in the last hour."""
    if runs_last_hour(db, user_id=user_id, now=now) >= limit_per_hour:
        return Decision("deny", ERR_RATE_LIMIT, {"limit": limit_per_hour})
    return None


def record_llm_cost(db: Session, *, turn_id: str | None, user_id: str, model: str,
                    cost_usd: float, now: datetime | None = None) -> LLMUsage:
    """Record one LLM call's cost (negative or NaN figures count as 0)."""
    cost = cost_usd if cost_usd == cost_usd and cost_usd > 0 else 0.0
    row = LLMUsage(turn_id=turn_id, user_id=user_id, model=model, cost_usd=cost,
                   created_at=_utc(now))
    db.add(row)
    db.commit()
    return row


def day_spent_usd(db: Session, *, now: datetime | None = None) -> float:
    """The instance's LLM spend so far on `now`'s UTC day."""
    at = _utc(now)
    start = at.replace(hour=0, minute=0, second=0, microsecond=0)
    query = select(func.coalesce(func.sum(LLMUsage.cost_usd), 0.0)).where(
        LLMUsage.created_at >= start,
        LLMUsage.created_at < start + timedelta(days=1),
    )
    return float(db.exec(query).one())


def check_cost(db: Session, *, cap_usd_per_day: float,
               now: datetime | None = None) -> Decision | None:
    """Deny any LLM use when today's (UTC) spend has reached the cap (cap 0: never allowed)."""
    spent = day_spent_usd(db, now=now)
    if spent >= cap_usd_per_day:
        return Decision("deny", ERR_COST_CAP,
                        {"spent": format_usd(spent), "cap": format_usd(cap_usd_per_day)})
    return None


def format_usd(amount: float) -> str:
    """Cents for ordinary sums, four decimals for the tiny ones a local model costs."""
    if 0 < amount < 0.01:
        return f"{amount:.4f}"
    return f"{amount:.2f}"


def _utc(now: datetime | None) -> datetime:
    if now is None:
        return utcnow()
    if now.tzinfo is None:
        raise ValueError("limits need timezone-aware datetimes")
    return now.astimezone(UTC)
