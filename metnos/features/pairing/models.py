"""Pairing tables: requests (a code waiting for the owner), paired senders, approval attempts.

They live in Metnos's database only, never in a file: no executor can reach the database, so
no executor can pair anyone (the OpenClaw skill that wrote the allow-list file is the attack
this prevents). A code is never stored in clear, only its SHA-256 digest.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import CheckConstraint, Index, UniqueConstraint, text
from sqlmodel import Field, SQLModel

from metnos.ground.db.models import _stamp, new_id, utcnow

REQUEST_STATUSES = ("pending", "approved", "expired")
ROLES = ("owner", "member")
ATTEMPT_OUTCOMES = ("ok", "unknown", "expired", "locked")


class PairingRequest(SQLModel, table=True):
    """An unknown sender's request: one code, sent once, valid until `expires_at`."""

    __tablename__ = "pairing_request"
    __table_args__ = (
        CheckConstraint(f"status IN {REQUEST_STATUSES!r}", name="pairing_request_status_valid"),
        UniqueConstraint("code_digest", name="pairing_request_code_unique"),
        # one open request per sender and channel, even under concurrent messages
        Index("pairing_request_one_pending", "channel", "sender_id", unique=True,
              postgresql_where=text("status = 'pending'")),
    )

    id: str = Field(default_factory=new_id, primary_key=True)
    channel: str = Field(index=True)
    sender_id: str
    code_digest: str
    status: str = "pending"
    created_at: datetime = _stamp(default_factory=utcnow)
    expires_at: datetime = _stamp()
    resolved_at: datetime | None = _stamp(default=None, nullable=True)
    # who dropped it before its time (status `expired`): that sender gets no new code for a while
    dropped_by: str | None = None


class PairedSender(SQLModel, table=True):
    """A sender the owner approved; `revoked_at` set = no longer paired."""

    __tablename__ = "paired_sender"
    __table_args__ = (
        CheckConstraint(f"role IN {ROLES!r}", name="paired_sender_role_valid"),
        UniqueConstraint("channel", "sender_id", name="paired_sender_unique"),
    )

    id: str = Field(default_factory=new_id, primary_key=True)
    channel: str
    sender_id: str
    user_id: str = Field(index=True)
    role: str
    approved_by: str
    approved_at: datetime = _stamp(default_factory=utcnow)
    revoked_at: datetime | None = _stamp(default=None, nullable=True)


class PairingAttempt(SQLModel, table=True):
    """One call of `approve`: the lock-out counts the wrong ones in its window."""

    __tablename__ = "pairing_attempt"
    __table_args__ = (
        CheckConstraint(f"outcome IN {ATTEMPT_OUTCOMES!r}", name="pairing_attempt_outcome_valid"),
    )

    id: str = Field(default_factory=new_id, primary_key=True)
    approver: str
    outcome: str
    at: datetime = _stamp(default_factory=utcnow, index=True)


class Device(SQLModel, table=True):
    """A browser on a phone or laptop that reaches the gateway over the overlay (issue 30).

    Whether it is admitted, and whose it is, is its pairing: a `PairingRequest` while it
    waits for the owner, then a `PairedSender` with channel `device` and `sender_id` = this id
    (revoked like any pairing). `address` is where it asked from: its credential works from
    there only.
    """

    __tablename__ = "device"

    id: str = Field(default_factory=new_id, primary_key=True)
    label: str
    address: str
    user_agent: str = ""
    created_at: datetime = _stamp(default_factory=utcnow)
    last_seen_at: datetime | None = _stamp(default=None, nullable=True)
