"""The tables of the feedback on the Tutor's answers (SPEC §10): what an answer rested on
(kept for a bounded time, so its 👍/👎 can be judged server-side), one person's associations
of a question's vector with a section, and the typed gaps.

No table holds a question's text: only its vector (float32, little-endian), which the
grouping of gaps and the boosts of a person's own retrieval need.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, CheckConstraint, Column, LargeBinary
from sqlmodel import Field, SQLModel

from metnos.ground.db.models import _stamp, utcnow

# why an answer did not help (the 👎's choice); documented in feedback.py
GAP_CAUSES = ("wrong_section", "insufficient", "outdated", "not_about_metnos")
RATINGS = ("up", "down")


class TutorAnswer(SQLModel, table=True):
    """One Tutor answer a person may rate, keyed by its turn; only that person may."""

    __tablename__ = "tutor_answer"
    __table_args__ = (
        CheckConstraint(f"rating IS NULL OR rating IN {RATINGS!r}",
                        name="tutor_answer_rating_valid"),
    )

    turn_id: str = Field(primary_key=True)
    user_id: str = Field(index=True)
    session_id: str
    channel: str
    lang: str
    vector: bytes | None = Field(default=None, sa_column=Column(LargeBinary, nullable=True))
    # [[section id, lang, content hash], ...], the primary (first) one first
    sections: list[list[str]] = Field(default_factory=list,
                                      sa_column=Column(JSON, nullable=False))
    catalog_version: str
    created_at: datetime = _stamp(default_factory=utcnow)
    expires_at: datetime = _stamp(index=True)
    rating: str | None = None
    cause: str | None = None
    rated_at: datetime | None = _stamp(default=None, nullable=True)


class TutorAssociation(SQLModel, table=True):
    """A person's 👍: this question's vector found its answer in this section (as it was)."""

    __tablename__ = "tutor_association"

    id: int | None = Field(default=None, primary_key=True)
    user_id: str = Field(index=True)
    turn_id: str
    vector: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    section_id: str
    lang: str
    content_hash: str
    catalog_version: str
    created_at: datetime = _stamp(default_factory=utcnow)


class TutorGap(SQLModel, table=True):
    """A person's 👎: a typed gap, the sections involved and the question's vector only."""

    __tablename__ = "tutor_gap"
    __table_args__ = (
        CheckConstraint(f"cause IN {GAP_CAUSES!r}", name="tutor_gap_cause_valid"),
    )

    id: int | None = Field(default=None, primary_key=True)
    user_id: str = Field(index=True)
    cause: str = Field(index=True)
    sections: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    vector: bytes | None = Field(default=None, sa_column=Column(LargeBinary, nullable=True))
    lang: str
    catalog_version: str
    created_at: datetime = _stamp(default_factory=utcnow)

