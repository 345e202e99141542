"""Submitting a proposal, and what acceptance does.

`submit` is all a producer calls (the synt, the ager, the traces, the introvert steps): it
stores a `new` row, unless the same proposal (its fingerprint) was ever made before, which
is never repeated identically (arch §7). The Vaglio (`metnos.features.proposals.vaglio`) takes `new`
rows from there. `on_accept` registers what accepting a kind of proposal does; the owner's
answer reaches it through `decide`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import update
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from metnos.features.proposals.models import ORIGINS, Proposal
from metnos.ground import i18n
from metnos.ground.db.engine import in_session
from metnos.ground.db.engine import session as db_session
from metnos.ground.db.models import utcnow
from metnos.ground.errors import MetnosError
from metnos.ground.settings import Settings

BOOKKEEPING = frozenset({"batch"})  # payload keys that say when, not what
Handler = Callable[[Engine, Proposal], None]  # runs when the owner accepts a proposal
_HANDLERS: dict[str, Handler] = {}


@dataclass(frozen=True)
class Draft:
    """What a producer proposes: its kind, origin, one-line text (an i18n key and variables),
    what accepting it does (`payload`, read by the kind's handler) and the executor call it
    would make, if any (`action`: {"executor": ..., "args": {...}}), for the deontic guard."""

    kind: str
    origin: str
    user_id: str
    title_key: str
    target: str  # what it is about (an executor, a pair "A→B", a capability)
    vars: dict[str, Any] = field(default_factory=dict)
    payload: dict[str, Any] = field(default_factory=dict)
    action: dict[str, Any] | None = None
    scheduled: bool = False

    def fingerprint(self) -> str:
        """What makes two proposals the same: not which night's batch carried them."""
        same = {k: v for k, v in self.payload.items() if k not in BOOKKEEPING}
        body = json.dumps([self.kind, self.target, same, self.action],
                          sort_keys=True, ensure_ascii=False, default=str)
        return hashlib.sha256(body.encode()).hexdigest()[:32]


def submit(db: Session, draft: Draft) -> Proposal | None:
    """Store `draft` as a `new` proposal; None when the same one was made before."""
    if draft.origin not in ORIGINS:
        raise ValueError(f"unknown proposal origin {draft.origin!r}")
    fingerprint = draft.fingerprint()
    seen = db.exec(select(Proposal.id).where(
        col(Proposal.fingerprint) == fingerprint).limit(1)).first()
    if seen is not None:
        return None
    row = Proposal(kind=draft.kind, origin=draft.origin, fingerprint=fingerprint,
                   user_id=draft.user_id, title_key=draft.title_key, vars=dict(draft.vars),
                   payload=dict(draft.payload), action=draft.action,
                   scheduled=draft.scheduled)
    db.add(row)
    db.flush()
    db.refresh(row)
    return row


def on_accept(kind: str, handler: Handler) -> None:
    """What accepting a proposal of `kind` does (one handler a kind; the last one wins)."""
    _HANDLERS[kind] = handler


def handler_for(kind: str) -> Handler | None:
    return _HANDLERS.get(kind)


class ProposalError(MetnosError, LookupError):
    key = "ERR_PROPOSAL_NOT_FOUND"


ANSWERS = {"accept": "accepted", "dismiss": "dismissed"}
OPEN = ("delivered",)  # what the owner can still answer


def text(proposal: Proposal, lang: str | None) -> str:
    """The proposal's one line in `lang`."""
    return i18n.get(proposal.title_key, lang, **proposal.vars)


def get(db: Session, proposal_id: str) -> Proposal | None:
    return db.get(Proposal, proposal_id)


def listing(db: Session, *, user_id: str, statuses: tuple[str, ...],
            outbox_id: str | None = None, limit: int = 100) -> list[Proposal]:
    """The user's proposals in `statuses`, newest first (those of one message, when given)."""
    query = select(Proposal).where(Proposal.user_id == user_id,
                                   col(Proposal.status).in_(statuses))
    if outbox_id is not None:
        query = query.where(Proposal.outbox_id == outbox_id)
    return list(db.exec(query.order_by(col(Proposal.created_at).desc()).limit(limit)))


def of_status(db: Session, status: str, limit: int = 50) -> list[Proposal]:
    """Proposals in `status`, oldest first."""
    return list(db.exec(select(Proposal).where(Proposal.status == status)
                        .order_by(col(Proposal.created_at)).limit(limit)))


def settle(db: Session, proposal_id: str, status: str, fields: dict[str, Any]) -> bool:
    """The Vaglio's verdict on a `new` proposal; False when it was settled already."""
    done = db.execute(update(Proposal).where(
        col(Proposal.id) == proposal_id, col(Proposal.status) == "new")
        .values(status=status, decided_at=utcnow() if status != "queued" else None,
                **fields))
    return bool(done.rowcount)  # type: ignore[attr-defined]


def mark_delivered(db: Session, proposal_ids: list[str], outbox_id: str,
                   now: datetime | None = None) -> list[str]:
    """Queued proposals now placed in the outbox row `outbox_id`; the ids that were queued."""
    taken = db.execute(update(Proposal).where(
        col(Proposal.id).in_(proposal_ids), col(Proposal.status) == "queued")
        .values(status="delivered", delivered_at=now or utcnow(), outbox_id=outbox_id)
        .returning(col(Proposal.id)))
    return [str(row[0]) for row in taken]


def delivered_since(db: Session, user_id: str, since: datetime, *,
                    scheduled: bool) -> list[Proposal]:
    """The user's proposals delivered since `since` (scheduled runs or ad-hoc ones)."""
    return list(db.exec(select(Proposal).where(
        Proposal.user_id == user_id, col(Proposal.delivered_at).is_not(None),
        col(Proposal.delivered_at) >= since, Proposal.scheduled == scheduled)))


def queued_count(db: Session, user_id: str, *, scheduled: bool) -> int:
    """The user's proposals that passed the Vaglio and wait to be delivered."""
    return len(db.exec(select(Proposal.id).where(
        Proposal.user_id == user_id, Proposal.status == "queued",
        Proposal.scheduled == scheduled)).all())


def decide(engine: Engine, proposal_id: str, answer: str, *, user_id: str) -> Proposal:
    """The owner's answer: `accept` runs the kind's handler once, then the proposal is
    accepted; `dismiss` dismisses it. ProposalError when it is not the user's, not open, or
    (accept) its kind has no handler or the handler failed: then it stays delivered."""
    status = ANSWERS[answer]
    found = in_session(engine, get, proposal_id)
    if found is None:
        raise ProposalError("ERR_PROPOSAL_NOT_FOUND", id=proposal_id[:64])
    if found.user_id != user_id:
        raise ProposalError("ERR_PROPOSAL_NOT_YOURS", id=proposal_id)
    handler = handler_for(found.kind) if answer == "accept" else None
    if answer == "accept" and handler is None:
        raise ProposalError("ERR_PROPOSAL_KIND_UNKNOWN", id=proposal_id, kind=found.kind)
    with db_session(engine) as db:  # claimed first: two taps run the handler once
        claimed = db.execute(update(Proposal).where(
            col(Proposal.id) == proposal_id, col(Proposal.status).in_(OPEN))
            .values(status=status, decided_at=utcnow())).rowcount  # type: ignore[attr-defined]
    if not claimed:
        raise ProposalError("ERR_PROPOSAL_ALREADY_DECIDED", id=proposal_id,
                            status=found.status)
    if handler is not None:
        try:
            handler(engine, found)
        except Exception as exc:  # a producer's handler: the proposal stays open
            with db_session(engine) as db:
                db.execute(update(Proposal).where(col(Proposal.id) == proposal_id)
                           .values(status="delivered", decided_at=None))
            raise ProposalError("ERR_PROPOSAL_ACCEPT_FAILED", id=proposal_id,
                                detail=str(exc)[:200]) from exc
    return in_session(engine, get, proposal_id) or found


def expire(db: Session, settings: Settings, now: datetime | None = None) -> list[Proposal]:
    """Delivered proposals unanswered for `ignore_after_h`: ignored, their weight decayed."""
    evolution = settings.evolution
    before = (now or utcnow()) - timedelta(hours=evolution.ignore_after_h)
    rows = db.execute(update(Proposal).where(
        col(Proposal.status) == "delivered", col(Proposal.delivered_at) < before)
        .values(status="ignored", decided_at=now or utcnow(),
                weight=col(Proposal.weight) * evolution.bother_factor)
        .returning(col(Proposal.id)))
    ids = [str(row[0]) for row in rows]
    return list(db.exec(select(Proposal).where(col(Proposal.id).in_(ids))))
