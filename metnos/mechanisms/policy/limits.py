"""Rate limit (executor runs per user per hour) and daily LLM cost cap (SPEC §4).

Both are reservations on a counter row (`usage_counter`, one per user and clock hour, one per
UTC day for the instance's LLM spend), taken with one conditional statement (`INSERT ... ON
CONFLICT DO UPDATE SET used = used + n WHERE used + n <= cap RETURNING used`): PostgreSQL
serialises concurrent updates of the row and re-checks the condition, so concurrent turns can
never pass a cap together, whatever they wait for between the check and the run. What was
reserved and not spent goes back (`release`; `settle_llm` trades an LLM call's estimate for its
real cost). The per-run and per-call rows (`action_usage`, `llm_usage`) stay the history of
what was spent.

Plain helpers on an open `Session`; each commits its own change. A refused reservation is a
deny `Decision` (the turn refuses with its message and one audit line).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import ColumnElement, case, func
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlmodel import Session, col, select, update

from metnos.ground.db.models import utcnow
from metnos.mechanisms.policy.decide import Decision
from metnos.mechanisms.policy.usage_models import ActionUsage, LLMUsage, UsageCounter

__all__ = ["Reservation", "day_spent_usd", "format_usd", "record_action", "release",
           "reserve_llm", "reserve_run", "settle_llm"]

ERR_RATE_LIMIT = "ERR_POLICY_RATE_LIMIT"
ERR_COST_CAP = "ERR_POLICY_COST_CAP"
RUNS, LLM_USD = "runs", "llm_usd"
INSTANCE = "instance"  # the scope of the LLM cap: the whole instance
_SLACK = 1e-9  # float sums of USD amounts: 0.05 + 0.05 + 0.05 must fit a cap of 0.15


@dataclass(frozen=True)
class Reservation:
    """`amount` taken from the counter (`kind`, `scope`, `window_start`)."""

    kind: str
    scope: str
    window_start: datetime
    amount: float


def reserve_run(db: Session, *, user_id: str, limit_per_hour: int,
                now: datetime | None = None) -> Reservation | Decision:
    """One executor run of `user_id` in this clock hour (UTC), or a deny when the hour's
    `limit_per_hour` runs are taken (reserved ones included)."""
    window = _utc(now).replace(minute=0, second=0, microsecond=0)
    slot = Reservation(RUNS, user_id, window, 1.0)
    if _take(db, slot, float(limit_per_hour)) is None:
        return Decision("deny", ERR_RATE_LIMIT, {"limit": limit_per_hour})
    return slot


def reserve_llm(db: Session, *, cap_usd_per_day: float, estimate_usd: float,
                now: datetime | None = None) -> Reservation | Decision:
    """Reserve `estimate_usd` (at most the cap itself) of today's (UTC) LLM budget before a
    call, or a deny when it does not fit (cap 0: never allowed)."""
    window = _utc(now).replace(hour=0, minute=0, second=0, microsecond=0)
    slot = Reservation(LLM_USD, INSTANCE, window, _usd(min(estimate_usd, cap_usd_per_day)))
    if _take(db, slot, cap_usd_per_day) is None:
        spent = day_spent_usd(db, now=now)
        return Decision("deny", ERR_COST_CAP,
                        {"spent": format_usd(spent), "cap": format_usd(cap_usd_per_day)})
    return slot


def release(db: Session, slot: Reservation) -> None:
    """Give back what `slot` reserved (a step that never ran, a call that failed)."""
    _adjust(db, slot, -slot.amount)
    db.commit()


def settle_llm(db: Session, slot: Reservation, *, turn_id: str | None, user_id: str,
               model: str, cost_usd: float, now: datetime | None = None) -> LLMUsage:
    """Replace the call's reserved estimate by its real cost (negative or NaN figures count
    as 0; a cost above the estimate is counted whole, even past the cap) and record it."""
    cost = _usd(cost_usd)
    _adjust(db, slot, cost - slot.amount)
    row = LLMUsage(turn_id=turn_id, user_id=user_id, model=model, cost_usd=cost,
                   created_at=_utc(now))
    db.add(row)
    db.commit()
    return row


def record_action(db: Session, *, user_id: str, executor: str, turn_id: str | None,
                  now: datetime | None = None) -> ActionUsage:
    """Record one executor run started by `user_id` (its run was reserved by `reserve_run`)."""
    row = ActionUsage(user_id=user_id, executor=executor, turn_id=turn_id,
                      started_at=_utc(now))
    db.add(row)
    db.commit()
    return row


def day_spent_usd(db: Session, *, now: datetime | None = None) -> float:
    """The instance's LLM spend on `now`'s UTC day, calls in flight counted at their estimate."""
    window = _utc(now).replace(hour=0, minute=0, second=0, microsecond=0)
    query = select(func.coalesce(func.sum(UsageCounter.used), 0.0)).where(
        UsageCounter.kind == LLM_USD, UsageCounter.scope == INSTANCE,
        UsageCounter.window_start == window)
    return float(db.exec(query).one())


def format_usd(amount: float) -> str:
    """Cents for ordinary sums, four decimals for the tiny ones a local model costs."""
    if 0 < amount < 0.01:
        return f"{amount:.4f}"
    return f"{amount:.2f}"


def _take(db: Session, slot: Reservation, cap: float) -> float | None:
    """Add `slot.amount` to its counter if the total stays within `cap` (and the counter is
    below it: a zero amount does not pass a spent cap); the new total, or None. Commits.

    One statement: the window's first reservation creates the row with its amount, a later
    one adds to it under the same condition (`ON CONFLICT DO UPDATE ... WHERE`: PostgreSQL
    locks the row and checks the condition on its latest version)."""
    if not (slot.amount <= cap + _SLACK and cap > 0):  # does not fit even an empty window
        return None
    used = col(UsageCounter.used)
    stmt = (pg_insert(UsageCounter)
            .values(kind=slot.kind, scope=slot.scope, window_start=slot.window_start,
                    used=slot.amount)
            .on_conflict_do_update(
                index_elements=["kind", "scope", "window_start"],
                set_={"used": used + slot.amount},
                where=(used + slot.amount <= cap + _SLACK) & (used < cap))
            .returning(used))
    total = db.exec(stmt).first()
    db.commit()
    return None if total is None else float(total[0])


def _adjust(db: Session, slot: Reservation, delta: float) -> None:
    used = col(UsageCounter.used)
    after = used + delta  # float residue of give-backs is snapped to an exact 0
    db.exec(update(UsageCounter).where(*_key(slot))
            .values(used=case((after < _SLACK, 0.0), else_=after)))


def _key(slot: Reservation) -> tuple[ColumnElement[bool], ...]:
    return (col(UsageCounter.kind) == slot.kind, col(UsageCounter.scope) == slot.scope,
            col(UsageCounter.window_start) == slot.window_start)


def _usd(amount: float) -> float:
    return amount if amount == amount and amount > 0 else 0.0


def _utc(now: datetime | None) -> datetime:
    if now is None:
        return utcnow()
    if now.tzinfo is None:
        raise ValueError("limits need timezone-aware datetimes")
    return now.astimezone(UTC)
