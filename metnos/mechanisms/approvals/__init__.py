"""Approvals (SPEC §4): a step that needs the owner's yes waits for it, bound to exactly one action.

`models` holds the table, `digest` the fingerprint of an action (executor, arguments, code,
the files it touches), `service` the state machine: pending → approved | denied | expired;
approved → used | refused (the action changed after the yes). Each transition is one
conditional UPDATE, so an approval is single-use even under concurrent callers.
"""

from metnos.mechanisms.approvals.digest import action_digest, fingerprint
from metnos.mechanisms.approvals.models import APPROVAL_STATUSES, Approval
from metnos.mechanisms.approvals.service import (
    ApprovalError,
    NewApproval,
    approvals_of_turn,
    approver_of,
    consume,
    create,
    decide,
    expire,
    expire_interrupted,
    get,
    list_approvals,
    public,
)

__all__ = [
    "APPROVAL_STATUSES",
    "Approval",
    "ApprovalError",
    "NewApproval",
    "action_digest",
    "approver_of",
    "approvals_of_turn",
    "consume",
    "create",
    "decide",
    "expire",
    "expire_interrupted",
    "fingerprint",
    "get",
    "list_approvals",
    "public",
]
