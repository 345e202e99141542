"""One-time login links and web sessions (SPEC §3), on Metnos's database.

- `issue_login_token`: a random token (256 bits) valid `login_token_ttl_s`, for `metnos login`.
- `redeem`: trades a token for a web session, once: the token is consumed by one conditional
  UPDATE (`used_at IS NULL AND expires_at > now`), so two browsers racing on one link get one
  session between them. A wrong, used or expired token is one failure, whatever the case; a
  client address with `login_max_failures` failures within `login_window_s` gets `locked`
  (with the seconds until the window frees up) instead of `invalid`, and no more failure rows.
  A live one-time link is never locked out: on loopback every client is 127.0.0.1, so any
  local process could otherwise lock the owner's browser out by failing on purpose. Guessing
  a link is hopeless anyway (256 bits); the lock-out keeps the noise and the table bounded.
- `session_owner` / `end_session`: look up and revoke a session by the cookie's value.

Failures are counted in the database, not in memory: the count survives a gateway restart, a
PostgreSQL advisory lock makes count-then-decide atomic, and old rows are pruned on the way.
Every login decision (ok, invalid, locked) and every logout leaves one audit line
(`action="web.login"` / `"web.logout"`); a token, a session id or their digests never reach
the audit log, a log line or a response other than the cookie itself.
"""

from __future__ import annotations

import hashlib
import math
import re
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal, TypeGuard

from sqlalchemy import delete, func
from sqlmodel import Session, col, select, update

from metnos.faces.web.models import LoginFailure, LoginToken, WebSession
from metnos.ground.db.models import utcnow
from metnos.ground.settings.channels import WebSettings
from metnos.mechanisms.audit import AuditLog

OWNER = "owner"  # the user of the owner token: the web login is the owner's
CHANNEL = "web"
LOGIN_ACTION, LOGOUT_ACTION = "web.login", "web.logout"
_SECRET = re.compile(r"[A-Za-z0-9_-]{32,128}")

LoginStatus = Literal["ok", "invalid", "locked"]


@dataclass(frozen=True)
class IssuedToken:
    token: str = field(repr=False)
    expires_at: datetime


@dataclass(frozen=True)
class LoginResult:
    """`ok`: set `session_secret` as the cookie (valid until `expires_at`). `invalid`: the
    token was wrong, used or expired (never said which). `locked`: retry in `retry_after_s`."""

    status: LoginStatus
    session_secret: str | None = field(default=None, repr=False)
    session_id: str | None = None
    expires_at: datetime | None = None
    retry_after_s: int = 0


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def well_formed(secret: str | None) -> TypeGuard[str]:
    """Only what `secrets.token_urlsafe` makes can be a token or a session id."""
    return secret is not None and _SECRET.fullmatch(secret) is not None


def issue_login_token(db: Session, *, ttl_s: int, user_id: str = OWNER,
                      now: datetime | None = None) -> IssuedToken:
    """A new one-time login token (commits); only its digest is stored. Dead tokens and
    sessions (expired, used up, revoked) are deleted on the way: the audit log keeps the story."""
    now = now or utcnow()
    db.exec(delete(LoginToken).where(col(LoginToken.expires_at) <= now))
    db.exec(delete(WebSession).where(
        (col(WebSession.expires_at) <= now) | col(WebSession.revoked_at).is_not(None)))
    token = secrets.token_urlsafe(32)
    row = LoginToken(token_digest=digest(token), user_id=user_id, created_at=now,
                     expires_at=now + timedelta(seconds=ttl_s))
    db.add(row)
    db.commit()
    return IssuedToken(token=token, expires_at=row.expires_at)


