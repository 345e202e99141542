"""Web login tables: one-time login tokens, web sessions, failed login attempts.

Neither a login token nor a session id is ever stored in clear: only its SHA-256 digest, so a
copy of the database (or a look at it by another local process) gives no way in.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import UniqueConstraint
from sqlmodel import Field, SQLModel

from metnos.ground.db.models import _stamp, new_id, utcnow


class LoginToken(SQLModel, table=True):
    """A one-time login link printed by `metnos login`: used once (`used_at`), before
    `expires_at`."""

    __tablename__ = "web_login_token"
    __table_args__ = (UniqueConstraint("token_digest", name="web_login_token_digest_unique"),)

    id: str = Field(default_factory=new_id, primary_key=True)
    token_digest: str
    user_id: str
    created_at: datetime = _stamp(default_factory=utcnow)
    expires_at: datetime = _stamp()
    used_at: datetime | None = _stamp(default=None, nullable=True)


class WebSession(SQLModel, table=True):
    """A browser's session, made by a login link; valid until `expires_at` unless revoked."""

    __tablename__ = "web_session"
    __table_args__ = (UniqueConstraint("session_digest", name="web_session_digest_unique"),)

    id: str = Field(default_factory=new_id, primary_key=True)
    session_digest: str
    user_id: str
    login_token_id: str
    created_at: datetime = _stamp(default_factory=utcnow)
    expires_at: datetime = _stamp()
    revoked_at: datetime | None = _stamp(default=None, nullable=True)


class LoginFailure(SQLModel, table=True):
    """One failed login attempt of `client` (its address): the rate limit counts them."""

    __tablename__ = "web_login_failure"

    id: str = Field(default_factory=new_id, primary_key=True)
    client: str = Field(index=True)
    at: datetime = _stamp(default_factory=utcnow, index=True)
