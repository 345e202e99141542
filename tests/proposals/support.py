"""What the proposal tests share: a real service on a real home, drafts, the Vaglio's round."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlmodel import Session, select

from metnos.faces.gateway.outbox_delivery import Delivery
from metnos.features.proposals import store
from metnos.features.proposals.models import Proposal
from metnos.features.proposals.store import Draft
from metnos.features.reminders.outbox import Outbox
from metnos.ground.db.engine import in_session
from metnos.turns.service import TurnService

OWNER = "owner"
# yesterday (UTC), not a fixed date: a proposal delivered at NOON is still unanswered, not yet
# ignored (`proposal_ignore_after_h`, 48 h) whenever the suite runs; a fixed 1 December made
# the Telegram buttons test fail from 4 December on
_YESTERDAY = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0) - \
    timedelta(days=1)
NOON = _YESTERDAY.replace(hour=12)  # outside the default quiet hours
NIGHT = _YESTERDAY.replace(hour=22, minute=30)  # inside 21:00-07:00 (zone UTC)
JUDGE_HEAD = {"en": "You are the judge of the Vaglio", "it": "Sei il giudice del Vaglio"}


def draft(what: str, *, kind: str = "archive", origin: str = "trace",
          action: dict[str, Any] | None = None, batch: str | None = None,
          scheduled: bool = False, user_id: str = OWNER) -> Draft:
    payload: dict[str, Any] = {"what": what}
    if batch is not None:
        payload["batch"] = batch
    return Draft(kind=kind, origin=origin, user_id=user_id, title_key="PROPOSAL_ROUTINE",
                 target=what, vars={"what": what}, payload=payload, action=action,
                 scheduled=scheduled)


def submit(service: TurnService, *drafts: Draft) -> list[Proposal]:
    rows = [in_session(service.engine, store.submit, d) for d in drafts]
    assert all(r is not None for r in rows)
    return [r for r in rows if r is not None]


async def round_at(service: TurnService, now: datetime) -> None:
    """One round of the gateway's delivery loop for proposals, at `now`."""
    await Delivery(service, None, None).propose(now=now)


def fresh(service: TurnService, proposal: Proposal) -> Proposal:
    found = in_session(service.engine, store.get, proposal.id)
    assert found is not None
    return found


def proposal_rows(service: TurnService) -> list[Outbox]:
    with Session(service.engine) as db:
        return list(db.exec(select(Outbox).where(Outbox.kind == "proposal")))


def audit_of(service: TurnService, proposal_id: str) -> list[dict[str, Any]]:
    return [line for line in service.audit.tail(500) if line.get("action_id") == proposal_id]


def judge_requests(requests: list[dict[str, Any]], lang: str = "en") -> list[dict[str, Any]]:
    return [r for r in requests
            if any(JUDGE_HEAD[lang] in str(m.get("content")) for m in r.get("messages", []))]