def redeem(db: Session, token: str | None, *, client: str, settings: WebSettings,
           now: datetime | None = None, audit: AuditLog | None = None) -> LoginResult:
    """Trade a login token for a web session (commits; see the module's text)."""
    now = now or utcnow()
    _lock(db, "web:login")
    consumed = _consume(db, token, now)  # a live link works, whoever failed before it
    if consumed is None:
        retry = _retry_after(db, client, now, settings)
        if retry is not None:
            db.commit()
            _audit(audit, sender=client, action=LOGIN_ACTION, decision="deny",
                   reason="ERR_WEB_LOGIN_LOCKED", outcome="locked")
            return LoginResult("locked", retry_after_s=retry)
        db.add(LoginFailure(client=client, at=now))
        db.exec(delete(LoginFailure).where(
            col(LoginFailure.at) < now - timedelta(seconds=settings.login_window_s)))
        db.commit()
        _audit(audit, sender=client, action=LOGIN_ACTION, decision="deny",
               reason="ERR_WEB_LOGIN_INVALID", outcome="invalid")
        return LoginResult("invalid")
    token_id, user_id = consumed
    secret = secrets.token_urlsafe(32)
    session = WebSession(session_digest=digest(secret), user_id=user_id, login_token_id=token_id,
                         created_at=now, expires_at=now + timedelta(seconds=settings.session_ttl_s))
    db.add(session)
    db.exec(delete(LoginFailure).where(col(LoginFailure.client) == client))
    db.commit()
    _audit(audit, sender=user_id, action=LOGIN_ACTION, decision="allow", reason="ok",
           outcome="session_opened", action_id=session.id)
    return LoginResult("ok", session_secret=secret, session_id=session.id,
                       expires_at=session.expires_at)


def session_owner(db: Session, secret: str | None,
                  now: datetime | None = None) -> WebSession | None:
    """The live session whose cookie value is `secret`, or None (unknown, revoked, expired)."""
    if not well_formed(secret):
        return None
    query = select(WebSession).where(
        WebSession.session_digest == digest(secret),
        col(WebSession.revoked_at).is_(None),
        WebSession.expires_at > (now or utcnow()))
    return db.exec(query).first()


def end_session(db: Session, secret: str | None, *, now: datetime | None = None,
                audit: AuditLog | None = None) -> bool:
    """Revoke the live session of `secret` (commits); False when there was none."""
    if not well_formed(secret):
        return False
    stmt = (update(WebSession)
            .where(col(WebSession.session_digest) == digest(secret),
                   col(WebSession.revoked_at).is_(None))
            .values(revoked_at=now or utcnow())
            .returning(col(WebSession.id), col(WebSession.user_id)))
    row = db.exec(stmt).first()
    db.commit()
    if row is None:
        return False
    _audit(audit, sender=row[1], action=LOGOUT_ACTION, decision="info", reason="ok",
           outcome="session_closed", action_id=row[0])
    return True


# -- private --------------------------------------------------------------------------------
def _consume(db: Session, token: str | None, now: datetime) -> tuple[str, str] | None:
    """Mark the token used if it is live; (token id, user id), or None. One statement: the
    database decides which of two concurrent redeemers wins."""
    if not well_formed(token):
        return None
    stmt = (update(LoginToken)
            .where(col(LoginToken.token_digest) == digest(token),
                   col(LoginToken.used_at).is_(None), col(LoginToken.expires_at) > now)
            .values(used_at=now)
            .returning(col(LoginToken.id), col(LoginToken.user_id)))
    row = db.exec(stmt).first()
    return None if row is None else (str(row[0]), str(row[1]))


def _retry_after(db: Session, client: str, now: datetime, settings: WebSettings) -> int | None:
    """Seconds until `client` may try again, or None: it is below the failure limit."""
    window = timedelta(seconds=settings.login_window_s)
    query = (select(LoginFailure.at)
             .where(LoginFailure.client == client, LoginFailure.at > now - window,
                    LoginFailure.at <= now)
             .order_by(col(LoginFailure.at).desc())
             .limit(settings.login_max_failures))
    failures = list(db.exec(query))
    if len(failures) < settings.login_max_failures:
        return None
    return max(1, math.ceil((failures[-1] + window - now).total_seconds()))


def _lock(db: Session, key: str) -> None:
    """A PostgreSQL advisory lock on `key` until the transaction ends."""
    if db.get_bind().dialect.name == "postgresql":
        db.exec(select(func.pg_advisory_xact_lock(func.hashtext(key))))


def _audit(audit: AuditLog | None, **fields: Any) -> None:
    if audit is not None:
        audit.append(channel=CHANNEL, **fields)
