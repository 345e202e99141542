"""A proposal Metnos makes on its own (SPEC §7.7–7.8, arch §7 "la variante proattiva"):
from a recurring proto-mnest, a regularity in the traces, the ager or a nightly introvert step.

Producers only `submit` a draft (`metnos.features.proposals.store`); the Vaglio then decides, in
code, whether it is refused by a Law, kept silent (the register of proposals not made) or delivered
to the owner's preferred channel, where it is accepted, dismissed or left to decay.
Its text is an i18n key with variables, so it is read in the owner's language.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, CheckConstraint, Column, Index
from sqlmodel import Field, SQLModel

from metnos.ground.db.models import _stamp, new_id, utcnow

PROPOSAL_STATUSES = (
    "new",  # submitted, not yet through the Vaglio
    "refused",  # the deontic guard: it would break a Law (never shown to anyone as a proposal)
    "silent",  # under the threshold: the register of proposals not made
    "queued",  # passed, waiting for a channel or for the end of quiet hours
    "delivered",  # shown to the owner, no answer yet
    "accepted",
    "dismissed",
    "ignored",  # delivered and left unanswered past its window: it decays
)
ORIGINS = ("proto_mnest", "composition", "trace", "ager", "introvert", "schedule")


class Proposal(SQLModel, table=True):
    __tablename__ = "proposal"
    __table_args__ = (
        CheckConstraint(f"status IN {PROPOSAL_STATUSES!r}", name="proposal_status_valid"),
        CheckConstraint(f"origin IN {ORIGINS!r}", name="proposal_origin_valid"),
        Index("proposal_fingerprint", "fingerprint"),
        Index("proposal_status", "status"),
    )

    id: str = Field(default_factory=new_id, primary_key=True)
    kind: str  # compose | generate | promote | archive | fuse | generalise | specialise ...
    origin: str
    fingerprint: str  # kind + target + payload digest: the same proposal is never made twice
    user_id: str  # whom it is for (the owner)
    title_key: str  # i18n key of its one-line text
    vars: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    payload: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    # the action it would take, for the deontic guard: an executor and its arguments, if any
    action: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    status: str = "new"
    law_key: str | None = None  # the Law it would break (status "refused")
    alignment: float | None = None  # against TELOS.md, in [0, 1]
    score: float | None = None  # alignment after the bother budget
    judge: str | None = None  # "model" | "fallback"
    reason: str | None = None  # why it stayed silent, for the register
    weight: float = 1.0  # decays each time it is ignored
    scheduled: bool = False  # a run the owner accepted already: its own quota
    outbox_id: str | None = Field(default=None, index=True)  # the message that delivered it
    created_at: datetime = _stamp(default_factory=utcnow)
    delivered_at: datetime | None = _stamp(default=None, nullable=True)
    decided_at: datetime | None = _stamp(default=None, nullable=True)
