"""The attachment table: a photo or document someone sent, kept outside the workspace.

The bytes live in `METNOS_HOME/attachments/<id>` (0600); the row says whose it is, what it is
(decided from its bytes) and, once a turn has filed it, where it went in the workspace.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import CheckConstraint
from sqlmodel import Field, SQLModel

from metnos.features.attachments.kinds import KINDS
from metnos.ground.db.models import _stamp, new_id, utcnow


class Attachment(SQLModel, table=True):
    """One file sent by `user_id` on `channel`; `turn_id` and `filed_path` once filed."""

    __tablename__ = "attachment"
    __table_args__ = (CheckConstraint(f"kind IN {KINDS!r}", name="attachment_kind_valid"),)

    id: str = Field(default_factory=new_id, primary_key=True)
    user_id: str = Field(index=True)
    channel: str
    name: str  # the name it came with, cleaned (outside text: data, never markup)
    kind: str
    size: int
    sha256: str
    width: int | None = None
    height: int | None = None
    created_at: datetime = _stamp(default_factory=utcnow)
    turn_id: str | None = None
    filed_path: str | None = None  # workspace-relative
    filed_at: datetime | None = _stamp(default=None, nullable=True)
