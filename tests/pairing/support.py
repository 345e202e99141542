"""What the pairing tests share: an audit log in tmp_path, policy settings, `admit` under them,
a gateway client with the pairing router mounted (once app.py mounts it, the router is not
added twice)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sqlmodel import Session

from metnos.features.pairing import Admission, admit
from metnos.features.pairing import models as _pairing_models  # noqa: F401 - tables for create_tables
from metnos.ground.db.models import utcnow
from metnos.ground.settings import PolicySettings
from metnos.mechanisms.audit import AuditLog
from tests.support.home import Home, gateway_client

TTL = timedelta(hours=1)
T0 = utcnow().replace(microsecond=0)


def policy(**overrides: Any) -> PolicySettings:
    values: dict[str, Any] = {"pairing_code_ttl_s": 3600, "pairing_max_pending": 3,
                              "pairing_max_failures": 5, "pairing_lockout_s": 900}
    return PolicySettings(**{**values, **overrides})


POLICY = policy()


def admit_as(db: Session, sender: str, channel: str = "telegram", now: datetime = T0,
             audit: AuditLog | None = None) -> Admission:
    """`admit` of a message from `sender` under `POLICY` (the tests' `policy()`), on telegram
    at T0 unless told."""
    return admit(db, channel=channel, sender_id=sender, settings=POLICY, now=now, audit=audit)


@pytest.fixture
def audit(tmp_path: Path) -> Iterator[AuditLog]:
    log = AuditLog(tmp_path / "ws" / ".audit" / "audit.jsonl",
                   tmp_path / "state" / "audit.checkpoint", Ed25519PrivateKey.generate())
    yield log
    log.close()


def audit_lines(audit: AuditLog) -> list[dict[str, Any]]:
    return audit.tail(10_000)


@asynccontextmanager
async def pairing_client(home: Home, *, token: str | None = None,
                         lang: str = "en") -> AsyncIterator[httpx.AsyncClient]:
    """The real gateway (lifespan included, no Prefect) reached through httpx."""
    headers = {"Authorization": f"Bearer {token if token is not None else home.token}",
               "Accept-Language": lang}
    async with gateway_client(home, prefect=False, headers=headers) as client:
        yield client
