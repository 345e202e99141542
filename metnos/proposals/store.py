"""Submitting a proposal, and what acceptance does.

`submit` is all a producer calls (the synt, the ager, the traces, the introvert steps): it
stores a `new` row, unless the same proposal (its fingerprint) was ever made before, which
is never repeated identically (arch §7). The Vaglio (`metnos.proposals.vaglio`) takes `new`
rows from there. `on_accept` registers what accepting a kind of proposal does; the owner's
answer reaches it through `decide`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import col, select

from metnos.db.engine import session as db_session
from metnos.proposals.models import ORIGINS, Proposal

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
        body = json.dumps([self.kind, self.target, self.payload, self.action],
                          sort_keys=True, ensure_ascii=False, default=str)
        return hashlib.sha256(body.encode()).hexdigest()[:32]


def submit(engine: Engine, draft: Draft) -> Proposal | None:
    """Store `draft` as a `new` proposal; None when the same one was made before."""
    if draft.origin not in ORIGINS:
        raise ValueError(f"unknown proposal origin {draft.origin!r}")
    fingerprint = draft.fingerprint()
    with db_session(engine) as db:
        seen = db.exec(select(Proposal.id).where(
            col(Proposal.fingerprint) == fingerprint).limit(1)).first()
        if seen is not None:
            return None
        row = Proposal(kind=draft.kind, origin=draft.origin, fingerprint=fingerprint,
                       user_id=draft.user_id, title_key=draft.title_key, vars=dict(draft.vars),
                       payload=dict(draft.payload), action=draft.action,
                       scheduled=draft.scheduled)
        db.add(row)
        db.commit()
        db.refresh(row)
        return row


def on_accept(kind: str, handler: Handler) -> None:
    """What accepting a proposal of `kind` does (one handler a kind; the last one wins)."""
    _HANDLERS[kind] = handler


def handler_for(kind: str) -> Handler | None:
    return _HANDLERS.get(kind)
