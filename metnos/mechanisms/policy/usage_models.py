"""The tables behind the rate limit and the daily LLM cost cap (SPEC §4).

`action_usage`: one row per executor run a user started (the rate limit counts them per hour).
`llm_usage`: one row per LLM call with its cost in USD (the history of what was spent).
`usage_counter`: what the limits enforce, one row per (kind, scope, window): executor runs of a
user per clock hour, the instance's LLM spend per UTC day. `metnos.mechanisms.policy.limits`
reserves on it with one conditional UPDATE, so concurrent turns cannot pass a cap together.
No foreign keys: a cost may be spent outside a turn, and usage must outlive pruned turns.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import CheckConstraint, Index
from sqlmodel import Field, SQLModel

from metnos.ground.db.models import _stamp, new_id, utcnow


class ActionUsage(SQLModel, table=True):
    """One executor run started by a user."""

    __tablename__ = "action_usage"
    __table_args__ = (Index("action_usage_user_time", "user_id", "started_at"),)

    id: str = Field(default_factory=new_id, primary_key=True)
    user_id: str
    executor: str
    turn_id: str | None = None
    started_at: datetime = _stamp(default_factory=utcnow)


class LLMUsage(SQLModel, table=True):
    """One LLM call and what it cost (litellm's figure, or the configured per-token prices)."""

    __tablename__ = "llm_usage"
    __table_args__ = (CheckConstraint("cost_usd >= 0", name="llm_usage_cost_not_negative"),)

    id: str = Field(default_factory=new_id, primary_key=True)
    turn_id: str | None = None
    user_id: str
    model: str
    cost_usd: float = 0.0
    created_at: datetime = _stamp(default_factory=utcnow, index=True)


class UsageCounter(SQLModel, table=True):
    """What `scope` used of one limit in the window starting at `window_start` (reserved
    amounts included until they are settled or given back)."""

    __tablename__ = "usage_counter"
    __table_args__ = (CheckConstraint("used >= 0", name="usage_counter_not_negative"),)

    kind: str = Field(primary_key=True)  # "runs" (per user and hour) or "llm_usd" (per day)
    scope: str = Field(primary_key=True)  # the user id, or "instance"
    window_start: datetime = _stamp(primary_key=True)
    used: float = 0.0
