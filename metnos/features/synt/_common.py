"""What the synt's modules share: the owner, the audit line of a move, the pool's states."""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session

from metnos.features.mnestoma import moves
from metnos.features.mnestoma.models import ProtoMnest
from metnos.features.pairing import OWNER_USER_ID
from metnos.ground.settings import Settings, get_settings
from metnos.mechanisms.audit import open_audit_log

log = logging.getLogger(__name__)

OWNER = OWNER_USER_ID
CHANNEL = "synt"


def audit(settings: Settings | None, action: str, *, decision: str = "info",
          **fields: Any) -> int:
    """One audit line of the synt (every move and every refusal leaves one, SPEC §6)."""
    log_ = open_audit_log(settings or get_settings())
    try:
        record = log_.append(sender=OWNER, channel=CHANNEL, action=action, decision=decision,
                             **fields)
        return int(record.seq)
    finally:
        log_.close()


def inactive(engine: Engine) -> set[str]:
    """Executors out of the active pool (quarantined or archived by the ager's moves)."""
    return {name for name, state in moves.states(engine).items() if state != "active"}


def set_status(db: Session, proto_id: str, status: str) -> ProtoMnest | None:
    """Move a proto-mnest to `status`; returns the row as it was before (None: no such row)."""
    row = db.get(ProtoMnest, proto_id)
    if row is None:
        return None
    before = ProtoMnest.model_validate(row.model_dump())
    row.status = status
    db.add(row)
    return before
