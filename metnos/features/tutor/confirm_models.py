"""The `tutor_confirmation` table: a mixed request's operative clause, waiting for a yes.

One row per confirmation the Tutor asked (SPEC §10): bound to the person, the conversation,
the catalog version the explanation rested on and an expiry; used once (`consumed_at` is set
by a conditional UPDATE, so two answers can never both run the clause).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import CheckConstraint
from sqlmodel import Field, SQLModel

from metnos.ground.db.models import _stamp, utcnow

OUTCOMES = ("ran", "declined", "dropped", "expired", "catalog")


class TutorConfirmation(SQLModel, table=True):
    """A clause kept verbatim until its person says yes or no in the same conversation."""

    __tablename__ = "tutor_confirmation"
    __table_args__ = (
        CheckConstraint(f"outcome IS NULL OR outcome IN {OUTCOMES!r}",
                        name="tutor_confirmation_outcome_valid"),
    )

    id: str = Field(primary_key=True)
    turn_id: str = Field(index=True)  # the turn that asked
    user_id: str = Field(index=True)
    session_id: str = Field(index=True)
    clause: str  # the operative clause, the exact substring of the request
    lang: str
    catalog_version: str
    created_at: datetime = _stamp(default_factory=utcnow)
    expires_at: datetime = _stamp()
    consumed_at: datetime | None = _stamp(default=None, nullable=True)
    outcome: str | None = None  # one of OUTCOMES once consumed
