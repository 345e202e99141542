"""The Vaglio (SPEC §7.8, arch §11): what a `new` proposal becomes, in two fixed phases.

1. The deontic guard, binary, in code: the Laws on the proposal's `action` (its executor and
   arguments). Laws 2 and 4 through `metnos.mechanisms.policy.laws.check_laws` (a secret in the
   arguments, another user named); Law 1: an executor that changes state irreversibly — or
   one the registry does not know, which nothing shows can be undone — gets no undo record.
   A breach → `refused`, with its `law_key` and an audit line; never judged, never delivered.
2. The teleological judge (`metnos.features.proposals.judge`): alignment in [0, 1] per aim of
   TELOS.md, weighted; a model in a context of its own, or the fallback without one.

Then the bother budget: score = alignment × bother_factor ** n, n being the ad-hoc proposals
delivered in the last `bother_window_h` and then dismissed or left unanswered. A proposal of
an accepted schedule (`scheduled`) counts against `schedule_quota` instead (the schedules'
proposals delivered in the window, or queued). Under
`threshold` → `silent` with a `reason` (the register of proposals not made); else `queued`.

Before any model call, in code: inside quiet hours the round judges nothing (the guard still
refuses); a proposal the budget alone puts under the threshold (even with alignment 1) goes
silent without a judge.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import Engine
from sqlmodel import Session

from metnos.features.notify.quiet import quiet_until
from metnos.features.proposals import judge, store
from metnos.features.proposals.models import Proposal
from metnos.features.proposals.telos import Telos, read_telos
from metnos.ground.db.engine import in_session
from metnos.ground.db.models import utcnow
from metnos.ground.settings import Settings
from metnos.mechanisms.executors.registry import Registry
from metnos.mechanisms.policy.decide import Decision
from metnos.mechanisms.policy.laws import ERR_NO_UNDO_RECORD, SecretScanner, check_laws

if TYPE_CHECKING:
    from metnos.mechanisms.audit import AuditLog
    from metnos.mechanisms.llm.port import LLMPort

log = logging.getLogger(__name__)

ACTION = "proposal.vaglio"
REASON_LOW = "MSG_PROPOSAL_SILENT_LOW"  # the alignment, after the budget, is under threshold
REASON_BOTHER = "MSG_PROPOSAL_SILENT_BOTHER"  # the bother budget alone puts it under
REASON_QUOTA = "MSG_PROPOSAL_SILENT_QUOTA"  # the schedules' own quota is spent


@dataclass(frozen=True)
class Outcome:
    proposal_id: str
    status: str  # refused | silent | queued | new (left for after the quiet hours)
    law_key: str | None = None
    alignment: float | None = None
    score: float | None = None
    judge: str | None = None
    reason: str | None = None


@dataclass(frozen=True)
class Judges:
    """What the round may use: the registry and scanner of the guard, the model (or None)."""

    registry: Registry
    scanner: SecretScanner
    port: LLMPort | None
    audit: AuditLog | None


def guard(proposal: Proposal, judges: Judges) -> Decision | None:
    """Phase 1: a deny Decision when the proposal's action breaks a Law, else None."""
    action = proposal.action
    if not action:
        return None
    executor = str(action.get("executor") or "")
    args = action.get("args") or {}
    if not isinstance(args, dict):
        args = {"args": args}
    found = check_laws(executor=executor, args=args, user_id=proposal.user_id,
                       scanner=judges.scanner)
    if found is not None:
        return found
    spec = judges.registry.find(executor)
    if spec is None or (spec.manifest.changes(args) and not spec.manifest.reversible):
        return Decision("deny", ERR_NO_UNDO_RECORD, {"executor": executor or "-"})
    return None


def budget(db: Session, settings: Settings, proposal: Proposal,
           now: datetime) -> tuple[float, str | None]:
    """(the multiplier of the bother budget, the reason when the budget alone silences it)."""
    evolution = settings.evolution
    since = now - timedelta(hours=evolution.bother_window_h)
    if proposal.scheduled:
        runs = len(store.delivered_since(db, proposal.user_id, since, scheduled=True))
        runs += store.queued_count(db, proposal.user_id, scheduled=True)
        return (1.0, None) if runs < evolution.schedule_quota else (0.0, REASON_QUOTA)
    recent = store.delivered_since(db, proposal.user_id, since, scheduled=False)
    unheard = sum(1 for p in recent if p.status in ("delivered", "dismissed", "ignored"))
    factor = evolution.bother_factor ** unheard
    return factor, (REASON_BOTHER if factor < evolution.threshold else None)


async def judge_round(engine: Engine, settings: Settings, judges: Judges, *, lang: str,
                      now: datetime | None = None) -> list[Outcome]:
    """Pass every `new` proposal through the Vaglio (oldest first)."""
    now = now or utcnow()
    quiet = quiet_until(settings, now) is not None
    outcomes: list[Outcome] = []
    for proposal in await asyncio.to_thread(in_session, engine, store.of_status, "new"):
        outcome = await _one(engine, settings, judges, proposal, lang=lang, now=now,
                             quiet=quiet)
        outcomes.append(outcome)
        if outcome.status != "new":
            await _settle(engine, judges, proposal, outcome)
    return outcomes


async def _one(engine: Engine, settings: Settings, judges: Judges, proposal: Proposal, *,
               lang: str, now: datetime, quiet: bool) -> Outcome:
    law = guard(proposal, judges)
    if law is not None:
        return Outcome(proposal.id, "refused", law_key=law.key)
    if quiet:
        return Outcome(proposal.id, "new")
    factor, reason = await asyncio.to_thread(in_session, engine, budget, settings, proposal, now)
    if reason is not None:
        return Outcome(proposal.id, "silent", score=0.0 if factor == 0 else round(factor, 4),
                       reason=reason)
    telos = read_telos(settings.workspace, lang)
    text = store.text(proposal, lang)
    found = None
    if judges.port is not None:
        found = await judge.by_model(judges.port, settings, engine, telos, text=text,
                                     kind=proposal.kind, origin=proposal.origin, lang=lang,
                                     user_id=proposal.user_id)
    found = found or judge.fallback(telos, text, proposal.kind, lang)
    score = round(found.alignment * factor, 4)
    passed = score >= settings.evolution.threshold
    return Outcome(proposal.id, "queued" if passed else "silent", alignment=found.alignment,
                   score=score, judge=found.judge, reason=None if passed else REASON_LOW)


async def _settle(engine: Engine, judges: Judges, proposal: Proposal, outcome: Outcome) -> None:
    fields: dict[str, Any] = {"law_key": outcome.law_key, "alignment": outcome.alignment,
                              "score": outcome.score, "judge": outcome.judge,
                              "reason": outcome.reason}
    if not await asyncio.to_thread(in_session, engine, store.settle, proposal.id,
                                   outcome.status, fields):
        return  # another round settled it first
    if judges.audit is None:
        return
    refused = outcome.status == "refused"
    await asyncio.to_thread(
        judges.audit.append, sender="metnos", channel="metnos", action=ACTION,
        action_id=proposal.id, decision="deny" if refused else "info",
        reason=outcome.law_key or outcome.reason or "MSG_PROPOSAL_QUEUED",
        outcome=outcome.status, args={"kind": proposal.kind, "origin": proposal.origin,
                                      "alignment": outcome.alignment,
                                      "score": outcome.score, "judge": outcome.judge})


def telos_for(settings: Settings, lang: str) -> Telos:
    return read_telos(settings.workspace, lang)
