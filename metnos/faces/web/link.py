"""The one-time login link of `metnos login` (and of `make run`).

The token goes straight into the database, not through the gateway: the link works as soon as
`metnos serve` is up, and making one needs no credentials but access to the instance's files
(the database password in `secrets/`), i.e. the owner's account. With the database down (the
embedded one runs only under `metnos serve`) it fails with ERR_WEB_LOGIN_DB_UNAVAILABLE.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy.exc import SQLAlchemyError

from metnos.faces.web import service as web
from metnos.ground import keys
from metnos.ground.db.engine import database_url, make_engine
from metnos.ground.db.engine import session as db_session
from metnos.ground.errors import DatabaseError, MetnosError
from metnos.ground.settings import Settings


@dataclass(frozen=True)
class LoginLink:
    url: str = field(repr=False)  # it holds the token
    expires_at: datetime
    ttl_s: int


def login_url(settings: Settings, token: str) -> str:
    host = settings.gateway.host
    host = f"[{host}]" if ":" in host else host
    return f"http://{host}:{settings.gateway.port}/login?token={token}"


def create_login_link(settings: Settings) -> LoginLink:
    """A new one-time login link for the owner; MetnosError with the reason otherwise."""
    if not keys.is_initialised(settings):
        raise MetnosError("ERR_HOME_NOT_INITIALISED", home=str(settings.home))
    ttl_s = settings.web.login_token_ttl_s
    try:
        engine = make_engine(database_url(settings))
    except (OSError, SQLAlchemyError) as exc:  # e.g. the password file cannot be read
        raise DatabaseError("ERR_WEB_LOGIN_DB_UNAVAILABLE", detail=_short(exc)) from exc
    try:
        with db_session(engine) as db:
            issued = web.issue_login_token(db, ttl_s=ttl_s)
    except SQLAlchemyError as exc:
        raise DatabaseError("ERR_WEB_LOGIN_DB_UNAVAILABLE", detail=_short(exc)) from exc
    finally:
        engine.dispose()
    return LoginLink(url=login_url(settings, issued.token), expires_at=issued.expires_at,
                     ttl_s=ttl_s)


def _short(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:200]
