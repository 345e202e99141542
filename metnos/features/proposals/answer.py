"""The owner's answer to a proposal (SPEC §7.8), the one path of every surface that answers
(`POST /api/proposals/{id}/accept|dismiss`, Telegram's buttons): once per proposal, an
accepted one runs its kind's handler, one audit line (`action="proposal.answer"`) either way.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy.engine import Engine

from metnos.features.proposals import store
from metnos.features.proposals.models import Proposal
from metnos.features.proposals.store import ProposalError
from metnos.mechanisms.audit import AuditLog

ACTION = "proposal.answer"
RELOADS = frozenset({"candidate"})  # kinds whose acceptance signs an executor


def answer_proposal(engine: Engine, audit: AuditLog, proposal_id: str, answer: str, *,
                    user_id: str, sender: str, channel: str,
                    reload_registry: Callable[[], object]) -> Proposal:
    """`user_id`'s answer (blocking). An accepted proposal that signed an executor calls
    `reload_registry`, so the next turn sees it. Raises ProposalError (audited)."""
    try:
        row = store.decide(engine, proposal_id[:64], answer, user_id=user_id)
    except ProposalError as exc:
        refused = exc.key == "ERR_PROPOSAL_NOT_YOURS"
        audit.append(sender=sender, channel=channel, action=ACTION, action_id=proposal_id[:64],
                     decision="deny" if refused else "error", reason=exc.key,
                     outcome="refused" if refused else "failed")
        raise
    audit.append(sender=sender, channel=channel, action=ACTION, action_id=row.id,
                 decision="allow", reason=f"MSG_PROPOSAL_{row.status.upper()}",
                 outcome=row.status)
    if row.status == "accepted" and row.kind in RELOADS:  # the pool changed
        reload_registry()
    return row
